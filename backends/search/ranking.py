"""Lexical ranking shared by every layer: BM25 over folded, lightly stemmed terms, with each
query term widened to vocabulary terms it prefixes or misspells (rapidfuzz). The index that
applies it is ``backends.search.textindex``.

Scores are normalised to [0, 1] against the best score any document could reach for the query
(every query term present and saturated), so a score means "how much of the query matched"
and thresholds mean the same thing in every layer and for every query.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from backends.model import Episode

K1 = 1.2
B = 0.75
PREFIX_WEIGHT = 0.8
TYPO_WEIGHT = 0.7
MAX_QUERY_TERMS = 64  # bounds the work a pasted 10,000-character query can cause
MAX_WIDENED = 8
WIDEN_BELOW_DF = 50  # or 1% of the documents, whichever is more

_WORD = re.compile(r"[^\W_]+")
_STOPWORD_TEXT = """a about above after again against all am an and any are as at be because been
    before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve don doesn didn isn wasn aren weren won wouldn shouldn couldn"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light suffix stripper: enough that "paint", "paints", "painted", "painting" meet."""
    if len(word) <= 3 or word.isdigit():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if word.endswith("ing") and len(word) > 5:
        word = _undouble(word[:-3])
    elif word.endswith("ed") and len(word) > 4:
        word = _undouble(word[:-2])
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _undouble(word: str) -> str:
    """running -> runn -> run; but falling -> fall, passed -> pass."""
    if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":
        return word[:-1]
    return word


BOOKKEEPING = ("spec", "session")
"""Fields of a structured body that say where a memory was recorded, not what it says. They are
not searched: an Auto-Claude spec named "002-refund-webhooks" would make every memory of it a
match for "refund" and "webhooks"."""


def search_text(episode: Episode) -> str:
    """What every layer's search reads of an episode, so equal memories rank alike anywhere:
    its name and body, less the body's bookkeeping fields."""
    body = episode.body
    if body.startswith("{") and any(f'"{key}"' in body for key in BOOKKEEPING):
        data = episode.data
        if isinstance(data, dict):
            import orjson  # only such bodies (Auto-Claude's) need it

            body = orjson.dumps({k: v for k, v in data.items() if k not in BOOKKEEPING}).decode()
    return f"{episode.name}\n{body}"


def terms(text: str) -> list[str]:
    """Case- and punctuation-folded, stemmed content words of ``text``."""
    return [stem(w) for w in _WORD.findall(text.casefold()) if w not in STOPWORDS]


def max_edits(term: str) -> int:
    """How far a misspelling of ``term`` may be: one edit, two from eight letters."""
    return 1 if len(term) < 8 else 2


def typo_candidates(term: str, vocabulary: list[str]) -> list[str]:
    """Vocabulary terms within ``max_edits`` of ``term`` that do not merely extend it
    (prefixes are widened on their own), closest first. Two adjacent letters swapped are one
    edit (optimal string alignment): "stirpe" is one typing slip from "stripe", not two."""
    from rapidfuzz import process  # only a query term the index does not know needs it
    from rapidfuzz.distance import OSA

    found = process.extract(term, vocabulary, scorer=OSA.distance,
                            score_cutoff=max_edits(term), limit=MAX_WIDENED)
    return [candidate for candidate, _distance, _ in found if not candidate.startswith(term)]


def idf(n: int, df: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

