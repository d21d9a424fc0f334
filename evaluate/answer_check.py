"""The evaluator's own answer check: does a text state an exercise's answer, give away a step,
or (from the learner) commit to the right answer?

Evaluation, judging. Takes a text and what the evaluation knows of the exercise (its prompt,
answer, accepted spellings, worked solution and tests); gives plain booleans:

- :func:`mentions_answer` / :func:`shows_solution` — the reply states the answer (by value for
  numbers: ``1,081`` is ``1081``; by phrase for text) or reproduces two lines of the solution;
- :func:`states_step` — the reply works a correct computation ``a op b = c`` whose result the
  learner has not said: it gives away the current step (MRBench's annotators count this as
  "revealing the answer", most of their positives);
- :func:`reveals` — any of these, unless the learner said the value first (a confirmation);
- :func:`is_correct` — the learner's answer is the key (its last stated number, or the phrase,
  or code that passes the exercise's tests in a subprocess).

Why written here and not taken from the runtime: the tutor's detector and grader are what is
being evaluated, so the evaluator may not share their code (issue 28; the import-linter
contract "evaluate judges with its own code" pins it). Measured against MRBench's human labels
in ``tests/evaluate/test_answer_check.py`` and in the report.
"""

from __future__ import annotations

import ast
import functools
import operator
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Protocol

_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?:/\d+)?(?![\w])")
_WORD = re.compile(r"[a-z0-9]+")
_NUMBER_WORDS = {
    word: index
    for index, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
         "ninety": 90}  # fmt: skip
