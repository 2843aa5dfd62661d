"""A sentence's lead-in ("Now let me ") is found by hand as its pattern finds it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory.capture.session import _FILLERS, _LEAD_IN, _LEAD_INS, lead_in

PIECES = st.sampled_from([*_FILLERS, *_LEAD_INS, "Now", "OK", "Let's", "I'LL", "We Need To",
                          "lets", "i'", "let", "me", "okay,", "now.", "go", "the", "a.py",
                          ",", "!", ".", ":", " ", "  ", "\t", "\n", "\x0b", "\x1c", "\x85",
                          "\u212a", "ſ", "é", "", "-"])


def by_pattern(text: str) -> int:
    found = _LEAD_IN().match(text)
    return found.end() if found else 0


@given(st.lists(PIECES, max_size=12).map("".join) | st.text(max_size=30))
def test_a_lead_in_is_found_by_hand_as_the_pattern_finds_it(text: str) -> None:
    assert lead_in(text) == by_pattern(text)


def test_a_lead_in_of_fillers_and_a_phrase_ends_at_what_the_sentence_is_about() -> None:
    for text in ("Now let me route the writes", "OK, great! I'll route the writes",
                 "Okay.\tNext,  we need to route the writes"):
        assert text[lead_in(text):] == "route the writes" == text[by_pattern(text):]
    assert lead_in("Let me") == lead_in("Now, let's") == lead_in("Nowlet me go") == 0
