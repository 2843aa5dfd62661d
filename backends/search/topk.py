"""The exact top ``k`` of a BM25 query, walking as few postings as the bounds allow.

Query terms are taken by their bound, highest (rarest) first, term at a time. Each term's
postings come in blocks (``textindex`` chunks) whose bound is known before they are read (from
the best tf/length pairs of the block), and a floor is kept: the ``k``-th best complete score
of some candidates, which the final ``k``-th score cannot be under. A block whose bound plus
all that later terms could add stays below the floor is not read: no document first seen there
can reach the top. Once the later terms together stay below it, no new document can enter at
all; the candidates are then only updated, and once few enough could still reach the floor,
they are scored completely from their stored terms instead, best first, until the next cannot.

Every score returned is computed one way, term by term in the order the plans are given (not the
walk's), so a pruned search, an exhaustive one and ``dense`` agree to the last bit. Postings
are scored through C-level maps over a table of (tf, length) -> value, which is what makes
walking them affordable in Python.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from operator import add, itemgetter
from typing import NamedTuple

# Bounds are sums of floats taken in another order than the scores: a margin for the rounding.
_SLACK = 1e-9
_MAX_U16 = 0xFFFF
_BATCH = 32  # candidates scored completely at a time
# Scoring a candidate from its stored terms costs about as much as walking this many postings.
_COMPLETE_COST = 40


class Block(NamedTuple):
    """One chunk of one vocabulary term's postings, with its bound for this query."""

    term: str
    part: int
    first: int
    size: int  # postings in it
    gain: float  # the term's BM25 gain for this query: weighted idf x (k1 + 1)
    bound: float  # the most any posting of this block adds


class Plan(NamedTuple):
    """One query term: the vocabulary terms it matches (itself, prefixes, typos) with gains."""

    variants: Sequence[tuple[str, float]]
    blocks: Sequence[Block]  # best bound first

    @property
    def bound(self) -> float:
        return self.blocks[0].bound if self.blocks else 0.0


Arrays = tuple["array[int]", "array[int]", "array[int]"]
"""a block's document numbers, term frequencies and document lengths"""


class Reader(NamedTuple):
    """What the search reads of an index."""

    postings: Callable[[str], dict[tuple[int, int], Arrays]]
    """(part, first) -> the arrays of each block of this vocabulary term (in the filter)"""
    forward: Callable[[Sequence[int]], Iterable[tuple[int, int, str]]]
    """(document, length, " term:tf term:tf ... ") of each of these documents"""


def impact(front: bytes, flat: float, per_length: float) -> float:
    """The largest tf / (tf + flat + per_length x length) over a block's (tf, length) front
    (many blocks share a front: callers keep what this returned)."""
    pairs = array("H")
    pairs.frombytes(front)
    return max((tf / (tf + flat + per_length * size)
                for tf, size in zip(pairs[::2], pairs[1::2], strict=True)), default=0.0)


class _Values(dict[tuple[int, int], float]):
    """(tf, length) -> what a posting adds, computed once per pair met."""

    def __init__(self, gain: float, flat: float, per_length: float) -> None:
        super().__init__()
        self._gain, self._flat, self._per_length = gain, flat, per_length

    def __missing__(self, key: tuple[int, int]) -> float:
        tf, size = key
        value = self[key] = _value(self._gain, tf, size, self._flat, self._per_length)
        return value


def _value(gain: float, tf: int, size: int, flat: float, per_length: float) -> float:
    return gain * tf / (tf + flat + per_length * size)


