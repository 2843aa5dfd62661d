"""The names of the embedded graph engines, apart from the server address parser
(``backends.graph.address``): every command's line and configuration need these; only a
server's URL needs that parser."""

from __future__ import annotations

from typing import Literal

from backends.errors import InvalidGraphAddress

Engine = Literal["kuzu", "ladybug"]
ENGINES: tuple[Engine, ...] = ("kuzu", "ladybug")
DEFAULT_ENGINE: Engine = "kuzu"


def check_engine(name: str) -> Engine:
    for engine in ENGINES:
        if name == engine:
            return engine
    raise InvalidGraphAddress(
        f"embedded graph engine must be one of {', '.join(ENGINES)}, not {name!r}")
