"""Configuration as one value object, read from the environment in one place (``from_env``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from backends.errors import DualmemError
from backends.graph.engine_names import DEFAULT_ENGINE, Engine, check_engine
from backends.graph.provider_names import DEFAULT, NAMED
from backends.lean_typing import TYPE_CHECKING, NamedTuple
from backends.model import DEFAULT_MAX_BODY_BYTES
from memory.store.home import HOME_DIR, SAFE_HOMES, absolute, check_owner, discover_home

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Literal, Self, TypedDict, Unpack

    from _typeshed import StrPath

    from backends.graph.address import ServerAddress  # its parser loads only when a URL is set

    BackendChoice = Literal["auto", "graph", "file"]

    class Choices(TypedDict, total=False):
        """What a caller of ``Config.from_env`` asks for (``Config.fields_from_env``)."""

        home: StrPath | None
        backend: str | None
        cwd: StrPath | None
        graph_url: str | None
        graph_engine: str | None
        embedder: str | None
        llm: str | None

    class ConfigFields(TypedDict):
        """A ``Config``'s fields, its home as text (``Config.fields_from_env``)."""

        home: str
        backend: BackendChoice
        max_body_bytes: int
        graph_engine: Engine
        graph_url: ServerAddress | None
        embedder: Provider | None
        llm: Provider | None

BACKEND_CHOICES: tuple[BackendChoice, ...] = ("auto", "graph", "file")


FILES = "files"
"""the journal's folder in the home (``Config.files_dir``)"""
LOCAL = "local:"
"""``local:FOLDER`` or ``local:NAME`` (a model of the user's model cache): a sentence-embedding
model run on this machine (``dualmem[semantic]``, ``backends.graph.local_model``)"""


class ConfigError(DualmemError):
    """A setting (argument or environment variable) has a value dualmem cannot use."""


class Provider(NamedTuple):
    """A model of a provider graphiti has a client for (``provider``, a name of
    ``provider_names.NAMED``): by default an OpenAI-compatible endpoint, OpenAI's own (no
    ``url``), or a local Ollama, vLLM, LM Studio, ... Written ``[NAME:]MODEL[@URL]`` in the
    environment, the home's settings and on the command line; an embedder may also be a model
    on this machine, ``local:FOLDER`` or ``local:NAME`` (``LOCAL``)."""

    model: str
    url: str | None = None
    key: str | None = None
    dimension: int | None = None
    """an embedder's vector size (default: graphiti's, 1024)"""
    provider: str = DEFAULT

    def __repr__(self) -> str:  # the key stays out of logs and tracebacks
        return (f"Provider(provider={self.provider!r}, model={self.model!r}, url={self.url!r}, "
                f"dimension={self.dimension})")

    @classmethod
    def parse(cls, spec: str, *, what: str, key: str | None = None,
              dimension: str | None = None, environ: Mapping[str, str] | None = None
              ) -> Self:
        """``[NAME:]MODEL[@URL]``; ``what`` names the setting in errors. The key is ``key``,
        else the provider's own variable in ``environ``; a local endpoint needs none (the SDK
        still wants one: "none" is sent)."""
        if spec.strip().startswith(LOCAL):  # a model on this machine: no endpoint, no key
            if what != "DUALMEM_EMBEDDER" or not spec.strip().removeprefix(LOCAL):
                raise ConfigError(f"{what}: {LOCAL}FOLDER or {LOCAL}NAME names an embedder "
                                  f"only, not {spec!r}")
            return cls(spec.strip(), dimension=_dimension(dimension, what))
        name, colon, rest = spec.strip().partition(":")
        # "llama3:8b@URL" is a model of the default provider: only a known name is one
        name, rest = (name, rest) if colon and name in NAMED else (DEFAULT, spec.strip())
        named = NAMED[name]
        model, at, url = rest.partition("@")
        if not model or (at and not url.startswith(("http://", "https://"))):
            raise ConfigError(f"{what} must be [NAME:]MODEL or MODEL@http(s)://HOST/..., "
                              f"not {spec!r}")
        if not (named.embeds if what == "DUALMEM_EMBEDDER" else named.answers):
            role = "embedder" if what == "DUALMEM_EMBEDDER" else "LLM"
            able = [n for n, p in NAMED.items() if (p.embeds if role == "embedder" else p.answers)]
            raise ConfigError(f"{what}: {name} has no {role} (one of: {', '.join(able)})")
        if at and not named.takes_url:
            raise ConfigError(f"{what}: {name} takes no @URL, not {spec!r}")
        endpoint = url or named.url
        key = key or (environ or {}).get(named.key_variable or "") or None
        if named.key_variable and not key and not endpoint:
            raise ConfigError(f"{what} {model!r} is {name}'s: set its key ({what}_KEY or "
                              f"{named.key_variable}), or give the URL of a local endpoint")
        return cls(model, endpoint, key or "none", _dimension(dimension, what), name)