class _Search:
    def __init__(self, plans: Sequence[Plan], reader: Reader, flat: float, per_length: float,
                 limit: int) -> None:
        self.given = [plan for plan in plans if plan.blocks]  # the order scores add in
        self.order = sorted(self.given, key=lambda p: -p.bound)  # the order terms are walked in
        self.reader = reader
        self.flat, self.per_length, self.limit = flat, per_length, limit
        self.needles = {variant: f" {variant}:" for plan in self.order
                        for variant, _ in plan.variants}
        self.values = {gain: _Values(gain, flat, per_length)
                       for plan in self.order for _, gain in plan.variants}
        self.read: dict[str, dict[tuple[int, int], Arrays]] = {}
        self.partial: dict[int, float] = {}  # lower bounds: the walked terms' part
        self.exact: dict[int, float] = {}
        self.skipped: list[tuple[float, set[int] | None]] = []
        """per term with blocks left unread: their bound, and the documents met in the rest"""
        self.kept: list[float] = []  # the best ``limit`` complete scores, a min-heap
        self.floor = -math.inf

    def run(self) -> dict[int, float]:
        order, partial = self.order, self.partial
        rest = [math.fsum(plan.bound for plan in order[j:]) for j in range(len(order) + 1)]
        loose = 0.0  # the most a candidate may lack from blocks left unread, over all terms
        walked = 0
        for j, plan in enumerate(order):
            opened = rest[j] + _SLACK >= self.floor  # a new document may still reach the top
            if not opened:
                cut = self.floor - rest[j] - loose - _SLACK
                viable = sum(1 for score in partial.values() if score >= cut)
                if viable * _COMPLETE_COST <= sum(block.size for block in plan.blocks):
                    break
            walked = j + 1
            per_doc: dict[int, float] = {}
            refine_at = self.limit  # within a term too, at doubling sizes
            for block in plan.blocks:
                entering = opened and block.bound + rest[j + 1] + _SLACK >= self.floor
                if opened and not entering:
                    loose += block.bound  # the most this and every later block add
                    # A document met in the blocks read lacks nothing of this term (unless
                    # the term is widened: its other variants may have been skipped).
                    self.skipped.append((block.bound, None if len(plan.variants) > 1
                                         else set(per_doc)))
                    break
                self._walk(block, per_doc, entering, len(plan.variants) > 1)
                if len(per_doc) >= refine_at:
                    self._raise_floor(per_doc)
                    refine_at = 2 * len(per_doc)
            keys = list(per_doc)
            partial.update(zip(keys, map(add, map(partial.get, keys, repeat(0.0)),
                                         per_doc.values()), strict=True))
            if walked < len(order):  # else what is left is _finish's
                self._raise_floor(partial)
        if not rest[walked] and not loose:  # every posting of every term was added
            if all(a is b for a, b in zip(self.order, self.given, strict=True)):
                return partial | self.exact
            # Summed in walk order: the top (within rounding) is scored again in given order.
            cut = heapq.nlargest(self.limit, partial.values())[-1] - _SLACK
            self._completed([doc for doc, score in partial.items()
                             if score >= cut and doc not in self.exact])
            return self.exact
        return self._finish(rest[walked], loose)

    def _walk(self, block: Block, per_doc: dict[int, float], entering: bool,
              widened: bool) -> None:
        """Add the block's values to ``per_doc`` (the larger one where variants meet); only
        for candidates unless new documents are ``entering``."""
        if block.term not in self.read:  # one query a term: its blocks are mostly small
            self.read[block.term] = self.reader.postings(block.term)
        docs, tfs, lens = self.read[block.term][block.part, block.first]
        values = map(self.values[block.gain].__getitem__, zip(tfs, lens, strict=True))
        if entering:
            found: Iterable[tuple[int, float]] = zip(docs, values, strict=True)
        else:
            scored = dict(zip(docs, values, strict=True))
            known = scored.keys() & self.partial.keys()
            found = zip(known, map(scored.__getitem__, known), strict=True)
        if not widened:
            per_doc.update(found)  # one vocabulary term: its blocks never share a document
            return
        for doc, value in found:
            if value > per_doc.get(doc, 0.0):
                per_doc[doc] = value

    def _raise_floor(self, found: dict[int, float]) -> None:
        """Score completely the best of ``found`` (lower bounds of their scores)."""
        best = heapq.nlargest(self.limit, found.items(), key=itemgetter(1))
        self._completed([doc for doc, _ in best if doc not in self.exact])

    def _completed(self, docs: Sequence[int]) -> None:
        """Score ``docs`` completely; the floor rises with the ``limit``-th best so far."""
        scores = self._complete(docs)
        self.exact.update(scores)
        for score in scores.values():
            if len(self.kept) < self.limit:
                heapq.heappush(self.kept, score)
            elif score > self.kept[0]:
                heapq.heapreplace(self.kept, score)
        if len(self.kept) == self.limit:
            self.floor = max(self.floor, self.kept[0])

    def _finish(self, rest: float, loose: float) -> dict[int, float]:
        """Score completely the candidates that may still reach the floor, best bound first,
        a batch at a time (each raises the floor), until the next cannot."""
        exact, floor = self.exact, self.floor - _SLACK
        viable = []
        for doc, score in self.partial.items():
            upper = score + rest
            if doc in exact or upper + loose < floor:
                continue
            for bound, seen in self.skipped:
                if seen is None or doc not in seen:
                    upper += bound
            if upper >= floor:
                viable.append((upper, doc))
        viable.sort(reverse=True)
        for start in range(0, len(viable), _BATCH):
            batch = [doc for upper, doc in viable[start : start + _BATCH]
                     if upper + _SLACK >= self.floor]
            if not batch:
                break
            self._completed(batch)
        return exact

    def _complete(self, docs: Sequence[int]) -> dict[int, float]:
        scores = {}
        flat, per_length, needles = self.flat, self.per_length, self.needles
        for doc, length, text in self.reader.forward(docs) if docs else ():
            size = min(length, _MAX_U16)
            total = 0.0
            for plan in self.given:
                best = 0.0
                for variant, gain in plan.variants:
                    at = text.find(needles[variant])
                    if at >= 0:
                        at += len(needles[variant])
                        tf = min(int(text[at : text.index(" ", at)]), _MAX_U16)
                        value = _value(gain, tf, size, flat, per_length)
                        if value > best:
                            best = value
                if best:
                    total += best
            scores[doc] = total
        return scores


def top(
    plans: Sequence[Plan], reader: Reader, *, flat: float, per_length: float, limit: int
) -> dict[int, float]:
    """Document -> complete score, for a set that holds the best ``limit`` (and any tied
    with the last of them)."""
    return _Search(plans, reader, flat, per_length, limit).run()
