"""The Markdown views ``patterns.md`` and ``gotchas.md``: rendered from the stored episodes,
edited by people.

A generated bullet ends with ``<!-- dualmem <id> <check> -->``, where the check is a digest of
the id and the bullet's text: a bullet whose check still matches is ours and is rewritten on every
render. Every other line belongs to a person and is kept as it is. A person's bullet (``- text``,
``* text`` or ``+ text`` at the start of a line), or a generated bullet whose text a person changed,
is a *hand bullet*: it becomes an episode of its own, source ``manual``, with the stable id
``stable_id(group, kind, natural_key(text))``.

A view is split into pages so that a write rewrites one page, not every bullet of the group: the
first page is ``patterns.md`` (it holds every hand bullet); a generated bullet whose id's digest is
0 modulo ``PAGE`` starts a later page, ``patterns-<its time>-<digest>.md``, that holds it and the
generated bullets after it up to the next such bullet. The split is a function of the stored
episodes alone, so pages changed write by write are those rendered whole, and a page holds
``PAGE`` bullets on average (over ten times that with odds of e^-10).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import NamedTuple

from backends.kinds import GOTCHA, PATTERN
from backends.model import MAX_NAME_CHARS, Episode, natural_key, stable_id
from fallback.layout import VIEW_FILES, page_time

MANUAL = "manual"
PAGE = 128
"""a generated bullet starts a page with odds 1 in PAGE: the mean page size in bullets"""
_TITLES = {PATTERN: "Patterns", GOTCHA: "Gotchas"}
_INTRO = (
    "<!-- dualmem: bullets ending in a dualmem comment are written from the stored memories and"
    " rewritten when they change. Add your own as plain '- text' bullets: each becomes a memory"
    " of its own and is never overwritten. Removing your bullet forgets its memory (its text"
    " is kept: dualmem restore brings it back); removing several at once forgets none until"
    " you say so (dualmem status lists them). Memories"
    " past the first hundred or so are on later pages beside this file, named after it and the"
    " time of their first memory. -->"
)
_GENERATED = re.compile(r"- (?P<text>.*?) <!-- dualmem (?P<id>\S+) (?P<check>[0-9a-f]{10}) -->")
_BULLET = re.compile(r"[-*+][ \t]+(?P<text>\S.*?)\s*")
_ANY_GENERATED = re.compile(r" <!-- dualmem \S+ [0-9a-f]{10} -->$", re.M)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONFLICT_START = re.compile(r"^<{7}(?: |$)", re.M)
_CONFLICT_END = re.compile(r"^>{7}(?: |$)", re.M)
_SUMMARY_CHARS = 200
_LATER_INTRO = (
    "<!-- dualmem: a later page of {first}, written from the stored memories that follow those"
    " of the page before it. Bullets you add here are moved to {first}, where your own live. -->"
)


class Line(NamedTuple):
    raw: str
    generated_id: str | None = None  # a generated bullet, untouched since we wrote it
    hand_text: str | None = None  # a person's bullet
    edited_id: str | None = None
    """the id in the comment of a generated bullet whose text a person changed (``hand_text``)"""


def parse(text: str) -> list[Line]:
    return [_classify(raw) for raw in text.split("\n")]


def hand_ids(lines: Iterable[Line], group_id: str, kind: str) -> dict[str, str]:
    """Stable id -> text of each hand bullet."""
    return {
        stable_id(group_id, kind, natural_key(line.hand_text)): line.hand_text
        for line in lines
        if line.hand_text is not None
    }


def adopt(text: str, episode_ids: Collection[str]) -> str:
    """``text`` with the generated bullets of ``episode_ids`` made a person's plain bullets (the
    comment taken off): copied from another view, they are the person's text here."""
    lines = text.split("\n")
    for at, raw in enumerate(lines):
        line = _classify(raw)
        if line.generated_id in episode_ids:
            found = _GENERATED.fullmatch(raw.rstrip())
            assert found is not None  # it classified as generated
            lines[at] = f"- {found['text']}"
    return "\n".join(lines)