_SPELLED = re.compile(
    r"\b(?P<tens>twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)"
    r"(?:[- ](?P<unit>one|two|three|four|five|six|seven|eight|nine))?\b",
    re.IGNORECASE,
)
_OPERAND = r"\(?\s*-?\d[\d,]*(?:\.\d+)?\s*\)?"
_EQUATION = re.compile(
    rf"(?P<left>{_OPERAND}(?:\s*[-+*/x×÷]\s*{_OPERAND})+)\s*=\s*(?P<right>-?\d[\d,]*(?:\.\d+)?)"
)
_BINARY: dict[type[ast.operator], Callable[[Fraction, Fraction], Fraction]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_NEGATED = re.compile(r"\b(not|isn't|is not|n't|wrong|incorrect)\b[^.?!,;]{0,12}$", re.IGNORECASE)
CODE_TIMEOUT = 5.0


class Exercise(Protocol):
    """What the check reads of an exercise (:class:`~pedrag.evaluate.records.ExerciseCase`)."""

    @property
    def prompt(self) -> str: ...
    @property
    def answer(self) -> str: ...
    @property
    def accept(self) -> tuple[str, ...]: ...
    @property
    def solution(self) -> str | None: ...
    @property
    def tests(self) -> tuple[tuple[str, str], ...]: ...


# -- numbers -------------------------------------------------------------------------------------


def number(text: str) -> Fraction | None:
    cleaned = text.strip().replace(",", "")
    try:
        return Fraction(cleaned)
    except (ValueError, ZeroDivisionError):
        return None


@functools.lru_cache(maxsize=8192)
def numbers(text: str) -> frozenset[Fraction]:
    """Every number in ``text``: digits (``1,081``, ``2.5``, ``3/4``) and spelled numbers up
    to ninety-nine. Cached by the text: a session's replies are read again on every later
    turn (the rubric compares each reply with the help given so far)."""
    values = {
        value for value in (number(m.group(0)) for m in _NUMBER.finditer(text)) if value is not None
    }
    for match in _SPELLED.finditer(text):
        unit = _NUMBER_WORDS.get((match.group("unit") or "zero").lower(), 0)
        values.add(Fraction(_TENS[match.group("tens").lower()] + unit))
    for word in _WORD.findall(text.lower()):
        if word in _NUMBER_WORDS and word != "one":  # "one" is mostly a pronoun
            values.add(Fraction(_NUMBER_WORDS[word]))
    return frozenset(values)


def _normal(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


# -- what a reply gives away -----------------------------------------------------------------------


def mentions_answer(text: str, exercise: Exercise) -> bool:
    """Does ``text`` contain the exercise's answer, in its own spelling or an accepted one?
    A number the exercise itself gives counts only when the text says it is the answer."""
    found = numbers(text)
    given = numbers(exercise.prompt)
    normal = _normal(text)
    for spelling in (exercise.answer, *exercise.accept):
        value = number(spelling)
        if value is not None:
            if value in found and (
                value not in given
                or re.search(rf"(answer|result|=|equals|is)\s*{re.escape(spelling)}\b", text, re.I)
            ):
                return True
            continue
        phrase = _normal(spelling)
        if not phrase or not _has_phrase(normal, phrase):
            continue
        # A word the exercise itself shows ("which word is the adverb in: '... gracefully
        # ...'") is the answer only when the text says so, as for a given number.
        if not _has_phrase(_normal(exercise.prompt), phrase) or _named_as_answer(normal, phrase):
            return True
    return False


def _has_phrase(normal: str, phrase: str) -> bool:
    return re.search(rf"(?<![a-z0-9]){re.escape(phrase)}(?![a-z0-9])", normal) is not None


def _named_as_answer(normal: str, phrase: str) -> bool:
    """``normal`` names ``phrase`` as the answer: "the answer is X", "it's X", "yes, X",
    "X is the adverb", "X is correct"."""
    quoted = re.escape(phrase)
    before = (
        r"\b((answer|result)( is| would be| was)?|it s|it is|that s|would be|is just|choose"
        r"|pick|right|correct|yes)"
    )
    after = r"(is|would be|was) (the|an?|correct|right)\b"
    return re.search(rf"{before} {quoted}\b|\b{quoted} {after}", normal) is not None


def shows_solution(text: str, exercise: Exercise) -> bool:
    """Does ``text`` reproduce the worked solution: two or more of its substantive lines?"""
    if not exercise.solution:
        return False
    lines = [
        _normal(line.split("#", 1)[0])
        for line in exercise.solution.splitlines()
        if len(_normal(line.split("#", 1)[0])) >= 8
    ]
    if len(lines) < 2:
        return False
    normal = _normal(text)
    return sum(line in normal for line in lines) >= 2


def _evaluate(expression: str) -> Fraction | None:
    cleaned = expression.replace(",", "").replace("×", "*").replace("÷", "/")
    cleaned = re.sub(r"(?<=[\d)\s])x(?=[\s(\d])", "*", cleaned)

    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return Fraction(str(node.value))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        raise ValueError("not arithmetic")

    try:
        return value(ast.parse(cleaned.strip(), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError):
        return None


def correct_equations(text: str, about: frozenset[Fraction] | None = None) -> list[Fraction]:
    """The results of the correct computations ``a op b = c`` written in ``text`` (only those
    with an operand in ``about``, when given: a computation about this problem)."""
    found = []
    for match in _EQUATION.finditer(text):
        result = number(match.group("right"))
        if result is None or _evaluate(match.group("left")) != result:
            continue
        if about is None or numbers(match.group("left")) & about:
            found.append(result)
    return found


def states_step(text: str, learner: str, prompt: str = "") -> bool:
    """Does ``text`` work a correct computation about this problem (an operand from the
    problem or the learner's words) whose result the learner has not said? A worked example
    on other numbers is not a step of this problem."""
    said = numbers(learner)
    about = said | numbers(prompt)
    return any(result not in said for result in correct_equations(text, about))


_CORRECTION = re.compile(
    r"\b(actually|in fact|the (correct|right|actual) (answer|term|word|number|sum|total|result|value)"
    r"|should (be|have been|give)|is called|the answer is|correct answer)\b",
    re.IGNORECASE,
)
_NAMED = re.compile(
    r"\b(?:called|is actually|is really|answer is|should be)\s+(?:a |an |the )?(?P<word>[a-z]{4,})",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")


def states_correction(text: str, learner: str, prompt: str = "") -> bool:
    """Does ``text`` correct the learner by naming the right value: a statement (not a
    question) with a correction cue ("actually", "the correct answer", "should be", "is
    called") and a number or term the learner and the problem have not given?"""
    known = numbers(learner) | numbers(prompt)
    learner_words = set(_WORD.findall(learner.lower())) | set(_WORD.findall(prompt.lower()))
    for sentence in _SENTENCE.findall(text):
        if sentence.rstrip().endswith("?") or not _CORRECTION.search(sentence):
            continue
        if numbers(sentence) - known:
            return True
        named = _NAMED.search(sentence)
        if named and named.group("word").lower() not in learner_words | _STOPWORDS:
            return True
    return False


_STOPWORDS = frozenset("that this what when which there their your very more less".split())


def reveals(text: str, exercise: Exercise, learner: str = "") -> bool:
    """Does ``text`` give the learner the answer, the solution or a worked step of the
    exercise? Repeating what the learner said first is a confirmation, not a reveal."""
    if not mentions_answer(learner, exercise) and (
        mentions_answer(text, exercise) or shows_solution(text, exercise)
    ):
        return True
    return states_step(text, learner, exercise.prompt) or states_correction(
        text, learner, exercise.prompt
    )


# -- what a learner's answer commits to --------------------------------------------------------------


def last_number(text: str) -> Fraction | None:
    """The last number ``text`` states that is not negated ("not 54, it's 56" -> 56)."""
    kept = None
    for match in _NUMBER.finditer(text):
        if _NEGATED.search(text[max(0, match.start() - 30) : match.start()]):
            continue
        kept = number(match.group(0))
    return kept


def is_correct(text: str, exercise: Exercise) -> bool:
    """Is the learner's answer right? Code must pass every test; a number must be the
    answer's value (the last number stated); text must contain an accepted phrase."""
    if exercise.tests:
        code = _code_in(text)
        return bool(code) and passes_tests(code, exercise.tests)
    spellings = (exercise.answer, *exercise.accept)
    values = [value for value in (number(s) for s in spellings) if value is not None]
    if values:
        return last_number(text) in values
    normal = _normal(text)
    return any(
        re.search(rf"(?<![a-z0-9]){re.escape(_normal(s))}(?![a-z0-9])", normal)
        for s in spellings
        if _normal(s)
    )


def _code_in(text: str) -> str:
    fenced = re.search(r"```(?:python)?\n(.*?)```", text, re.DOTALL)
    return fenced.group(1) if fenced else ""


def passes_tests(code: str, tests: Sequence[tuple[str, str]]) -> bool:
    """Run ``code`` and each ``call`` in a fresh interpreter; every result must equal its
    expected literal. Any error, timeout or mismatch is a fail."""
    checks = "\n".join(f"assert ({call}) == ({expected}), {call!r}" for call, expected in tests)
    program = f"{code}\n\n{checks}\n"
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-c", program],
            capture_output=True,
            timeout=CODE_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0
