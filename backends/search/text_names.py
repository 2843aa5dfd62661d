"""What free text names, by its shape alone: file paths, dotted module names, identifiers in
backticks, CamelCase names and shell commands, conservatively (``text_entities``). Apart from
``backends.search.entities`` (which makes entities of them), so that a hook that only asks
whether a command names a file pays for ``re`` alone."""

from __future__ import annotations

import re
from collections.abc import Iterator

MAX_SCAN_CHARS = 20_000  # free text read per episode: the extractor's cost stays bounded

_EXTENSIONS = (
    "py|pyi|ts|tsx|js|jsx|mjs|cjs|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|scala|sh|sql|"
    "md|rst|json|yaml|yml|toml|ini|cfg|lock|html|css|scss|vue|svelte|proto|tf|dockerfile"
)
_PATH = re.compile(
    rf"(?<![\w/.@-])(?:\.{{0,2}}/)?(?:[\w.-]+/)*[\w-]+(?:\.[\w-]+)*\.(?:{_EXTENSIONS})(?![\w/])"
    # without an extension, only what cannot be prose ("and/or"): ./x, x/y/z, x/
    r"|(?<![\w/.@-])(?:\.{1,2}/[\w.-]+(?:/[\w.-]+)*|[\w-]+(?:/[\w.-]+){2,}|[\w.-]+/)(?![\w/])"
)
_MODULE = re.compile(r"(?<![\w.])[a-z_][a-z0-9_]{1,}(?:\.[a-z_][a-z0-9_]+){1,}(?![\w.(])")
_BACKTICK = re.compile(r"`([^`\n]{2,80})`")
_CAMEL = re.compile(r"(?<![\w.])(?:[A-Z][a-z0-9]+){2,}[A-Za-z0-9]*(?![\w])"
                    r"|(?<![\w.])[a-z]+(?:[A-Z][a-z0-9]+)+(?![\w])")
# Outside backticks only tools whose name is no English word ("make a difference" is prose).
_TOOLS = ("npm", "pnpm", "yarn", "npx", "pytest", "cargo", "pip", "uv", "docker",
          "git", "ruff", "mypy", "dualmem", "kubectl", "terraform", "gradle", "mvn", "tox",
          "alembic")
_COMMANDS = (*_TOOLS, "poetry", "make", "go", "python", "node", "bundle", "rake", "bun", "deno")
_COMMAND = re.compile(rf"(?<![\w/.-])(?:{'|'.join(_TOOLS)})(?: [\w:./=-]+){{1,2}}(?![\w])")
_IDENTIFIER = re.compile(r"[A-Za-z_][\w]*(?:(?:\.|::)[A-Za-z_]\w*)*(?:\(\))?")
_NOT_MODULES = frozenset({"e.g", "i.e", "etc.al", "vs.code"})


def text_entities(text: str) -> Iterator[tuple[str, str]]:
    """(label, name) of what free text names, conservatively, in order of appearance."""
    text = text[:MAX_SCAN_CHARS]
    found: list[tuple[int, str, str]] = []
    taken: list[tuple[int, int]] = []

    def claim(match: re.Match[str], label: str, name: str) -> None:
        start, end = match.span()
        if any(s < end and start < e for s, e in taken):
            return
        taken.append((start, end))
        found.append((start, label, name))

    for match in _BACKTICK.finditer(text):
        inner = match.group(1).strip()
        label = _label_of(inner)
        if label is not None:
            claim(match, label, inner.removesuffix("()") if label == "Component" else inner)
    for pattern, label in ((_COMMAND, "Command"), (_PATH, "File"), (_MODULE, "Module"),
                           (_CAMEL, "Component")):
        for match in pattern.finditer(text):
            name = match.group(0).rstrip(".")
            if label == "Module" and (name in _NOT_MODULES or _looks_like_host(name)):
                continue
            if label == "File" and "/" not in name and "." not in name:
                continue
            claim(match, label, name)
    for _start, label, name in sorted(found):
        yield label, name


def _label_of(inner: str) -> str | None:
    if _COMMAND.fullmatch(inner) or (inner.split(" ", 1)[0] in _COMMANDS and " " in inner):
        return "Command"
    if _PATH.fullmatch(inner):
        return "File"
    if _MODULE.fullmatch(inner):
        return "Module"
    if _IDENTIFIER.fullmatch(inner):
        return "Component"
    return None


def _looks_like_host(name: str) -> bool:
    return name.rsplit(".", 1)[-1] in {"com", "org", "net", "io", "dev", "ai", "app"}
