"""JSON as a read parses (and prints) it: the standard library's, not orjson.

Importing orjson runs its module init, which imports dataclasses (with inspect, ast, dis,
tokenize), uuid (with platform), datetime and json: about a sixth of a one-shot search. A read
parses a few small documents, where the standard library's C scanner is as good; writes keep
orjson, imported where they write. ``loads`` refuses what orjson refuses and the standard
library would take (NaN and Infinity, a number past a double's range, bytes that are not
UTF-8, nesting past the stack, an escaped surrogate that is not half of a pair), and gives an
integer past 64 bits as orjson does (a float), with the same ``JSONDecodeError`` (orjson's is a
subclass of it), so callers catch one error.
"""

from __future__ import annotations

import json

from backends.lean_typing import TYPE_CHECKING
from backends.patterns import lazy

if TYPE_CHECKING:
    from typing import Any

JSONDecodeError = json.JSONDecodeError


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _whole(text: str) -> int | float:
    number = int(text)  # past 64 bits, orjson gives the float
    return number if -(2**63) <= number < 2**64 else float(text)


def _finite(text: str) -> float:
    number = float(text)
    if number in (float("inf"), float("-inf")):
        raise ValueError(f"number is infinity when parsed as double: {text}")
    return number


_DECODER = json.JSONDecoder(parse_int=_whole, parse_float=_finite, parse_constant=_no_constant)
_SURROGATE_ESCAPE = lazy(r"\\u[dD][89a-fA-F]")


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """``data`` parsed as JSON; ``JSONDecodeError`` where it is not JSON."""
    text = data if isinstance(data, str) else ""
    try:
        if not isinstance(data, str):
            text = bytes(data).decode()  # UTF-8 only, as orjson (not UTF-16/32 sniffing)
        elif not text.isascii():
            text.encode()  # a surrogate, unescaped in the text, is no UTF-8 either
        value = _DECODER.decode(text)
        # Only an escape makes a surrogate (bytes that are UTF-8 hold none), and most documents
        # have none: no walk through them.
        if "\\u" in text and _holds_a_surrogate(value):
            at = match.start() if (match := _SURROGATE_ESCAPE().search(text)) else 0
            raise JSONDecodeError("lone surrogate in string", text, at)
        return value
    except JSONDecodeError:
        raise
    except (UnicodeDecodeError, UnicodeEncodeError) as exc:
        raise JSONDecodeError(f"not valid UTF-8 ({exc.reason})", text, exc.start) from None
    except (ValueError, RecursionError) as exc:  # not UTF-8, a constant, nested too deep
        raise JSONDecodeError(str(exc) or type(exc).__name__, text, 0) from None


def _holds_a_surrogate(value: Any) -> bool:
    """Does a string in ``value`` hold a lone surrogate (no UTF-8 for it)? Without recursion: a
    document nested as deep as the parser allows is walked too."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode()
                except UnicodeEncodeError:
                    return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def dumps(value: Any) -> str:
    """``value`` (plain JSON data) as compact JSON text, characters unescaped: the text
    orjson writes for it (a float may be spelled otherwise: 1e-05, not 0.00001), for what a
    read prints."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
