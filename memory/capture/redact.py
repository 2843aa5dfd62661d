"""Secrets out of captured text, before anything is kept: a transcript holds the commands a
session ran and their output, and those carry tokens, keys and passwords.

Each shape is replaced by ``[REDACTED:<what>]``; the text around it stays, so an error line or a
command still reads. Shapes are the common ones (AWS, GitHub, OpenAI, Anthropic, Slack, Google
keys, JWTs, bearer and basic credentials, ``password=...`` assignments, private key blocks,
passwords in URLs); a secret of no known shape is not recognised. Control characters other than
tab and newline go too: a NUL cannot be stored in a memory at all."""

from __future__ import annotations

import re

from backends.patterns import lazy

_SOURCES: tuple[tuple[str, str, int], ...] = (
    ("private key",
     r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY"
     r"[A-Z ]*-----|\Z)", re.DOTALL),
    ("anthropic key", r"\bsk-ant-[A-Za-z0-9_-]{16,}", 0),
    ("openai key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", 0),
    ("github token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})", 0),
    ("aws key", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b", 0),
    ("slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", 0),
    ("google key", r"\bAIza[0-9A-Za-z_-]{35}", 0),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", 0),
    ("credentials", r"\b(?:bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{16,}", re.IGNORECASE),
    ("url password", r"(?<=://)[^\s/:@]+:[^\s/@]+(?=@)", 0),
    # password=..., "api_key": "...", SECRET_TOKEN: ...; the name kept, the value replaced
    ("password", r"""
    (\b[\w.-]*(?:passw(?:or)?d|passwd|pwd|secret|api[_-]?key|access[_-]?key|auth[_-]?token
      |access[_-]?token|private[_-]?key|client[_-]?secret)[\w.-]*['"]?\s*[=:]\s*)
    (?!\[REDACTED)(['"]?)([^\s'",;]{4,})\2""", re.IGNORECASE | re.VERBOSE),
)
"""each shape: what it is, its pattern and flags (compiled when first met: most text holds
none, and a Stop's few lines never compile them)"""
_SHAPES = tuple((what, lazy(pattern, flags)) for what, pattern, flags in _SOURCES[:-1])
_ASSIGNED = lazy(*_SOURCES[-1][1:])
_CONTROL = dict.fromkeys([*range(0x09), *range(0x0B, 0x20), 0x7F])
"""control characters but tab and newline, each removed (``str.translate``)"""


def _flags(flags: int) -> str:
    return "".join(letter for flag, letter in ((re.IGNORECASE, "i"), (re.DOTALL, "s"),
                                               (re.VERBOSE, "x")) if flags & flag)


_ANY = lazy("|".join(f"(?{_flags(flags)}:{pattern})" for _, pattern, flags in _SOURCES))
"""any of the shapes: most text holds none, and one scan says so"""
_CLUES = ("private key", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "akia",
          "asia", "agpa", "aida", "aroa", "anpa", "anva", "aipa", "xox", "aiza", "eyj", "bearer",
          "basic", "token", "://", "passw", "pwd", "secret", "apikey", "api_key", "api-key",
          "accesskey", "access_key", "access-key", "privatekey", "private_key", "private-key")
"""a piece of every shape, lower case: ASCII text holding none of them holds no secret. Some
substring searches cost a hundredth of ``_ANY``'s scan, a few ms for each file a session read"""


def redact(text: str) -> str:
    """``text`` with every secret of a known shape replaced, and control characters (a NUL)
    removed; text holding none comes back unchanged."""
    text = text.translate(_CONTROL)
    if text.isascii():  # beyond ASCII, a case-blind shape also meets letters like 'ſ' and 'K'
        lower = text.lower()
        if not any(clue in lower for clue in _CLUES):
            return text
    return replaced(text)


def replaced(text: str) -> str:
    """``text`` with every secret of a known shape replaced."""
    if not _ANY().search(text):
        return text
    for what, shape in _SHAPES:
        text = shape().sub(f"[REDACTED:{what}]", text)
    return _ASSIGNED().sub(lambda m: f"{m.group(1)}{m.group(2)}[REDACTED:password]{m.group(2)}",
                         text)
