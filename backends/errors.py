"""The one exception tree of dualmem. Callers catch these, never a driver's own errors.
The classes below the line of dashes live beside the code that raises them (named in brackets).

    DualmemError
    ├── InvalidEpisode        a field breaks the model's rules (group id, kind, name, body, time)
    ├── InvalidGraphAddress   a graph URL or engine name dualmem cannot use
    ├── BackendUnavailable    a layer cannot be opened; ``reason`` says why
    │   │                     ("not installed", "locked by another process", "corrupt", ...)
    │   ├── ServerUnreachable the graph server does not answer (reason "unreachable")
    │   └── GraphEmptied      the server's graph lost what it held since it was opened
    ├── StoreCorrupt          data on disk cannot be read; ``path`` names it
    ├── FileRefused           a file that is no regular file, a link, outside the home or too big
    ├── WriteFailed           no layer could make a write durable
    │   └── LockBusy          another writer held the lock too long  [fallback.disk]
    ├── MigrationError        a replay between layers could not complete or verify
    ├── ProviderFailed        a configured embedding or LLM endpoint did not answer usefully
    │   - - - - - - - - - - - -
    ├── KnowledgeError        a seed or project override that cannot be used  [seeds.knowledge]
    ├── ConfigError           an argument or variable that cannot be used  [memory.store.config]
    ├── HomeNotFound          no home in this folder or above it  [memory.store.home]
    ├── ForeignHome           a home found above that another user owns  [memory.store.home]
    ├── SettingsError         a setting kept in the home that is unusable  [memory.store.settings]
    ├── NoTranscripts         Claude Code holds no session of the project  [memory.capture.backfill]
    ├── NotAppendable         what a lean append leaves to the whole writer  [fallback.append]
    ├── DecisionError         an ADR that is missing or cannot move so  [memory.agent.decisions]
    ├── UnknownId             no memory's id is, or starts with, the one given  [curation.ids]
    │   └── NotForgotten      a memory to restore that is not forgotten  [memory.curation]
    ├── AmbiguousId           an id prefix several memories share  [curation.ids]
    ├── HookInputError        a hook's payload that is not Claude Code's  [memory.hooks]
    ├── DemoFailed            a step of ``dualmem demo`` did not do what it shows  [memory.demo]
    ├── UsageError            a command line that asks for the impossible  [memory.cli.base]
    ├── NotFound              an id or name the command cannot find  [memory.cli.base]
    └── FileArgumentError     a file named on the command line cannot be read  [memory.cli.base]
"""

from __future__ import annotations

import errno
import os

from backends.lean_typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import StrPath

OUT_OF_RESOURCES = "out of resources"
"""The reason of a ``BackendUnavailable`` for a sound layer this process lacks the memory,
address space or file handles to open (``ulimit -v``, ``-n``): not damage; it opens again once
the limit allows."""
_EXHAUSTED = frozenset({errno.ENOMEM, errno.EMFILE, errno.ENFILE, errno.EFBIG, errno.EAGAIN})


def out_of_resources(exc: BaseException) -> bool:
    """Whether ``exc`` says the process ran out of memory or file handles, or met its file size
    limit (by type and errno), rather than that what it read is damaged."""
    return isinstance(exc, MemoryError) or (isinstance(exc, OSError)
                                            and exc.errno in _EXHAUSTED)


class DualmemError(Exception):
    """Root of every error dualmem raises on purpose."""


class InvalidEpisode(DualmemError, ValueError):
    """An episode (or a field of one) breaks the model's rules; nothing was written."""


class BackendUnavailable(DualmemError):
    """A memory layer cannot be opened or used right now."""

    def __init__(self, layer: str, reason: str, detail: str = "") -> None:
        self.layer = layer
        self.reason = reason
        self.detail = detail
        suffix = f" ({detail})" if detail else ""
        super().__init__(f"{layer} layer unavailable: {reason}{suffix}")


class InvalidGraphAddress(DualmemError, ValueError):
    """A graph URL (``DUALMEM_GRAPH_URL``, ``--graph-url``, ``migrate --to``) or embedded engine
    name that dualmem cannot use; nothing was opened."""


class ServerUnreachable(BackendUnavailable):
    """The graph server at an address does not answer (refused, timed out, wrong password)."""

    REASON = "unreachable"

    def __init__(self, address: str, detail: str) -> None:
        super().__init__("graph", self.REASON, f"{address}: {detail}")
        self.address = address


class GraphEmptied(BackendUnavailable):
    """The graph on a server was emptied (the server restarted without its data, or the graph
    was dropped) since this process opened it: raised once, by the call that found it; the
    graph is then usable again, empty, and a journal can be replayed into it."""

    REASON = "emptied"

    def __init__(self, address: str, detail: str) -> None:
        super().__init__("graph", self.REASON, f"{address}: {detail}")
        self.address = address


class StoreCorrupt(DualmemError):
    """Data on disk cannot be read as what it claims to be."""

    def __init__(self, path: StrPath, detail: str) -> None:
        self.path = os.fspath(path)
        self.detail = detail
        super().__init__(f"{path}: {detail}")


class FileRefused(DualmemError, ValueError):
    """A file dualmem was asked to read or write is not one it can take safely: not a regular
    file, a symbolic link where none may be, outside the home, or over its size limit. Nothing
    was read from it or written to it."""

    def __init__(self, path: StrPath, reason: str) -> None:
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class WriteFailed(DualmemError):
    """Every layer refused a write; it is not stored anywhere."""


class MigrationError(DualmemError):
    """A replay from one layer into another failed or did not verify."""


class ProviderFailed(DualmemError):
    """A configured embedding or LLM provider failed or answered what cannot be used. Never
    needed for correctness: a write the graph could not take waits in the journal."""
