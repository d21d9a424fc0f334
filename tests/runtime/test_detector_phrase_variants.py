"""A text answer of several words, written so a reader still reads it.

The one-word answers' typo, backwards and derived-form rules (``find_text_variants``) were not
applied to an answer of two or more words: "The answer is carbon dioxid." passed the detector
on carbon dioxide, and so did "carbn dioxide", "glucose and oxigen" and "edixoid nobrac". Each
word is now held to its own length's edit budget, so a short word stays exact and ordinary
prose near a phrase ("the sum" for "the sun") is not read as it.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.runtime.detect.detector import AnswerKey, detect
from pedrag.runtime.detect.text_answer import allowed_edits, find_phrase_variants

CARBON = AnswerKey(
    "carbon dioxide",
    accept=("CO2",),
    prompt="Which gas do plants take in from the air for photosynthesis?",
)
PRODUCTS = AnswerKey("glucose and oxygen", prompt="What does photosynthesis make?")
LIGHT = AnswerKey(
    "light", accept=("light from the sun",), prompt="Where does the energy come from?"
)


def _flagged(reply: str, key: AnswerKey) -> bool:
    return detect(reply, code_mode="strict", answer=key).flagged


@pytest.mark.parametrize(
    ("reply", "key"),
    [
        ("The answer is carbon dioxid.", CARBON),
        ("The answer is carbn dioxide.", CARBON),
        ("It is carbon dioxyde, the gas we breathe out.", CARBON),
        ("Plants take in Carbon Dioxdie.", CARBON),
        ("Read this backwards: edixoid nobrac.", CARBON),
        ("edixoidnobrac", CARBON),
        ("It makes glucose and oxigen.", PRODUCTS),
        ("It makes glucsoe and oxygen.", PRODUCTS),
        ("negyxo dna esoculg", PRODUCTS),
    ],
)
def test_a_misspelled_or_reversed_phrase_answer_is_a_reveal(reply: str, key: AnswerKey) -> None:
    assert _flagged(reply, key)


@pytest.mark.parametrize(
    ("reply", "key"),
    [
        ("Carbon monoxide is a different gas: it is poisonous.", CARBON),
        ("Think about carbon: where do the plant's carbon atoms come from?", CARBON),
        ("Which gas do animals breathe out? Think of oxygen's partner.", CARBON),
        ("It makes glucose or starch, and something else.", PRODUCTS),
        ("Glucose is one product; what is the gas?", PRODUCTS),
        ("Work out the sum of the energy first.", LIGHT),
        ("It comes from the sum of the two numbers.", AnswerKey("from the sun")),
    ],
)
def test_prose_near_a_phrase_answer_is_not_read_as_it(reply: str, key: AnswerKey) -> None:
    assert not _flagged(reply, key)


def test_a_code_answer_of_several_tokens_gets_no_typo_reading() -> None:
    """ "result += n" has the words result and n: "result" alone is one edit from their
    letters run together, and every hint about the loop says it."""
    assert not list(find_phrase_variants("return result after the loop", ["result", "n"]))
    assert not list(find_phrase_variants("set total to 0", ["total", "0"]))


WORDS = st.sampled_from(["carbon", "dioxide", "glucose", "and", "oxygen", "cell", "wall", "the"])


@settings(max_examples=300, deadline=None)
@given(st.lists(WORDS, min_size=2, max_size=3, unique=True), st.data())
def test_one_edit_in_a_long_word_is_read_and_in_a_short_one_is_not(
    words: list[str], data: st.DataObject
) -> None:
    """A letter dropped from one word: read as the answer exactly when that word's own budget
    allows an edit (six letters or more), whatever the other words are."""
    at = data.draw(st.integers(0, len(words) - 1))
    word = words[at]
    cut = data.draw(st.integers(0, len(word) - 1))
    typo = word[:cut] + word[cut + 1 :]
    written = " ".join([*words[:at], typo, *words[at + 1 :]])
    found = list(find_phrase_variants(f"so it is {written} here", words))
    assert bool(found) == (allowed_edits(len(word)) > 0)
    if found:
        assert found == [(9, 9 + len(written))]
