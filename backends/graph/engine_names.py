"""The names of the embedded graph engines, apart from the server address parser
(``backends.graph.address``): every command's line and configuration need these; only a
server's URL needs that parser."""

from __future__ import annotations

from backends.errors import InvalidGraphAddress
from backends.lean_typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Literal

    Engine = Literal["kuzu", "ladybug"]
else:  # annotations only (``typing`` is no import of a lean hook's): a name others import
    Engine = str
ENGINES: tuple[Engine, ...] = ("kuzu", "ladybug")
DEFAULT_ENGINE: Engine = "kuzu"


def check_engine(name: str) -> Engine:
    for engine in ENGINES:
        if name == engine:
            return engine
    raise InvalidGraphAddress(
        f"embedded graph engine must be one of {', '.join(ENGINES)}, not {name!r}")
