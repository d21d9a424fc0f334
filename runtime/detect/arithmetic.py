"""Arithmetic a reader evaluates in their head: "50 + 6", "60 - 4", "one less than 57",
"half of 112", "twice 28", "the sum of 50 and 6", "7 squared", "4 dozen and 8", "take 60 and
subtract 4".

Runtime stage 7, part of the answer pass (issue 26, item 3). Takes the canonical view of a
reply and the numbers the number reader found in it (anything with ``value``, ``start`` and
``end``: :class:`~pedrag.runtime.detect.answer.NumberMention`). Gives :class:`Expression` s:
the value of each expression, where it is, the operands it was built from, and whether the text
states it as a result ("the answer is 50 + 6").

Why: a model told to "just hint" writes the answer as a sum the student adds up at a glance;
the reader gets the answer as surely as from "56". Why bounded: an expression is a chain of at
most :data:`MAX_OPERANDS` numbers joined by operators, or one word operation on one or two
numbers, read left to right once, so a reply costs linear time. Which expressions count is the
caller's rule (``answer.py``): one whose operands are all givens of the prompt or the student's
own numbers restates the exercise and reveals nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

MAX_OPERANDS = 8
"""A chain longer than this is read as separate chains (no reply needs more to hint)."""
MAX_MAGNITUDE = Fraction(10) ** 15
"""Operands and results past this are not evaluated (``10 ** 10 ** 10`` costs nothing)."""


class _Number(Protocol):
    @property
    def value(self) -> Fraction: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


@dataclass(frozen=True)
class Expression:
    """One evaluated expression: ``text[start:end]`` reads ``value``."""

    value: Fraction
    start: int
    end: int
    operands: tuple[Fraction, ...]


_OPERATOR = re.compile(
    r"^\s*,?\s*\(?\s*(\+|-|\*|×|x|·|/|÷|plus|minus|times|multiplied\s+by|divided\s+by|over|"
    r"added\s+to|take\s+away|less|"
    # a step told as an instruction: "take 60 and subtract 4", "start at 50 and count up 6"
    r"(?:(?:and|then|and\s+then)\s+)?(?:add|subtract|take\s+away|"
    r"count\s+(?:up|on|forward|back|backwards?|down)(?:\s+by)?))\s*\(?\s*$",
    re.IGNORECASE,
)
_SUBTRACTS = re.compile(r"^(?:-|minus|take|less)$|subtract|take\s+away|back|down", re.IGNORECASE)
# Word operations on the number that follows: "half of 112", "twice 28", "the square of 7".
_PREFIX_OPERATION = re.compile(
    r"(?:(?P<half>\b(?:a\s+)?half\s+of(?:\s+the)?)"
    r"|(?P<third>\b(?:a|one)\s+third\s+of)"
    r"|(?P<quarter>\b(?:a|one)\s+quarter\s+of)"
    r"|(?P<double>\b(?:twice|double|doubled?))"
    r"|(?P<triple>\b(?:triple|thrice|three\s+times))"
    r"|(?P<root>\bsquare\s+root\s+of|\bsqrt\s*\(?)"
    r"|(?P<square>\b(?:the\s+)?square\s+of)"
    r"|(?P<next>\b(?:number|integer|one)\s+(?:right\s+)?after|\bone\s+more\s+than)"
    r"|(?P<previous>\b(?:number|integer|one)\s+(?:right\s+)?before|\bone\s+less\s+than))\s*$",
    re.IGNORECASE,
)
_PREFIX_WORDS = re.compile(
    r"half|third|quarter|twice|doubl|tripl|thrice|times|sqrt|square|after|before|than", re.I
)
_SIGNED = re.compile(r"minus\b|-", re.IGNORECASE)
_SUFFIX_OPERATIONS = re.compile(r"\s*(squared|cubed|doubled|halved|dozens?)\b", re.IGNORECASE)
# Operations on two numbers: "one less than 57", "6 more than 50", "the sum of 50 and 6".
_BETWEEN = re.compile(
    r"^\s*(?P<less>less|fewer|smaller|lower)\s+than\s*$"
    r"|^\s*(?P<more>more|greater|bigger|larger|higher)\s+than\s*$"
    r"|^\s*(?P<and>and|with)\s*$",
    re.IGNORECASE,
)
_PAIR_OPERATION = re.compile(
    r"\b(?:the\s+)?(sum|total|product|difference|quotient)\s+(?:of|between)\s*$", re.IGNORECASE
)


def _apply(name: str, value: Fraction) -> Fraction | None:
    if name == "half":
        return value / 2
    if name == "third":
        return value / 3
    if name == "quarter":
        return value / 4
    if name == "double":
        return value * 2
    if name == "triple":
        return value * 3
    if name == "square":
        return value * value
    if name == "next":
        return value + 1
    if name == "previous":
        return value - 1
    if name == "root":
        if value < 0 or value.denominator != 1:
            return None
        root = math.isqrt(value.numerator)
        return Fraction(root) if root * root == value else None
    return None


def evaluate_chain(operands: Sequence[Fraction], operators: Sequence[str]) -> Fraction | None:
    """``a op b op c`` with the usual precedence (* and / before + and -); None on x/0."""
    terms, signs = [operands[0]], []
    for operator, operand in zip(operators, operands[1:], strict=True):
        word = operator.lower().split()[0]
        if word in ("*", "×", "x", "·", "times", "multiplied"):
            terms[-1] *= operand
        elif word in ("/", "÷", "divided", "over"):
            if operand == 0:
                return None
            terms[-1] /= operand
        else:
            signs.append(-1 if _SUBTRACTS.search(operator) else 1)
            terms.append(operand)
    return terms[0] + sum(sign * term for sign, term in zip(signs, terms[1:], strict=True))


def _continued(
    text: str,
    value: Fraction,
    start: int,
    numbers: Sequence[_Number],
    position: int,
    end: int | None = None,
    counted: bool = False,
) -> Iterator[Expression]:
    """A word operation continued by an operator: "triple 18, plus 2", "8 squared minus 8";
    ``end``: where the operation's words end (after the number, for a suffix); ``counted``: a
    count of dozens, which "and" continues as "hundred and eight" does ("four dozen and 8")."""
    if position + 1 >= len(numbers):
        return
    following = numbers[position + 1]
    gap = text[numbers[position].end if end is None else end : following.start]
    operator = _OPERATOR.match(gap)
    word = operator.group(1) if operator is not None else None
    if word is None and counted and gap.strip().lower() == "and":
        word = "+"
    if word is not None and _small(following.value):
        result = evaluate_chain((value, following.value), (word,))
        if _small(result):
            assert result is not None
            operands = (numbers[position].value, following.value)
            yield Expression(result, start, following.end, operands)


_MAX_MAGNITUDE_INT = int(MAX_MAGNITUDE)


def _small(value: Fraction | None) -> bool:
    """``abs(value) <= MAX_MAGNITUDE``; for a Fraction (every value the readers give) compared
    on its integers, as ``|n/d| <= M`` is ``|n| <= M*d`` for its positive denominator: the
    Fraction comparison built two Fractions and was a third of reading a reply's arithmetic."""
    if value is None:
        return False
    if type(value) is Fraction:
        return abs(value.numerator) <= _MAX_MAGNITUDE_INT * value.denominator
    return abs(value) <= MAX_MAGNITUDE