def _dimension(given: str | None, what: str) -> int | None:
    if not given:
        return None
    if not given.isdigit() or int(given) <= 0:
        raise ConfigError(f"{what} dimension must be a positive whole number, not {given!r}")
    return int(given)


# A NamedTuple, not a dataclass: the dataclasses module imports inspect (with ast, dis and
# tokenize), a tenth of a one-shot search, and every command builds a Config.
class _Fields(NamedTuple):
    home: Path
    backend: BackendChoice = "auto"
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    graph_engine: Engine = DEFAULT_ENGINE
    """the embedded engine of the home's graph (when there is no ``graph_url``); by default
    ``engines.default``, Kùzu (a test run on LadybugDB sets it)"""
    graph_url: ServerAddress | None = None
    """a FalkorDB server's graph instead of an embedded one: every process writes it directly"""
    embedder: Provider | None = None
    """graphiti's embedder at this endpoint makes the graph's vectors (default: the built-in,
    offline one); changing it asks for ``dualmem reembed``"""
    llm: Provider | None = None
    """graphiti's LLM extraction at this endpoint adds entities and facts to free-text
    memories, in the background and on ``dualmem enrich`` (default: none; the deterministic
    extraction always runs)"""


class Config(_Fields):
    """Where the home is and what serves it; ``_replace`` for a changed copy."""

    __slots__ = ()

    def __new__(cls, home: StrPath, backend: BackendChoice = "auto",
                max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, graph_engine: Engine | None = None,
                graph_url: ServerAddress | None = None, embedder: Provider | None = None,
                llm: Provider | None = None) -> Self:
        from pathlib import Path  # here: a lean Stop reads its ``fields_from_env`` alone

        # The engine's default is read when a Config is made: a test run may have changed it.
        engine = _default_engine() if graph_engine is None else graph_engine
        return super().__new__(cls, Path(home), backend, max_body_bytes, engine, graph_url,
                               embedder, llm)

    @property
    def files_dir(self) -> Path:
        return self.home / FILES

    @property
    def graph_dir(self) -> Path:
        """the embedded graph's folder; each engine has its own (their files differ), so a home
        can be moved from one to the other and keep the old one until it is proven"""
        return self.engine_dir(self.graph_engine)

    def engine_dir(self, engine: Engine) -> Path:
        return self.home / ("graph" if engine == DEFAULT_ENGINE else f"graph-{engine}")

    @property
    def project_file(self) -> Path:
        return self.home / "project.json"

    @property
    def ledger_file(self) -> Path:
        """the migration ledger: what was replayed from where, for resume and status"""
        return self.home / "migration" / "ledger.sqlite3"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **asked: Unpack[Choices]
                 ) -> Self:
        """The configuration ``fields_from_env`` reads."""
        return cls(**cls.fields_from_env(environ, **asked))

    @staticmethod
    def fields_from_env(environ: Mapping[str, str] | None = None, **asked: Unpack[Choices]
                        ) -> ConfigFields:
        """A ``Config``'s fields, its home as text (a lean Stop, ``memory.capture.later``, reads
        them without ``pathlib``).

        Explicit arguments win over ``DUALMEM_HOME`` / ``DUALMEM_BACKEND`` /
        ``DUALMEM_MAX_BODY_BYTES`` / ``DUALMEM_GRAPH_URL`` / ``DUALMEM_GRAPH_ENGINE`` /
        ``DUALMEM_EMBEDDER`` / ``DUALMEM_LLM`` (each ``[NAME:]MODEL[@URL]``; keys in
        ``DUALMEM_EMBEDDER_KEY`` / ``DUALMEM_LLM_KEY``, else the provider's own variable,
        ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ...; ``DUALMEM_EMBEDDER_DIMENSION``), and
        those over the home's ``config.json`` (graph URL, embedder and LLM; a server's password
        from ``DUALMEM_GRAPH_PASSWORD`` or the home's ``graph-password`` when the URL has none:
        ``memory.store.settings``). Without either,
        the home is the nearest ``.dualmem/`` in ``cwd`` (default: the working folder) or its
        parents, else ``cwd/.dualmem``; one found so that belongs to another user raises
        ``ForeignHome`` unless ``DUALMEM_SAFE_HOMES`` lists it. A bad graph URL or engine
        raises ``InvalidGraphAddress``."""
        home, backend, cwd = asked.get("home"), asked.get("backend"), asked.get("cwd")
        graph_url, graph_engine = asked.get("graph_url"), asked.get("graph_engine")
        embedder, llm = asked.get("embedder"), asked.get("llm")
        env = os.environ if environ is None else environ
        here = os.getcwd() if cwd is None else absolute(cwd)
        chosen = backend or env.get("DUALMEM_BACKEND") or "auto"
        if chosen not in BACKEND_CHOICES:
            choices = ", ".join(BACKEND_CHOICES)
            raise ConfigError(f"backend must be one of {choices}, not {chosen!r}")
        raw_limit = env.get("DUALMEM_MAX_BODY_BYTES", str(DEFAULT_MAX_BODY_BYTES))
        try:
            limit = int(raw_limit)
        except ValueError:
            raise ConfigError(
                f"DUALMEM_MAX_BODY_BYTES must be a whole number, not {raw_limit!r}"
            ) from None
        if limit <= 0:
            raise ConfigError("DUALMEM_MAX_BODY_BYTES must be positive")
        named = home or env.get("DUALMEM_HOME")
        found = None if named else discover_home(here)
        if found is not None:
            check_owner(found, env.get(SAFE_HOMES, ""))
        root = absolute(os.path.expanduser(named or found or os.path.join(here, HOME_DIR)))
        kept = _settings(root)  # `dualmem config set`: what the project committed
        engine = graph_engine or env.get("DUALMEM_GRAPH_ENGINE") or None
        url = graph_url or env.get("DUALMEM_GRAPH_URL") or (
            None if engine is not None else kept.get("graph_url"))
        if url is not None and engine is not None:
            raise ConfigError("a graph URL and an embedded graph engine exclude each other: "
                              "set DUALMEM_GRAPH_URL (--graph-url) or DUALMEM_GRAPH_ENGINE "
                              "(--graph-engine), not both")
        providers = {}
        for what, given in (("DUALMEM_EMBEDDER", embedder), ("DUALMEM_LLM", llm)):
            spec = given or env.get(what) or kept.get(what.removeprefix("DUALMEM_").lower())
            providers[what] = None if not spec else Provider.parse(
                spec, what=what, key=env.get(f"{what}_KEY"),
                dimension=env.get(f"{what}_DIMENSION"), environ=env)
        return dict(
            home=root,
            backend=chosen,
            max_body_bytes=limit,
            graph_engine=check_engine(engine) if engine is not None else _default_engine(),
            graph_url=_server(url, root, env) if url is not None else None,
            embedder=providers["DUALMEM_EMBEDDER"],
            llm=providers["DUALMEM_LLM"],
        )


def _default_engine() -> Engine:
    """``engines.default``. Only a process that imported its module (the graph's, a test run's)
    can have changed it: a lean hook's, which imports none of the graph, need not load it."""
    engines = sys.modules.get("backends.graph.kuzu.engines")
    default: Engine = DEFAULT_ENGINE if engines is None else engines.default
    return default


def _settings(home: StrPath) -> dict[str, str]:
    """``read_settings``: a home that keeps none (most) needs no import of its module."""
    try:
        os.lstat(os.path.join(home, "config.json"))
    except (FileNotFoundError, NotADirectoryError):  # what read_settings reads as none
        return {}
    from memory.store.settings import read_settings

    return read_settings(home)


def _server(url: str, home: StrPath, environ: Mapping[str, str]) -> ServerAddress:
    """The server ``url`` names, with the password the environment or the home gives."""
    # Here: only a server's URL needs the parser (its module costs every command ~1 ms).
    from backends.graph.address import parse_server_url
    from memory.store.settings import with_password

    return with_password(parse_server_url(url), home, environ)
