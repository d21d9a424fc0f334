"""Code too deep for Python's parser is refused, not a crash.

A learner's 3,000-term sum inside the loop of sum_list_loop ended the turn with a traceback:
`ast.parse` raises RecursionError (not SyntaxError) on a tree that deep, and the grader's
`forbid:` reading, the hint's step reading and the check's solution reading all parsed the
code with only SyntaxError in mind. One parser (`code_rules.parse_python`) now raises
`CodeTooDeep`, and each reader fails closed: the grader grades nothing ("could not be graded":
no credit, no attempt), the step reader reads no step, the check reports the solution.
"""

from __future__ import annotations

import ast
from typing import Any

import pytest

from pedrag.compiler.checks.solution_breaks_exercise import _broken
from pedrag.kernel.code_rules import CodeTooDeep, forbidden_use, missing_structure, parse_python
from pedrag.kernel.code_steps import steps
from pedrag.runtime.learning.grader import grade_exercise
from pedrag.runtime.llm.offline import QUOTE_MAX, grader_preface
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

DEEP = (
    "def total(nums):\n    result = 0\n    for n in nums:\n        result = "
    + "+".join(["n"] * 3000)
    + "\n    return result\n"
)


@pytest.fixture(scope="module")
def tutor() -> Tutor:
    return Tutor(store=MemoryStore())


@pytest.fixture(scope="module")
def exercises(tutor: Tutor) -> dict[str, Any]:
    return {e.id: e for e in tutor.curriculum.exercises}


def test_the_parser_says_too_deep_where_ast_parse_raises_recursion_error() -> None:
    with pytest.raises(RecursionError):
        ast.parse(DEEP)
    with pytest.raises(CodeTooDeep):
        parse_python(DEEP)
    assert parse_python("def f(:") is None  # not Python: the tests report it, as before
    with pytest.raises(CodeTooDeep):
        forbidden_use(DEEP, ["sum"])
    with pytest.raises(CodeTooDeep):
        missing_structure(DEEP, ["for"])
    assert steps(DEEP) == []


def test_the_grader_grades_deep_code_as_ungradable(exercises: dict[str, Any]) -> None:
    grade = grade_exercise(f"```python\n{DEEP}```", exercises["sum_list_loop"])
    assert grade.verdict == "error"
    assert any("nested too deeply" in fact for fact in grade.facts)


def test_a_turn_with_deep_code_answers_and_counts_no_attempt(tutor: Tutor) -> None:
    session = tutor.start("socratic", "sum_list_loop", seed=3)
    result = tutor.turn(session, f"```python\n{DEEP}```")
    assert "nested too deeply" in result.tutor
    assert tutor.turn(session, "I'm stuck").tutor  # the session goes on


def test_the_check_reports_a_solution_too_deep_to_read() -> None:
    assert _broken(DEEP, ["sum"], ["for"]) == (
        "cannot be read: the code is nested too deeply to read"
    )
    assert _broken("def total(nums):\n    return sum(nums)\n", ["sum"], ()) is not None


def test_a_long_wrong_answer_is_not_read_back() -> None:
    long = "1+" * 200 + "1"
    fact = f"the learner's answer '{long}' is not correct"
    assert grader_preface((fact,), long) == "Not quite, that isn't it."
    short = "54"
    assert grader_preface((f"the learner's answer '{short}' is not correct",), short) == (
        "Not quite: 54 isn't it."
    )
    assert len(long) > QUOTE_MAX