def expressions(text: str, numbers: Sequence[_Number]) -> Iterator[Expression]:
    """Every expression in ``text`` built on ``numbers`` (in order of position)."""
    index = 0
    while index < len(numbers):  # chains: "50 + 6", "112 / 2", "7 x 4 + 7 x 4"
        first = numbers[index]
        operands, operators, last = [first.value], [], index
        while last + 1 < len(numbers) and len(operands) < MAX_OPERANDS:
            following = numbers[last + 1]
            gap = text[numbers[last].end : following.start]
            operator = _OPERATOR.match(gap)
            if operator is not None:
                operators.append(operator.group(1))
            elif not gap.strip() and following.value < 0 and _SIGNED.match(text, following.start):
                operators.append("+")  # "sixty minus four": the reader reads "minus four" as -4
            else:
                break
            operands.append(numbers[last + 1].value)
            last += 1
        if operators and all(_small(operand) for operand in operands):
            value = evaluate_chain(operands, operators)
            if _small(value):
                assert value is not None
                yield Expression(value, first.start, numbers[last].end, tuple(operands))
        index = last + 1
    for position, number in enumerate(numbers):
        if not _small(number.value):
            continue
        before = text[max(0, number.start - 40) : number.start]
        match = _PREFIX_OPERATION.search(before) if _PREFIX_WORDS.search(before) else None
        if match is not None and match.lastgroup is not None:
            result = _apply(match.lastgroup, number.value)
            if result is not None:
                start = number.start - len(before) + match.start()
                yield Expression(result, start, number.end, (number.value,))
                yield from _continued(text, result, start, numbers, position)
        suffix = _SUFFIX_OPERATIONS.match(text, number.end)
        if suffix is not None:
            word = suffix.group(1).lower()
            value = number.value
            result = {"squared": value * value, "cubed": value**3, "doubled": value * 2,
                      "halved": value / 2, "dozen": value * 12, "dozens": value * 12}[word]  # fmt: skip
            yield Expression(result, number.start, suffix.end(), (value,))
            if _small(result):
                counted = word.startswith("dozen")
                yield from _continued(
                    text, result, number.start, numbers, position, suffix.end(), counted
                )
        if position + 1 < len(numbers):
            following = numbers[position + 1]
            between = _BETWEEN.match(text[number.end : following.start])
            if between is None or not _small(following.value):
                continue
            pair = (number.value, following.value)
            if between.group("less"):
                yield Expression(following.value - number.value, number.start, following.end, pair)
            elif between.group("more"):
                yield Expression(following.value + number.value, number.start, following.end, pair)
            else:
                operation = _PAIR_OPERATION.search(text[max(0, number.start - 40) : number.start])
                if operation is None:
                    continue
                name = operation.group(1).lower()
                start = number.start - len(text[max(0, number.start - 40) : number.start])
                start += operation.start()
                a, b = pair
                result_of = {
                    "sum": a + b, "total": a + b, "product": a * b, "difference": abs(a - b),
                    "quotient": a / b if b else None,
                }  # fmt: skip
                result = result_of[name]
                if _small(result):
                    assert result is not None
                    yield Expression(result, start, following.end, pair)