def hand_episode(group_id: str, kind: str, text: str) -> Episode:
    """The episode a hand bullet stands for. Raises ``InvalidEpisode`` when it cannot be one."""
    name = _CONTROL.sub(" ", text)
    if len(name) > MAX_NAME_CHARS:
        name = name[: MAX_NAME_CHARS - 1] + "…"
    return Episode.parse(
        id=stable_id(group_id, kind, natural_key(text)),
        group_id=group_id, kind=kind, name=name, body=text, source=MANUAL,
    )


def is_hand_shaped(episode: Episode) -> bool:
    """True when the episode is what a hand bullet stands for, so the view shows it as one:
    a bullet that reads back as this very body (one ending like a dualmem comment would read
    back as another text, another id, once the view is read again without its index)."""
    body = episode.body
    return (
        episode.source == MANUAL
        and episode.kind in VIEW_FILES
        and body == body.strip()
        and "\n" not in body
        and episode.id == stable_id(episode.group_id, episode.kind, natural_key(body))
        and _classify(f"- {body}").hand_text == body
    )


def bullet(episode: Episode) -> str:
    """The line that shows ``episode`` in its view: a plain hand bullet for what a hand bullet
    stands for, else a generated one."""
    return f"- {episode.body}" if is_hand_shaped(episode) else _generated_line(episode)


def starts_page(episode_id: str) -> bool:
    """Whether the generated bullet of ``episode_id`` starts a later page of its view."""
    return int(_digest(episode_id)[:8], 16) % PAGE == 0


def header(group_id: str, kind: str, name: str) -> str:
    """What a new page of the view starts with: a title and the rules."""
    first = VIEW_FILES[kind]
    if name == first:
        return f"# {_TITLES[kind]}: {group_id}\n\n{_INTRO}"
    title = f"# {_TITLES[kind]}: {group_id}, from {page_time(name)}"
    return f"{title}\n\n{_LATER_INTRO.format(first=first)}"


def render(
    existing: str | None,
    group_id: str,
    kind: str,
    shown: Iterable[tuple[str, str]],
    drop: Collection[str] = (),
    name: str | None = None,
) -> str:
    """The page ``name`` (the first by default) of the view of ``shown``, (id, bullet) of the
    group's episodes of ``kind`` on it, oldest first: every line a person wrote is kept in
    place, except hand bullets whose episode id is in ``drop`` (deleted, or moved to the first
    page), then hand bullets not yet in it; generated bullets follow, in order."""
    if existing is None or not existing.strip():
        existing = header(group_id, kind, name or VIEW_FILES[kind])
    bullets = dict(shown)
    present: set[str] = set()
    kept: list[str] = []
    for line in parse(existing):
        if line.generated_id is not None:
            continue
        if line.hand_text is None:
            kept.append(line.raw)
            continue
        episode_id = stable_id(group_id, kind, natural_key(line.hand_text))
        if episode_id in drop:
            continue
        present.add(episode_id)
        kept.append(f"- {line.hand_text}" if line.edited_id is not None else line.raw)
    while kept and not kept[-1].strip():
        kept.pop()
    added = [line for episode_id, line in bullets.items() if episode_id not in present]
    # A hand bullet joins the person's lines, where the next render keeps it: a render of
    # its own output is that output.
    kept += [line for line in added if not _ANY_GENERATED.search(line)]
    added = [line for line in added if _ANY_GENERATED.search(line)]
    return "\n".join([*kept, "", *added] if added else kept) + "\n"


def splice(
    text: str, episode_id: str, line: str | None, *, before: str | None, after: str | None
) -> str | None:
    """``text``, a view exactly as ``render`` wrote it, with the generated bullet of
    ``episode_id`` taken out and, unless ``line`` is None, ``line`` put back where the order
    wants it: before the generated bullet of ``before``, else after that of ``after`` (its
    neighbours in order). A write then costs a search of the text, not a parse of every line.
    None when it cannot be done in place (no neighbour to place it by, or none left): the
    caller renders the whole view instead."""
    found = _find_generated(text, episode_id)
    if found is not None:
        text = text[: found[0]] + text[found[1] :]
    if line is None:
        return text if _ANY_GENERATED.search(text) else None
    for neighbour, at_start in ((before, True), (after, False)):
        place = None if neighbour is None else _find_generated(text, neighbour)
        if place is not None:
            at = place[0] if at_start else place[1]
            return f"{text[:at]}{line}\n{text[at:]}"
    return None


