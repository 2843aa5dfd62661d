"""A read parses JSON with the standard library (``backends.json_read``), a write writes it
with orjson: the two agree on everything the codec writes, and the reader refuses what orjson
refuses, with the error every caller catches."""

from __future__ import annotations

import json
from collections.abc import Callable

import orjson
import pytest
from contract.episodes import make
from hypothesis import given, settings
from hypothesis import strategies as st

from backends import json_read
from backends.errors import InvalidEpisode
from backends.model import Episode
from fallback import codec

# JSON data as a memory's body may hold it (orjson writes no lone surrogate, nor an integer
# past 64 bits, nor NaN: it refuses them).
TEXT = st.text(st.characters(codec="utf-8"))
SCALARS = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | TEXT
FLOATS = st.floats(allow_nan=False, allow_infinity=False)


def json_data(scalars: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(TEXT, inner, max_size=4), max_leaves=20)


VALUES = json_data(SCALARS | FLOATS)


@settings(max_examples=200)
@given(body=VALUES, name=TEXT)
def test_the_reader_parses_what_the_codec_writes_as_orjson_does(body: object, name: str) -> None:
    episode = Episode.create(group_id="g", kind="gotcha", name=f"a memory {name!r}"[:300],
                             body=body if isinstance(body, dict | list) else {"value": body})
    written = codec.encode(episode)
    assert json_read.loads(written) == orjson.loads(written)
    assert codec.decode(written) == episode
    assert json_read.loads(episode.body) == orjson.loads(episode.body) == episode.data


@settings(max_examples=200)
@given(body=VALUES, name=TEXT, text=TEXT)
def test_the_codec_writes_the_bytes_orjson_writes(body: object, name: str, text: str) -> None:
    for episode in (Episode.create(group_id="g", kind="gotcha", name=f"a {name!r}"[:300],
                                   body=body if isinstance(body, dict | list) else {"v": body}),
                    Episode.create(group_id="g", kind="note", name="n",
                                   body=text.replace("\x00", "") or "-")):
        written = codec.encode(episode)
        document = orjson.loads(written)  # in the codec's order
        assert document == {"format": codec.FORMAT, **episode.to_json()}
        assert written == orjson.dumps(document,
                                       option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


@settings(max_examples=200)
@given(json_data(SCALARS))
def test_what_a_read_prints_is_what_orjson_writes(value: object) -> None:
    assert json_read.dumps(value) == orjson.dumps(value).decode()


@given(VALUES)
def test_what_a_read_prints_reads_back_alike(value: object) -> None:
    # A float may be spelled otherwise (1e-05, orjson 0.00001): the same number.
    assert orjson.loads(json_read.dumps(value)) == value


@pytest.mark.parametrize("data", [
    b"NaN", b"[Infinity]", b'{"a": -Infinity}',  # the standard library takes these
    b'"\xff"', '"caf\u00e9"'.encode("utf-16"),  # not UTF-8 (the standard library sniffs)
    b"[" * 100_000 + b"]" * 100_000,  # past the stack
    b"", b"{", b'{"a": 1} x', b"\xef\xbb\xbf{}",  # not JSON; a byte-order mark
    # a lone surrogate, escaped (no UTF-8 for it), in a value or a key, or unescaped in text:
    b'"\\ud800"', b'"\\udc00"', b'["\\ud800\\u0041"]', b'{"\\udbff": 1}', '"\ud800"',
])
def test_the_reader_refuses_what_orjson_refuses(data: bytes | str) -> None:
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(data)
    with pytest.raises(json_read.JSONDecodeError):
        json_read.loads(data)


# Any code point, surrogates too: written escaped, a surrogate pair reads as one character and
# a lone one is refused; written unescaped in a str, any surrogate is refused.
ANY_TEXT = st.text(st.characters(codec=None, categories=None)
                   | st.integers(0xD800, 0xDFFF).map(chr), max_size=8)


def outcome(loads: Callable[[bytes | str], object], data: bytes | str) -> tuple[bool, object]:
    try:
        return True, loads(data)
    except json.JSONDecodeError:  # orjson's is one too
        return False, None


@settings(max_examples=300)
@given(json_data(st.none() | st.integers(-(2**63), 2**64 - 1) | ANY_TEXT))
def test_the_reader_and_orjson_agree_on_any_string_escaped_or_not(value: object) -> None:
    escaped = json.dumps(value, ensure_ascii=True)
    assert outcome(json_read.loads, escaped.encode()) == outcome(orjson.loads, escaped.encode())
    unescaped = json.dumps(value, ensure_ascii=False)
    assert outcome(json_read.loads, unescaped) == outcome(orjson.loads, unescaped)


def test_a_file_orjson_would_refuse_is_still_an_unreadable_episode() -> None:
    written = codec.encode(make()).replace(b'"kind"', b'"nan": NaN, "kind"')
    with pytest.raises(codec.UnreadableEpisode, match="not JSON"):
        codec.decode(written)
    with pytest.raises(InvalidEpisode, match="Invalid JSON"):
        Episode.model_validate_json(b'{"id": Infinity}')
