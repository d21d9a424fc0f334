"""The detector reads the exercise's prompt, the earlier turns and the student's message as
separate texts: a number never joins across the line between two of them. Read as one string,
a prompt ending in "fifty" and a message starting with "six" wrote 56 (number words read across
a line break), which then counted as a number already on the table: a reply stating 56 as a
step or in words was waived as a restatement, a missed reveal."""

from __future__ import annotations

from pedrag.runtime.detect.answer import find_numbers, student_states_answer
from pedrag.runtime.detect.detector import AnswerKey, Detector

PROMPT = "Seven friends share a box of stickers equally. The label on the box says fifty"


def test_number_words_do_join_across_a_line_break_so_texts_must_be_read_apart() -> None:
    # Why the separation is needed: one text read whole joins them (a reading, not a bug).
    assert [m.value for m in find_numbers("fifty\nsix")] == [56]


def test_a_number_split_between_the_prompt_and_the_message_is_not_a_given() -> None:
    """Arithmetic built only of givens restates the exercise; 56 is no given here (50 and 6
    are), so "56 / 7" hands the learner the hidden answer to evaluate."""
    detector = Detector(answer=AnswerKey("8", prompt=PROMPT))
    verdict = detector.check("Try 56 / 7.", student_message="six more were loose, I think")
    assert [f.rule_id for f in verdict.findings] == ["answer-reveal"]
    # The verdict does not depend on what the message starts with.
    assert detector.check("Try 56 / 7.", student_message="no idea").flagged


def test_a_number_split_between_the_prompt_and_earlier_turns_is_not_a_given() -> None:
    """A target the givens already state in words is waived when restated in words, unless
    stated as a result; 56 is not stated by a prompt ending "fifty" and earlier turns
    starting "six"."""
    detector = Detector(answer=AnswerKey("56", prompt=PROMPT))
    verdict = detector.check("Think of fifty-six.", context="six loose ones too")
    assert [f.rule_id for f in verdict.findings] == ["answer-reveal"]
    assert detector.check("Think of fifty-six.").flagged


def test_a_student_does_not_commit_to_a_number_the_join_would_make() -> None:
    """A message "56, so 8" names two candidates; with 56 read (wrongly) as a given, 8 was taken as the
    message's one candidate, and the message as a correct answer."""
    key = AnswerKey("8", prompt=PROMPT)
    assert not student_states_answer("56, so 8", key, context="six loose ones too")
    assert not student_states_answer("56, so 8", key)
    assert student_states_answer("so 8", key, context="six loose ones too")