def _find_generated(text: str, episode_id: str) -> tuple[int, int] | None:
    """Where the generated bullet of ``episode_id`` is in ``text``: its start and the end of
    its line, newline included."""
    marker = f" <!-- dualmem {episode_id} "
    at = text.find(marker)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        if _classify(text[start:end]).generated_id == episode_id:
            return start, min(end + 1, len(text))
        at = text.find(marker, at + 1)
    return None


def _classify(raw: str) -> Line:
    line = raw.rstrip()
    if not line.startswith(("-", "*", "+")):
        return Line(raw)  # prose, titles, blank lines: most of a view skips both patterns
    generated = _GENERATED.fullmatch(line) if line.endswith("-->") else None
    if generated is not None:
        if generated["check"] == _check(generated["id"], generated["text"]):
            return Line(raw, generated_id=generated["id"])
        if generated["text"].strip():
            return Line(raw, hand_text=generated["text"].strip(), edited_id=generated["id"])
    bullet = _BULLET.fullmatch(line)
    return Line(raw, hand_text=bullet["text"]) if bullet is not None else Line(raw)


def corrected(episode: Episode, text: str) -> Episode:
    """``episode`` as a person who changed its generated bullet to read ``text`` meant it: the
    bullet shows ``name: first line of the body`` (or the name alone), and each part takes the
    text that now stands in its place; a bullet no longer split by ``: `` is both. Raises
    ``InvalidEpisode`` when that is no episode."""
    name, first = episode.name, _first_line_shown(episode)
    new_name, new_first = text, None
    if first is None and episode.data is None and _first_line(episode) == name:
        new_first = text  # a body that reads as its name (a one-line memory): both change
    elif first is not None:
        if text.startswith(f"{name}: "):
            new_name, new_first = name, text[len(name) + 2:]
        elif text.endswith(f": {first}"):
            new_name = text[: -len(first) - 2]
        else:
            new_name, _, new_first = text.partition(": ")
            new_first = new_first or text
    body = episode.body
    if new_first is not None and new_first != first:
        rest = body.strip().split("\n", 1)[1:]
        body = "\n".join([new_first.strip(), *rest])
    return Episode.parse(**(episode.to_json() | {"name": new_name.strip(), "body": body}))


def is_generated(bullet: str) -> bool:
    """Whether the view line ``bullet`` is a generated bullet (not a hand one)."""
    return _ANY_GENERATED.search(bullet) is not None


def conflicted(text: str) -> bool:
    """Whether ``text`` holds a merge's conflict markers (``<<<<<<<`` ... ``>>>>>>>``)."""
    return _CONFLICT_START.search(text) is not None and _CONFLICT_END.search(text) is not None


def _generated_line(episode: Episode) -> str:
    text = episode.name
    first = _first_line_shown(episode)
    if first is not None:
        text = f"{text}: {first}"
    return f"- {text} <!-- dualmem {episode.id} {_check(episode.id, text)} -->"


def _first_line_shown(episode: Episode) -> str | None:
    """The first line of the body as the generated bullet shows it after the name, if it does."""
    first = _first_line(episode)
    if not first or first == episode.name or episode.data is not None:
        return None
    if len(first) > _SUMMARY_CHARS:
        first = first[: _SUMMARY_CHARS - 1] + "…"
    return _CONTROL.sub(" ", first)


def _first_line(episode: Episode) -> str:
    return episode.body.strip().split("\n", 1)[0].strip()


def _check(episode_id: str, text: str) -> str:
    return _digest(f"{episode_id}\n{text}")[:10]


def _digest(text: str) -> str:
    import hashlib  # loads OpenSSL (~5 ms): only writing or reading a view needs it

    return hashlib.sha256(text.encode()).hexdigest()
