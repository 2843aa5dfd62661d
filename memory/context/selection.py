"""Which of the memories found go into the context, per category, best first.

Scores of real project memory do not separate relevant from unrelated at one absolute value:
on ``bench.context_recall`` a memory a task needs may score 0.09 and an unrelated one 0.17
for the same query. So the cut is relative, and helped by what the project's memory says:

- **fusion**: a memory's relevance is its subject score plus ``known`` times its score for
  what the project links to the subject, raised by ``concern`` times the share of the task
  type's concern terms it holds (``memory.context.expansion``): a raise, not a sum, so a
  memory that shares only a generic word with the task is not lifted by the concern;
- **conventions**: a project-wide pattern or gotcha (or one of the task's specs) holding at
  least ``convention`` of the concern's terms is how such work is done here ("test data comes
  from factory_boy factories" for a testing task): kept whatever its subject score; so is,
  for a testing task, a project-wide gotcha holding ``trap`` of them: a trap of the test
  set-up ("freezegun breaks asyncio timeouts in tests") catches a test of any area;
- **coherence**: a spec (Auto-Claude's unit of work) is one area of the project: the specs of
  the ``spec_top`` best candidates are the task's, a memory of another spec is left out, and
  those of the task's specs weigh by their share (``cohere``);
- **floor**: a hit scoring ``floor`` or less counts as no match (``above``); a memory is kept
  when its relevance reaches ``relative`` of the best of its kind in its category and a share
  of the best in any category that depends on where it comes from (``floor``): one of the
  task's specs holding at least ``spec_share`` of the best candidates' relevance (the
  project's own memories among them count: one weak memory of a spec beside them does not
  make its whole spec the task's), the best of its kind when both the subject
  and the links found it (one shared word is not agreement, nor are the subject's short
  generic words alone: ``slight``), or the project's own memories of every area, where the
  distractors are;
- **far**: a memory outside the task's specs that names files, modules or components, none
  of them named by the task's best candidates, is about another part of the code: it needs
  ``far`` of the best (``Entities``);
- **once**: a memory appears once, by id and by content (the same pattern recorded in two
  specs), in the category with the larger allocation;
- **diversity**: at most ``per_file`` memories about one file.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache

from backends.model import Episode, Hit, natural_key
from backends.search.entities import extract
from backends.search.ranking import search_text, terms
from memory.agent.scopes import GOTCHA, PATTERN
from memory.agent.validity import in_force
from memory.context.budget import Category
from memory.context.file_memories import elsewhere
from memory.context.format import detail
from memory.context.thresholds import Thresholds

MAX_SPEC_WEIGHT = 1.5
SHORT = 3  # letters: "api", "key", "end" are generic; "refund", "alembic", "invoic" are not
ENTITY_LABELS = frozenset({"File", "Module", "Component"})
CONVENTION_KINDS = frozenset({PATTERN, GOTCHA})  # how things are done here, not what happened
_PATH = re.compile(r"[\w.-]+/[\w./-]*\w")


@dataclass(frozen=True)
class Found:
    """One category's search results: for the subject, what is known of it, the concerns."""

    subject: Sequence[Hit]
    known: Sequence[Hit] = ()
    concern: Sequence[Hit] = ()
    terms: frozenset[str] = frozenset()
    """the subject query's terms (``backends.search.ranking.terms``)"""
    testing: bool = False
    """the task writes or fixes tests (``memory.context.expansion.is_testing``)"""
    work: Sequence[Hit] = ()
    """memories tied to the working set, scored by the tie (``memory.context.file_memories``)"""
    files: Sequence[str] = ()
    """the working set"""


@dataclass(frozen=True)
class Candidate:
    episode: Episode
    relevance: float
    agrees: bool = True
    """found by both the subject's words and what the project links to it"""
    convention: bool = False
    """a project-wide memory of the task type's concerns, found by them alone"""
    slight: bool = False
    """holds only the subject's short, generic terms (``slight``)"""
    tie: float = 0.0
    """how it is tied to the files the work touches (0: not at all)"""


def above(score: float, floor: float) -> float:
    """A score, or 0 at or below ``floor``: so faint a match (the graph layer's vector-only
    neighbours score under 0.05) says nothing about the task."""
    return score if score > floor else 0.0


@lru_cache(maxsize=4096)
def held_terms(episode: Episode) -> frozenset[str]:
    """The terms a memory holds, as every layer's search reads it. Kept for the memories seen
    lately: a context reads each candidate's terms in every category that found it, and the
    next contexts find many of the same (episodes are frozen, so they key the cache)."""
    return frozenset(terms(search_text(episode)))


@lru_cache(maxsize=4096)
def entity_names(episode: Episode) -> frozenset[str]:
    """The files, modules and components a memory names (kept as ``held_terms`` is)."""
    return frozenset(e.name for e in extract(episode).entities if e.label in ENTITY_LABELS)


