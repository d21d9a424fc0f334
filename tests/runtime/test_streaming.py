"""The stream guard: fenced code is held until it closes and is cleared; chunking never matters."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.runtime.detect.code import find_fences
from pedrag.runtime.detect.detector import AnswerKey, CodeMode, Detector
from pedrag.runtime.turn.streaming import DEFAULT_REPLACEMENT, StreamGuard

SOLUTION_FENCE = (
    "```python\ndef solve(n):\n    total = 0\n    for i in range(n):\n"
    "        total += i\n    return total\n```"
)
REPLY = f"Here is a hint. {SOLUTION_FENCE}\nDoes that help? Try it yourself."
SHORT_FENCE_REPLY = "Check it with ```py\nprint(xs)\n``` and see. Then carry on."
# A four-backtick fence quoting a three-backtick one: it closes only at four.
NESTED_FENCE_REPLY = "Look: ````md\n```\nx = foo(y)\n```\n```` and that is all."


def stream(text: str, cuts: Sequence[int], guard: StreamGuard) -> list[str]:
    """Feed ``text`` cut at ``cuts``; the outputs of every feed and of finish()."""
    bounds = [0, *sorted(set(cuts)), len(text)]
    outputs = [guard.feed(text[a:b]) for a, b in pairwise(bounds)]
    return [*outputs, guard.finish()]


def test_a_clean_reply_passes_through_unchanged() -> None:
    reply = "Good start! What do you get when you multiply 7 by 8? Take your time."
    assert "".join(stream(reply, [5, 20, 33], StreamGuard(Detector()))) == reply


def test_a_flagged_fence_is_replaced_and_the_rest_released() -> None:
    guard = StreamGuard(Detector(CodeMode.LENIENT))
    released = "".join(stream(REPLY, range(0, len(REPLY), 7), guard))
    assert released == f"Here is a hint. {DEFAULT_REPLACEMENT}\nDoes that help? Try it yourself."
    assert guard.verdict.rule_ids == ("code-fence",)
    assert [finding.rule_id for finding in guard.withheld] == ["code-fence"]
    withheld = guard.withheld[0]
    assert guard.text[withheld.start : withheld.end] == SOLUTION_FENCE


def test_a_cleared_fence_is_released_whole_once_it_closes() -> None:
    guard = StreamGuard(Detector(CodeMode.LENIENT))
    assert guard.feed("Check it with ``") == ""
    assert guard.feed("`py\nprint(xs)\n") == "Check it with "
    assert guard.feed("``") == ""  # the closing run may still grow
    assert guard.feed("` and see.") == "```py\nprint(xs)\n```"
    assert guard.finish() == " and see."
    assert not guard.verdict.flagged


def test_the_same_short_fence_is_replaced_in_strict_mode() -> None:
    released = "".join(stream(SHORT_FENCE_REPLY, [3, 17], StreamGuard(Detector(CodeMode.STRICT))))
    assert "print(xs)" not in released and DEFAULT_REPLACEMENT in released


def test_an_unclosed_fence_is_checked_as_is_at_the_end() -> None:
    reply = "Here:\n```python\ndef solve(n):\n    return sum(range(n))\n"
    guard = StreamGuard(Detector(CodeMode.STRICT))
    assert guard.feed(reply) == "Here:\n"
    assert guard.finish() == DEFAULT_REPLACEMENT + "\n"
    assert guard.verdict.rule_ids == ("code-fence",)


@pytest.mark.parametrize("reply", [REPLY, SHORT_FENCE_REPLY, NESTED_FENCE_REPLY])
@pytest.mark.parametrize("mode", [CodeMode.LENIENT, CodeMode.STRICT])
def test_a_fence_split_at_every_boundary_gives_the_same_result(reply: str, mode: CodeMode) -> None:
    fence = next(find_fences(reply))
    body = reply[fence.start + 3 : fence.end - 3]
    whole = StreamGuard(Detector(mode))
    expected = "".join(stream(reply, [], whole))
    for cut in range(len(reply) + 1):
        guard = StreamGuard(Detector(mode))
        first = guard.feed(reply[:cut])
        if cut <= fence.end:  # the closing run may still grow: nothing of the fence yet
            assert reply.startswith(first) and len(first) <= fence.start
            assert body.strip() not in first
        rest = guard.feed(reply[cut:]) + guard.finish()
        assert first + rest == expected, cut
        assert guard.verdict == whole.verdict


def test_a_three_way_split_of_the_opening_backticks_still_holds_the_fence() -> None:
    guard = StreamGuard(Detector(CodeMode.STRICT))
    outputs = [guard.feed(part) for part in ("Try `", "`", "`py\nx = foo(y)\n", "```", " ok.")]
    outputs.append(guard.finish())
    assert outputs[:4] == ["", "", "Try ", ""]
    assert "".join(outputs) == f"Try {DEFAULT_REPLACEMENT} ok."


def test_an_answer_sentence_is_withheld_when_an_answer_key_is_set() -> None:
    guard = StreamGuard(Detector(answer=AnswerKey("56")))
    released = "".join(stream("Nice try. The answer is 56. Can you see why?", [12, 30], guard))
    assert released == f"Nice try. {DEFAULT_REPLACEMENT} Can you see why?"
    assert guard.verdict.rule_ids == ("answer-reveal",)


def test_the_students_own_number_is_released() -> None:
    guard = StreamGuard(Detector(answer=AnswerKey("56")), student_message="is it 56?")
    reply = "Yes, 56 is right. Well done!"
    assert "".join(stream(reply, [4, 9], guard)) == reply
    assert not guard.verdict.flagged


def test_an_unfenced_run_of_code_lines_is_held_and_judged_as_a_block() -> None:
    code = "def solve(n):\n    total = 0\n    for i in range(n):\n        total += i\n"
    code += "    return total\n"
    guard = StreamGuard(Detector(CodeMode.LENIENT))
    outputs = stream(f"Here it is:\n{code}Good luck.", [], guard)
    assert "".join(outputs) == f"Here it is:\n{DEFAULT_REPLACEMENT}\nGood luck."


def test_feed_after_finish_is_an_error() -> None:
    guard = StreamGuard()
    guard.finish()
    with pytest.raises(RuntimeError):
        guard.feed("more")
    assert guard.finish() == ""


# --- property: chunking never changes what is released ----------------------------------

PROSE = [
    "Good thinking so far.",
    "What happens to the total when n grows?",
    "Let's look at the loop again!",
    "Try a small case first, like n = 3.",
    "Remember the base case.",
]


@st.composite
def fences(draw: st.DrawFn, index: int) -> str:
    marker = draw(st.sampled_from(["```", "````", "~~~"]))
    language = draw(st.sampled_from(["", "python", "cpp"]))
    lines = draw(
        st.lists(
            st.sampled_from(
                [
                    f"secret_{index} = compute_{index}(n)",
                    f"for item_{index} in range(n):",
                    f"    total_{index} += item_{index}",
                    f"return total_{index};",
                    f"int value_{index} = {index};",
                    "}",
                ]
            ),
            min_size=1,
            max_size=6,
        )
    )
    opening = ("\n" if marker == "~~~" else draw(st.sampled_from(["", " ", "\n"]))) + marker
    return opening + language + "\n" + "\n".join(lines) + "\n" + marker


@st.composite
def replies(draw: st.DrawFn) -> str:
    parts: list[str] = []
    for index in range(draw(st.integers(min_value=1, max_value=5))):
        kind = draw(st.sampled_from(["prose", "prose", "fence", "newline"]))
        if kind == "fence":
            parts.append(draw(fences(index)) + draw(st.sampled_from(["\n", " "])))
        elif kind == "newline":
            parts.append("\n")
        else:
            parts.append(draw(st.sampled_from(PROSE)) + " ")
    return "".join(parts)


@settings(max_examples=120, deadline=None)
@given(replies(), st.data(), st.sampled_from([CodeMode.LENIENT, CodeMode.STRICT]))
def test_any_chunking_releases_the_same_text_and_never_leaks_an_open_fence(
    reply: str, data: st.DataObject, mode: CodeMode
) -> None:
    cuts = data.draw(st.lists(st.integers(min_value=0, max_value=len(reply)), max_size=8))
    expected = "".join(stream(reply, [], StreamGuard(Detector(mode))))
    guard = StreamGuard(Detector(mode))
    bounds = [0, *sorted(set(cuts)), len(reply)]
    released = ""
    for a, b in pairwise(bounds):
        released += guard.feed(reply[a:b])
        for fence in find_fences(reply):
            if fence.end >= b:  # not closed (or closing may still grow): body not shown
                for line in fence.body.splitlines():
                    if line.strip() and line.strip() not in reply[: fence.start]:
                        assert line.strip() not in released
    released += guard.finish()
    assert released == expected
    assert guard.verdict == StreamGuard(Detector(mode)).detector.check(reply)


@pytest.mark.parametrize("cut", [1, 3, 7, 1000])
def test_an_indented_code_line_with_sentences_in_it_is_held_whole(cut: int) -> None:
    """An indented line is a line of code, not prose to release a sentence at a time: its
    pattern was anchored with "^", which ``match(text, pos)`` reads only at the start of the
    whole text, so "print('Adding. Then summing. Done')" went out from "Then" on, the run of
    code was cut in pieces judged apart, and a comment of sentences was released whole."""
    code = (
        "def solve(n):\n    print('Adding. Then summing. Done')\n    total = 0\n"
        "    for i in range(n):\n        total += i\n    return total\n"
    )
    reply = f"Here it is:\n{code}Good luck."
    guard = StreamGuard(Detector(CodeMode.STRICT))
    released = "".join(stream(reply, list(range(cut, len(reply), cut)), guard))
    assert released == f"Here it is:\n{DEFAULT_REPLACEMENT}\nGood luck."
    comment = "Here:\n    # Add them. Then return the sum. It works\n    total = sum(xs)\nGo on."
    guard = StreamGuard(Detector(CodeMode.STRICT))
    released = "".join(stream(comment, list(range(cut, len(comment), cut)), guard))
    assert "Add them" not in released and "It works" not in released
