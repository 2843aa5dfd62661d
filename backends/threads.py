"""Conversation order, kept beside each layer's search index so that a search lifts the turns
next to a matching one: a question's answer is often the reply to the line its words match
("What did Priya bake?" matches a friend asking her about it; Priya's answer shares no word
with the question). graphiti links a conversation's episodes the same way (``NEXT_EPISODE``).

Only conversational memories take part (``conversational``: a kind that names a turn or a
message, not ``turn_state``), so no other memory ranks differently. A turn's thread is its
group, its kind, and the part of its id before a final ``:<number>`` (which is then its turn
number): ``chat-7:s1:3`` is turn 3 of thread ``chat-7:s1``; an id without one belongs to the
group's one thread of that kind. Within a thread turns follow ``created_at``, then the turn
number, then the id, so turns that share one time (an imported session) keep their order.

The caller owns the connection and its transactions, as with ``backends.search.textindex``.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Collection, Iterable, Sequence
from datetime import UTC, datetime, timedelta

from backends.model import Episode

ADJACENT = 0.75
"""a turn next to a hit scores this share of the hit's score, one two turns away its square
(or each keeps its own score, if higher)"""
REPLY = 0.95
"""the share the turn after a question (a turn ending in "?") takes instead: the reply"""
REACH = 2
"""how many turns away from a hit, each way. Chosen on half of LoCoMo dev's conversations
(docs/CONTEXT.md); R@10 there: 0.655 lexical, 0.704 one turn away at 0.7, 0.735 two turns
at 0.75, 0.751 with replies at 0.95. On the other half: 0.617, 0.663, 0.671, 0.695."""
_CONVERSATIONAL = re.compile(r"(?:.*[_.-])?(?:turn|message|utterance)")
_TURN = re.compile(r"(.*):([0-9]{1,18})")
_EPOCH = datetime(1, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)

SCHEMA = """
CREATE TABLE IF NOT EXISTS thr_turns (key TEXT PRIMARY KEY, thread TEXT NOT NULL,
    at INTEGER NOT NULL, turn INTEGER NOT NULL, asks INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS thr_order ON thr_turns (thread, at, turn, key);
"""
# One statement for every hit (no read per hit): whether it asks, the ``REACH`` turns before
# it, and the ``REACH`` turns after it, each with whether it asks.
_NEXT = """(SELECT t.{column} FROM thr_turns t WHERE t.thread = h.thread
  AND (t.at, t.turn, t.key) {sign} (h.at, h.turn, h.key)
  ORDER BY t.at {order}, t.turn {order}, t.key {order} LIMIT 1 OFFSET {offset})"""
_BESIDE = "SELECT h.key, h.asks, {} FROM thr_turns h WHERE h.key IN ({{}})".format(", ".join(
    [_NEXT.format(column="key", sign="<", order="DESC", offset=offset)
     for offset in range(REACH)]
    + [_NEXT.format(column=column, sign=">", order="ASC", offset=offset)
       for offset in range(REACH) for column in ("key", "asks")]))


def conversational(kind: str) -> bool:
    """Whether memories of ``kind`` are turns of a conversation (``dialog_turn``, ``message``,
    ``chat_message``), whose neighbours a search lifts."""
    return _CONVERSATIONAL.fullmatch(kind) is not None


def place(episode: Episode) -> tuple[str, int, int, bool] | None:
    """(thread, time in microseconds, turn number, whether it asks a question) of a
    conversational episode, else None."""
    if not conversational(episode.kind):
        return None
    numbered = _TURN.fullmatch(episode.id)
    prefix, turn = (numbered[1], int(numbered[2])) if numbered else ("", 0)
    at = (episode.created_at - _EPOCH) // _MICROSECOND
    thread = f"{episode.group_id}\x1f{episode.kind}\x1f{prefix}"
    return thread, at, turn, episode.body.rstrip().endswith("?")


def create(db: sqlite3.Connection) -> None:
    for statement in SCHEMA.split(";"):
        if statement.strip():
            db.execute(statement)


def put(db: sqlite3.Connection, episodes: Iterable[Episode]) -> None:
    """Record each episode's place, replacing the one it had (a memory rewritten into another
    kind leaves its thread)."""
    for episode in episodes:
        found = place(episode)
        if found is None:
            db.execute("DELETE FROM thr_turns WHERE key = ?", (episode.id,))
        else:
            db.execute("INSERT OR REPLACE INTO thr_turns VALUES (?, ?, ?, ?, ?)",
                       (episode.id, *found))


def drop(db: sqlite3.Connection, keys: Iterable[str]) -> None:
    db.executemany("DELETE FROM thr_turns WHERE key = ?", ((key,) for key in keys))


def clear(db: sqlite3.Connection) -> None:
    db.execute("DELETE FROM thr_turns")


def beside(db: sqlite3.Connection, keys: Collection[str]
           ) -> dict[str, tuple[list[tuple[str, float]], list[tuple[str, float]]]]:
    """key -> the turns before it and the turns after it in its thread, nearest first (at most
    ``REACH`` each way), each with the share of the hit's score it takes, for the conversational
    ones of ``keys``."""
    if not keys:
        return {}
    rows = db.execute(_BESIDE.format(",".join("?" * len(keys))), list(keys)).fetchall()
    found = {}
    for key, asks, *near in rows:
        before = [k for k in near[:REACH] if k is not None]
        after = [k for k in near[REACH::2] if k is not None]
        asked = [bool(asks), *(bool(a) for a in near[REACH + 1::2])]
        found[key] = (_shares(before, [False] * REACH), _shares(after, asked))
    return found


def _shares(side: list[str], asked: list[bool]) -> list[tuple[str, float]]:
    """Each turn of ``side`` (nearest first) with the product of the steps' shares to reach it,
    a step from a turn that asks (``asked``, from the hit on) to its reply taking ``REPLY``."""
    shares, share = [], 1.0
    for other, asks in zip(side, asked, strict=False):
        share *= REPLY if asks else ADJACENT
        shares.append((other, share))
    return shares


def lift(db: sqlite3.Connection, ranked: Sequence[tuple[str, float]], limit: int
         ) -> list[tuple[str, float]]:
    """The best ``limit`` of ``ranked`` (key, score; best first) and the turns near its hits,
    each at its share (``beside``) of its best hit's score; ``ranked`` itself when no hit is a
    conversational turn."""
    top = ranked[:limit]
    near = beside(db, [key for key, _ in top])
    if not near:
        return list(top)
    scores = dict(ranked)
    for key, score in top:
        for side in near.get(key, ()):
            for other, share in side:
                if share * score > scores.get(other, 0.0):
                    scores[other] = share * score
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