def slight(wanted: frozenset[str], episode: Episode) -> bool:
    """Whether ``episode`` holds only short terms of the subject (``SHORT`` letters or fewer)
    while the subject has longer ones. Short words are the generic ones of a task's words
    ("api", "key", "end" of "Fix API key authentication rejecting keys that end in a
    newline"): several things of every area are called so (the idempotency key, the admin
    API client), so a match on them alone is not agreement."""
    held = wanted & held_terms(episode)
    longer = {w for w in wanted if len(w) > SHORT}
    return bool(held) and bool(longer) and not held & longer


def is_convention(hit: Hit, testing: bool, limits: Thresholds) -> bool:
    """Whether a memory the concern found (``hit.score``: the share of its terms held) is how
    such work is done here. A pattern with one test word says how an area tests ("every email
    template has a plain-text twin; tests render both"), so it must hold ``convention`` of the
    terms; for a testing task, a project-wide gotcha needs only ``trap``: one test word in it
    says what breaks tests (a spec's, "Payout tests must freeze time", breaks its area's)."""
    if testing and hit.episode.kind == GOTCHA and spec_of(hit.episode) is None:
        return hit.score >= limits.trap
    return hit.episode.kind in CONVENTION_KINDS and hit.score >= limits.convention


def fuse(found: Found, limits: Thresholds) -> list[Candidate]:
    """The memories found, by fused relevance, best first (ties: the order found)."""
    subject: dict[str, float] = {}
    episodes: dict[str, Episode] = {}
    for weight, hits in ((1.0, found.subject), (limits.known, found.known)):
        for hit in hits:
            if (score := above(hit.score, limits.floor)) > 0:
                episodes.setdefault(hit.episode.id, hit.episode)
                subject[hit.episode.id] = subject.get(hit.episode.id, 0.0) + weight * score
    matched = {hit.episode.id for hit in found.subject if above(hit.score, limits.floor)}
    linked = {hit.episode.id for hit in found.known if above(hit.score, limits.floor)}
    concern = {hit.episode.id: above(hit.score, limits.floor) for hit in found.concern}
    ranked = [
        Candidate(episodes[key], score * (1 + limits.concern * concern.get(key, 0.0)),
                  key in matched and key in linked,
                  slight=slight(found.terms, episodes[key]))
        for key, score in subject.items()
        if score > 0
    ]
    conventions = {hit.episode.id for hit in found.concern
                   if is_convention(hit, found.testing, limits)}
    ranked = [replace(c, convention=True) if c.episode.id in conventions else c for c in ranked]
    ranked += [Candidate(hit.episode, 0.0, False, True) for hit in found.concern
               if hit.episode.id in conventions and hit.episode.id not in subject]
    return sorted(tie(ranked, found.work, limits), key=lambda c: -c.relevance)


def tie(ranked: list[Candidate], work: Sequence[Hit], limits: Thresholds) -> list[Candidate]:
    """The candidates tied to the working set raised by ``work`` times their tie, and the
    memories found only through it added: what the work touches speaks for the task when its
    words do not."""
    ties = {hit.episode.id: hit for hit in work}
    if not ties:
        return ranked
    tied = [replace(c, relevance=c.relevance + limits.work * ties[c.episode.id].score,
                    tie=ties[c.episode.id].score) if c.episode.id in ties else c
            for c in ranked]
    seen = {c.episode.id for c in ranked}
    tied += [Candidate(hit.episode, limits.work * hit.score, False, tie=hit.score)
             for key, hit in ties.items() if key not in seen]
    return tied


def fingerprint(episode: Episode) -> str:
    """What a memory says (its text or fields, else its name), folded: the same note under
    another name, kind, spec or id is the same note."""
    return natural_key(detail(episode) or episode.name)


def file_of(episode: Episode) -> str | None:
    """The file a memory is about: a discovery's path, else the first path it names."""
    data = episode.data
    if isinstance(data, dict):
        for key in ("file", "path"):
            value = data.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
    named = _PATH.search(episode.name) or _PATH.search(episode.body[:2000])
    return named.group(0) if named else None


def spec_of(episode: Episode) -> str | None:
    """The Auto-Claude spec a memory was recorded in (``backends.insights``), if any."""
    data = episode.data
    spec = data.get("spec") if isinstance(data, dict) else None
    return spec if isinstance(spec, str) else None


def task_specs(candidates: Sequence[Candidate], top: int) -> dict[str, float]:
    """The specs of the ``top`` best candidates, each with its share of their relevance (theirs
    all, the project's own memories among them included)."""
    weights: dict[str, float] = {}
    best = sorted((c for c in candidates if c.relevance > 0), key=lambda c: -c.relevance)[:top]
    for candidate in best:
        spec = spec_of(candidate.episode)
        if spec is not None:
            weights[spec] = weights.get(spec, 0.0) + candidate.relevance
    total = sum(c.relevance for c in best)
    return {spec: weight / total for spec, weight in weights.items()} if total else {}


