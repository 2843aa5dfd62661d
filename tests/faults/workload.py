"""The writes of the fault suite, and what a store must hold after them.

``operations(seed, round_, count)`` is deterministic: a child process writes them and prints
``ack N`` once operation N has returned (it is then acknowledged, durable by contract); the test
builds the same list and knows exactly what each acknowledgement promised. Operations: new
episodes one at a time and in batches (big enough for the graph's bulk path), rewrites and
deletes of keys that may exist from earlier rounds.

``Expectation`` tracks, per id, every state the store may be in: one after an acknowledged
write; the old or the new one for an operation that was under way when the writer died or that
was refused (a batch may be stored in part, by contract).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import ClassVar

from backends.graph.kuzu.rows import COPY_MIN
from backends.model import Episode, stable_id

GROUPS = ("faults-a", "faults-b")
SHARED = "shared"
SHARED_KEYS = 40  # keys every round of a scope may rewrite or delete
START = datetime(2025, 6, 1, tzinfo=UTC)
State = str | None  # a content hash, or None for "absent"


@dataclass(frozen=True)
class Operation:
    number: int
    puts: tuple[Episode, ...] = ()
    deletes: tuple[str, ...] = ()

    @property
    def ids(self) -> list[str]:
        return [e.id for e in self.puts] + list(self.deletes)


def episode(round_: int, number: int, key: str, body_bytes: int, rng: random.Random) -> Episode:
    group = GROUPS[rng.randrange(len(GROUPS))]
    filler = "x" * max(0, body_bytes - 60)
    return Episode.parse(
        id=key_id(key), group_id=group, kind=rng.choice(["note", "gotcha", "pattern"]),
        name=f"{key} r{round_} op{number}",
        body=f"round {round_} operation {number} key {key} {filler}",
        source="faults",
        created_at=START + timedelta(seconds=round_ * 100_000 + number),
    )


def operations(
    seed: int, round_: int, count: int, *, body_bytes: Sequence[int] = (200,),
    scope: str = SHARED,
) -> list[Operation]:
    """``count`` operations of round ``round_``; bodies of the sizes in ``body_bytes``. Rounds
    of one ``scope`` rewrite and delete each other's keys (writers at once get one each)."""
    rng = random.Random(f"{seed}:{round_}")
    mine: list[str] = []
    done: list[Operation] = []

    def new_key() -> str:
        mine.append(f"r{round_}-k{len(mine)}")
        return mine[-1]

    def old_key() -> str:
        if mine and rng.random() < 0.5:
            return rng.choice(mine)
        return f"{scope}-{rng.randrange(SHARED_KEYS)}"

    for number in range(count):
        size = rng.choice(body_bytes)
        roll = rng.random()
        if roll < 0.55:
            keys = [new_key()]
        elif roll < 0.7:
            keys = [old_key()]
        elif roll < 0.8:
            keys = [new_key() for _ in range(COPY_MIN + rng.randrange(20))]
        elif roll < 0.88:
            # dict, not set: the order must not depend on the process's hash seed
            keys = list(dict.fromkeys([*(old_key() for _ in range(8)),
                                       *(new_key() for _ in range(4))]))
        else:
            done.append(Operation(number, deletes=(key_id(old_key()),)))
            continue
        done.append(Operation(number, puts=tuple(
            episode(round_, number, key, size, rng) for key in keys
        )))
    return done


def key_id(key: str) -> str:
    """Keys are the same in every group: the id of a key does not depend on its episode's."""
    return stable_id("faults", "any", key)


@dataclass
class Tally:
    """What one family of faults did to one layer, summed over its rounds."""

    rounds: int = 0
    acknowledged: int = 0
    """episode writes and deletes acknowledged to the writer"""
    refused: int = 0
    """operations that raised dualmem's own error (disk full, ...)"""
    lost: int = 0
    """acknowledged writes missing or older afterwards (deletes undone included)"""
    duplicated: int = 0
    """extra copies of an id"""
    torn: int = 0
    """ids holding content that no write ever had"""
    unopenable: int = 0
    crashed: int = 0
    """writers that died other than by our SIGKILL (an abort, a segfault, a traceback)"""
    leftovers: int = 0
    """temp or COPY files of dead writers still there once the store was opened again"""
    escaped: int = 0
    """files outside the home written, created or served as memories"""
    notes: list[str] = field(default_factory=list)

    COUNTS: ClassVar[tuple[str, ...]] = (
        "rounds", "acknowledged", "refused", "lost", "duplicated", "torn", "unopenable",
        "crashed", "leftovers", "escaped",
    )

    def add(self, other: Tally) -> None:
        for name in self.COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.notes += other.notes

    @property
    def clean(self) -> bool:
        return not (self.lost or self.duplicated or self.torn or self.unopenable
                    or self.crashed or self.leftovers or self.escaped)


class Expectation:
    """Every state each id may be in, given what was acknowledged."""

    def __init__(self, observed: dict[str, State] | None = None) -> None:
        self.allowed: dict[str, set[State]] = {
            key: {state} for key, state in (observed or {}).items()
        }
        self.promised: dict[str, State] = dict(observed or {})
        """the state the last acknowledged operation on each id left (what must not be lost)"""

    def acknowledged(self, operation: Operation) -> None:
        for key, state in _effects(operation):
            self.allowed[key] = {state}
            self.promised[key] = state

    def uncertain(self, operation: Operation) -> None:
        """Under way when the writer died, or refused: applied or not, episode by episode."""
        for key, state in _effects(operation):
            self.allowed.setdefault(key, {None}).add(state)

    def check(self, stored: Iterable[Episode]) -> Tally:
        return self.check_hashes([(e.id, e.content_hash()) for e in stored])

    def check_hashes(self, stored: Sequence[tuple[str, str]]) -> Tally:
        """Check (id, content hash) of every stored episode."""
        tally = Tally()
        copies = Counter(key for key, _ in stored)
        tally.duplicated = sum(n - 1 for n in copies.values())
        observed: dict[str, State] = dict(stored)
        for key in self.allowed.keys() | observed.keys():
            state = observed.get(key)
            allowed = self.allowed.get(key, {None})
            if state in allowed:
                continue
            if key in self.promised:
                tally.lost += 1
                tally.notes.append(f"{key}: promised {self.promised[key]}, found {state}")
            else:
                tally.torn += 1
                tally.notes.append(f"{key}: found {state}, allowed {sorted(map(str, allowed))}")
        return tally

    def settle(self, stored: Iterable[Episode]) -> Expectation:
        """The next round starts from what the store holds now (once checked)."""
        return Expectation({e.id: e.content_hash() for e in stored})


def _effects(operation: Operation) -> list[tuple[str, State]]:
    latest = {e.id: e.content_hash() for e in operation.puts}
    return [*latest.items(), *((key, None) for key in operation.deletes)]
