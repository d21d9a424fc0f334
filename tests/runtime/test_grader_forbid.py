"""An exercise that says "without calling sum()" (`forbid: [sum]`) is not solved by code that
uses it, whatever its tests say. A learner's own variable named `sum` counts too, and the
feedback says to rename it: whether a `sum` means the builtin depends on scope and order,
which a learner could arrange (`def total(nums, sum=sum)`, `x = sum` before `sum = 0`).

Before, `return sum(nums)` passed the shipped sum_list_loop's three tests and was graded
correct, and `return max(nums)` the same on max_list_loop. Then a spelling the reading of the
code cannot see (`builtins.__dict__["mus"[::-1]]`) still passed: the forbidden builtins are now
withheld from the code when it runs as well.
"""

from __future__ import annotations

from typing import Any

import pytest

from pedrag.runtime.learning.code_runner import run_tests
from pedrag.runtime.learning.grader import forbidden_use, grade_exercise
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor


@pytest.fixture(scope="module")
def exercises() -> dict[str, Any]:
    return {e.id: e for e in Tutor(store=MemoryStore()).curriculum.exercises}


LOOP = """def total(nums):
    result = 0
    for n in nums:
        result += n
    return result"""
OWN_VARIABLE = """def total(nums):
    sum = 0
    for n in nums:
        sum += n
    return sum"""

AROUND = [
    "def total(nums):\n    return sum(nums)",
    "def total(nums):\n    s = sum\n    return s(nums)",
    "import builtins\ndef total(nums):\n    return builtins.sum(nums)",
    "from builtins import sum as add\ndef total(nums):\n    return add(nums)",
    'def total(nums):\n    return eval("su" + "m")(nums)',
    'import builtins\ndef total(nums):\n    return getattr(builtins, "sum")(nums)',
    'def total(nums):\n    return __builtins__.__dict__["sum"](nums)',
    "def total(nums, sum=sum):\n    return sum(nums)",
    "x = sum\nsum = 0\ndef total(nums):\n    return x(nums)",
    "def total(nums):\n    sum, s = 0, sum\n    return s(nums)",
    "def total(nums):\n    return sum(n for n in nums)",
]


@pytest.mark.parametrize("code", AROUND)
def test_code_that_uses_the_forbidden_name_is_wrong_though_its_tests_pass(
    exercises: dict[str, Any], code: str
) -> None:
    result = grade_exercise(f"```python\n{code}\n```", exercises["sum_list_loop"])
    assert result.verdict == "wrong", result
    assert "forbids" in result.reason
    assert result.candidate is not None and result.candidate.startswith("code:")


def test_a_loop_is_still_correct(exercises: dict[str, Any]) -> None:
    assert grade_exercise(f"```python\n{LOOP}\n```", exercises["sum_list_loop"]).verdict == (
        "correct"
    )


def test_a_variable_named_sum_is_told_to_be_renamed(exercises: dict[str, Any]) -> None:
    result = grade_exercise(f"```python\n{OWN_VARIABLE}\n```", exercises["sum_list_loop"])
    assert result.verdict == "wrong"
    assert "the name `sum`" in result.reason and "rename" in result.facts[0]


def test_max_is_forbidden_where_the_exercise_says_so(exercises: dict[str, Any]) -> None:
    code = "def biggest(nums):\n    return max(nums)"
    assert grade_exercise(code, exercises["max_list_loop"]).verdict == "wrong"


def test_without_a_forbid_list_nothing_is_forbidden() -> None:
    assert forbidden_use("def f(x):\n    return sum(x)", ()) is None
    assert forbidden_use("eval('1')", ()) is None
    assert forbidden_use("def f(:", ("sum",)) is None  # does not parse: the tests report it


def test_the_shipped_solutions_keep_their_own_rules(exercises: dict[str, Any]) -> None:
    forbidding = [e for e in exercises.values() if getattr(e, "forbid", None)]
    assert {e.id for e in forbidding} >= {"sum_list_loop", "max_list_loop"}
    for exercise in forbidding:
        assert exercise.solution and forbidden_use(exercise.solution, exercise.forbid) is None


# Spellings a reading of the syntax tree sees only by their way around (`__dict__`): a string
# built at run time, looked up in the builtins' namespace. Each passed all three tests of
# sum_list_loop and was graded correct; now refused as read, and withheld when run as well.
UNSEEN = [
    'import builtins\ndef total(nums):\n    return builtins.__dict__["mus"[::-1]](nums)',
    'import sys\ndef total(nums):\n    return sys.modules["builtins"].__dict__["su" + "m"](nums)',
    'import builtins\nadd = builtins.__dict__["".join(["s", "u", "m"])]\ndef total(nums):\n'
    "    return add(nums)",
]


@pytest.mark.parametrize("code", UNSEEN)
def test_a_forbidden_builtin_is_withheld_from_the_running_code(
    exercises: dict[str, Any], code: str
) -> None:
    assert forbidden_use(code, ("sum",)) == "`__dict__` (a way around the rule)"
    result = grade_exercise(f"```python\n{code}\n```", exercises["sum_list_loop"])
    assert result.verdict == "wrong", result
    # and the running code finds no sum, whatever the reading saw
    tests = (("total([1, 2, 3])", "6"),)
    assert run_tests(code, tests).passed  # the builtin is there when not withheld
    assert not run_tests(code, tests, ("sum",)).passed


def test_withholding_a_builtin_leaves_the_others_and_other_exercises_alone(
    exercises: dict[str, Any],
) -> None:
    uses_len = "def total(nums):\n    result = 0\n    for i in range(len(nums)):\n" + (
        "        result += nums[i]\n    return result"
    )
    assert grade_exercise(uses_len, exercises["sum_list_loop"]).verdict == "correct"
    uses_sum = "def biggest(nums):\n    best = nums[0]\n    for n in nums:\n" + (
        "        if n > best:\n            best = n\n    return best + sum([])"
    )
    assert grade_exercise(uses_sum, exercises["max_list_loop"]).verdict == "correct"