def cohere(candidates: Sequence[Candidate], specs: Mapping[str, float]) -> list[Candidate]:
    """Candidates weighed by their spec: a spec is work on one area of the project, so the specs
    the best candidates come from are the task's. A memory of another spec is left out; one of
    the task's weighs twice its share among them (up to ``MAX_SPEC_WEIGHT``): one of two equal
    specs as found, a minor one less; the project's own memories are as found."""
    weighed = []
    among = sum(specs.values())
    for candidate in candidates:
        spec = spec_of(candidate.episode)
        if spec is None or not specs or (candidate.tie and spec not in specs):
            weighed.append(candidate)  # a memory of the working files is the task's own
        elif spec in specs:
            weight = min(2 * specs[spec] / among, MAX_SPEC_WEIGHT)
            weighed.append(replace(candidate, relevance=candidate.relevance * weight))
    return sorted(weighed, key=lambda c: -c.relevance)


def floor(candidate: Candidate, top: float, best: float, specs: Mapping[str, float],
          limits: Thresholds) -> float:
    """The relevance ``candidate`` must reach: ``relative`` of ``top``, the best of its kind in
    its category, and a share of ``best``, the best in the context: ``in_spec`` for a memory of
    the task's specs (work on the same area: on the benchmark such a memory is almost never a
    distractor), ``lead`` for the best of its kind when it agrees (found by the subject's
    words and by what the project links to it: a category's one gotcha or decision that
    matches, not one that shares a word), ``overall`` for the rest (the project's own memories
    of every area, where the distractors are)."""
    share = limits.overall
    if specs.get(spec_of(candidate.episode) or "", 0.0) > limits.spec_share:
        share = min(share, limits.in_spec)
    if candidate.relevance >= top and candidate.agrees and not candidate.slight:
        share = min(share, limits.lead)
    return max(limits.relative * top, share * best)


class Entities:
    """The files, modules and components the task is about: those its ``top`` best candidates
    name. A memory outside the task's specs that names such things, none of them the task's,
    is about another part of the code base and shares only words with the task ("the refund
    service" and ``app/services/notifications.py``): it is ``far``."""

    def __init__(self, candidates: Sequence[Candidate], specs: Mapping[str, float],
                 top: int) -> None:
        self._specs = specs
        best = sorted((c for c in candidates if c.relevance > 0), key=lambda c: -c.relevance)[:top]
        self.task = frozenset().union(*(entity_names(c.episode) for c in best))

    def far(self, episode: Episode) -> bool:
        if not self.task or spec_of(episode) in self._specs:
            return False
        named = entity_names(episode)
        return bool(named) and not named & self.task


def select(
    found: Mapping[Category, Found],
    allocations: Mapping[Category, int],
    limits: Thresholds,
    at: datetime,
) -> dict[Category, list[Episode]]:
    """The memories of each category that pass the floors, each once, best first."""
    fused = {c: [x for x in fuse(f, limits) if in_force(x.episode, at)] for c, f in found.items()}
    specs = task_specs([x for xs in fused.values() for x in xs], limits.spec_top)
    ranked = {c: cohere(xs, specs) for c, xs in fused.items()}
    best = max((xs[0].relevance for xs in ranked.values() if xs), default=0.0)
    entities = Entities([x for xs in ranked.values() for x in xs], specs, limits.spec_top)
    files = list(dict.fromkeys(f for x in found.values() for f in x.files))
    seen: set[str] = set()
    per_file: Counter[str] = Counter()
    chosen: dict[Category, list[Episode]] = {}
    order = sorted(ranked, key=lambda c: (-allocations.get(c, 0), list(Category).index(c)))
    for category in order:
        candidates = ranked[category]
        top: dict[str, float] = {}
        for candidate in candidates:
            top.setdefault(candidate.episode.kind, candidate.relevance)
        kept = chosen[category] = []
        for candidate in candidates:
            episode = candidate.episode
            convention = candidate.convention and (spec_of(episode) in specs
                                                   or spec_of(episode) is None)
            convention = convention or candidate.tie >= limits.tie
            if not convention and (
                candidate.relevance < floor(candidate, top[episode.kind], best, specs, limits)
                or (candidate.relevance < limits.far * best and entities.far(episode))
                or (files and not candidate.tie and candidate.relevance < limits.elsewhere * best
                    and elsewhere(entity_names(episode), files, folders=False))
            ):
                continue
            marks = (episode.id, fingerprint(episode))
            path = file_of(episode)
            if seen.intersection(marks) or (path and per_file[path] >= limits.per_file):
                continue
            seen.update(marks)
            if path:
                per_file[path] += 1
            kept.append(episode)
    return chosen
