"""The first slip in a learner's written working: a step that does not check out.

Runtime, diagnosis before probing (issue 27). Takes the learner's message; gives the first
arithmetic step it states that is wrong, quoted as the learner wrote it, or "". Two kinds of
step are read: an equation between numbers (``23 x 40 = 820``, ``49 + 7 = 57``, chains such as
``38 + 40 = 78 + 7 = 86`` step by step) and a counting-on list (``7, 14, 21, 28, 35, 42, 49,
57``: equal steps but one). Numbers are read exactly (fractions, no floating point), so a step
is wrong only when it really is. Nothing here judges the final answer: that is the grader's;
this only points at where the working went off, so the tutor can say "check this step" instead
of probing in general.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction

_NUMBER = r"-?\d+(?:\.\d+)?"
_OPERATOR = r"[-+*/x×÷]"
# a op b (= c)+ : an expression of two numbers, then one or more results
_EQUATION = re.compile(
    rf"(?<![\w.])({_NUMBER})\s*({_OPERATOR})\s*({_NUMBER})((?:\s*=\s*{_NUMBER}"
    rf"(?:\s*{_OPERATOR}\s*{_NUMBER})?)+)"
)
_RESULT = re.compile(rf"=\s*({_NUMBER})(?:\s*({_OPERATOR})\s*({_NUMBER}))?")
_LIST = re.compile(rf"(?<![\w.])({_NUMBER}(?:\s*(?:,|->|→)\s*{_NUMBER}){{3,}})(?![\w.])")


def _apply(left: Fraction, operator: str, right: Fraction) -> Fraction | None:
    if operator == "+":
        return left + right
    if operator == "-":
        return left - right
    if operator in "*x×":
        return left * right
    if right == 0:
        return None
    return left / right


def _equation_slip(message: str) -> str:
    for match in _EQUATION.finditer(message):
        value = _apply(Fraction(match.group(1)), match.group(2), Fraction(match.group(3)))
        shown = f"{match.group(1)} {match.group(2)} {match.group(3)}"
        for result in _RESULT.finditer(match.group(4)):
            stated = Fraction(result.group(1))
            if value is None or stated != value:
                return f"{shown} = {result.group(1)}"
            if result.group(2):  # the chain goes on from the stated result: 78 + 7 = 85
                value = _apply(stated, result.group(2), Fraction(result.group(3)))
                shown = f"{result.group(1)} {result.group(2)} {result.group(3)}"
    return ""


def _list_slip(message: str) -> str:
    for match in _LIST.finditer(message):
        numbers = [Fraction(n) for n in re.findall(_NUMBER, match.group(1))]
        steps = [b - a for a, b in zip(numbers, numbers[1:], strict=False)]
        common = max(set(steps), key=steps.count)
        if steps.count(common) < len(steps) - 1 or common == 0:
            continue  # not a counting-on list with one step off
        for index, step in enumerate(steps):
            if step != common:
                texts = re.findall(_NUMBER, match.group(1))
                return f"{texts[index]} to {texts[index + 1]}"
    return ""


_WORDED = {"times": "x", "plus": "+", "minus": "-", "divided by": "/"}
_ASKED_STEP = re.compile(
    rf"(?<![\w.])({_NUMBER})\s*(times|plus|minus|divided by|{_OPERATOR})\s*({_NUMBER})(?![\w.])"
)


@functools.lru_cache(maxsize=512)
def step_values(text: str) -> tuple[str, ...]:
    """The values of the calculations a hint asks for ("what is 7 times 4?" -> "28"), as
    written numbers: a learner who states one has done that step. Kept by text: the texts
    are the curriculum's hints, read for every hint on every turn (`material.steps_done`)."""
    out: list[str] = []
    for match in _ASKED_STEP.finditer(text):
        operator = _WORDED.get(match.group(2), match.group(2))
        value = _apply(Fraction(match.group(1)), operator, Fraction(match.group(3)))
        if value is not None and value.denominator == 1:
            out.append(str(value.numerator))
    return tuple(out)


@functools.lru_cache(maxsize=512)  # as step_values: read for every hint on every turn
def asked_values(hint: str, solution: str, results: tuple[str, ...]) -> tuple[str, ...]:
    """The values a hint asks the learner to work out: its calculation's (`step_values`), or,
    for a hint that asks a question with no calculation in it ("Add the tens to 38 first. What
    do you get?"), the worked solution's steps on a number the hint names whose value is one
    of the solution's intermediate ``results`` ("38 + 40" in "38 + 47 = 38 + 40 + 7 = 78 + 7 =
    85": "78"). Before, such a hint recorded no value, and the learner who did the step it
    asked for had an attempt counted against them."""
    calculated = step_values(hint)
    if calculated or "?" not in hint:
        return calculated
    from pedrag.runtime.learning.answer_reader import canonical, numbers

    named = {number.value for number in numbers(canonical(hint))}
    out: list[str] = []
    for match in _ASKED_STEP.finditer(solution):
        left, right = Fraction(match.group(1)), Fraction(match.group(3))
        if not {left, right} & named:
            continue
        value = _apply(left, _WORDED.get(match.group(2), match.group(2)), right)
        if value is not None and value.denominator == 1 and str(value.numerator) in results:
            out.append(str(value.numerator))
    return tuple(dict.fromkeys(out))


def correct_step(message: str, value: str) -> str:
    """The step of the learner's working that checks out and gives ``value`` ("23 x 40 = 920"
    for "920"), or "": a value graded as a wrong final answer may be a right step on the way.
    The message is read as the grader reads it (`answer_reader.canonical`: number and operator
    words), so "7 times 4 is 28", "seven fours are 28" and "4 x 7 makes 28" are steps as "7 x
    4 = 28" is; read as written only, each was a wrong answer 28. The step is quoted as
    written when it is written as an equation, else as read ("7 * 4 = 28")."""
    try:
        wanted = Fraction(value.strip())
    except (ValueError, ZeroDivisionError):
        return ""
    from pedrag.runtime.learning.answer_reader import canonical  # the one number-words reader

    return _step_giving(message, wanted) or _step_giving(canonical(message), wanted)


def _step_giving(message: str, wanted: Fraction) -> str:
    for match in _EQUATION.finditer(message):
        result = _apply(Fraction(match.group(1)), match.group(2), Fraction(match.group(3)))
        shown = f"{match.group(1)} {match.group(2)} {match.group(3)}"
        for stated in _RESULT.finditer(match.group(4)):
            if result is None or Fraction(stated.group(1)) != result:
                break
            if result == wanted:
                return f"{shown} = {stated.group(1)}"
            if not stated.group(2):
                break
            result = _apply(result, stated.group(2), Fraction(stated.group(3)))
            shown = f"{stated.group(1)} {stated.group(2)} {stated.group(3)}"
    return ""


def first_slip(message: str) -> str:
    """The first step of the learner's working that does not check out, as written, or "". A
    step in words ("seven times four is 26") is read as the grader reads it, as `correct_step`
    reads one (`answer_reader.canonical`), and quoted as read ("7 * 4 = 26"): read as written
    only, a worded slip went unseen and the tutor probed in general."""
    from pedrag.runtime.learning.answer_reader import canonical  # the one number-words reader

    return _equation_slip(message) or _equation_slip(canonical(message)) or _list_slip(message)
