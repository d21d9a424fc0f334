"""Template wording without an exercise: the `{topic}` placeholder must still read as English."""

from __future__ import annotations

import pytest

from pedrag.runtime.turn.generator import fill_template


@pytest.mark.parametrize(
    ("template", "topic", "expected"),
    [
        ("In this {topic} problem, what is given?", "", "In this problem, what is given?"),
        (
            "What do you already know about {topic}?",
            "",
            "What do you already know about this topic?",
        ),
        (
            "In this {topic} problem, what is given?",
            "arithmetic",
            "In this arithmetic problem, what is given?",
        ),
        (
            "What do you already know about {topic}?",
            "photosynthesis",
            "What do you already know about photosynthesis?",
        ),
        ("Keep {braces} alone: {topic}.", "", "Keep {braces} alone: this topic."),
    ],
)
def test_topic_placeholder_reads_naturally_with_and_without_an_exercise(
    template: str, topic: str, expected: str
) -> None:
    assert fill_template(template, topic) == expected


def test_no_shipped_template_doubles_a_word_without_an_exercise() -> None:
    import re

    from pedrag.runtime.policy.theory_set import TheorySet

    for loaded in TheorySet.shipped().theories.values():
        for action in loaded.policy.actions.values():
            text = fill_template(action.template, "")
            assert not re.search(r"\b(\w+) \1\b", text, re.IGNORECASE), (action.name, text)


def test_a_noun_topic_followed_by_a_word_gets_this_topic() -> None:
    text = fill_template("Define the key term in {topic} in your own words.", "")
    assert text == "Define the key term in this topic in your own words."
