"""An exercise that says "using a for loop" (`require: [for]`) is not solved by code without
one, and its `forbid:` list covers the obvious equivalents of what it rules out.

Before, the shipped sum_list_loop ("returns the sum ... using a for loop, without calling
sum()") was graded correct for `math.fsum(nums)`, `functools.reduce(operator.add, nums, 0)`,
`itertools.accumulate`, a while loop and recursion: its tests pass and only `sum` was
forbidden. max_list_loop passed `sorted(nums)[-1]`, count_char_loop ("not text.count")
`text.count('a')`, running_product_loop `math.prod(nums)`.
"""

from __future__ import annotations

from typing import Any

import pytest

from pedrag.runtime.learning.grader import forbidden_use, grade_exercise, missing_structure
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor


@pytest.fixture(scope="module")
def exercises() -> dict[str, Any]:
    return {e.id: e for e in Tutor(store=MemoryStore()).curriculum.exercises}


def _fenced(code: str) -> str:
    return f"```python\n{code}\n```"


NOT_THE_EXERCISE = [
    ("sum_list_loop", "import math\ndef total(nums):\n    return math.fsum(nums)"),
    ("sum_list_loop", "from math import fsum\ndef total(nums):\n    return fsum(nums)"),
    (
        "sum_list_loop",
        "import functools, operator\ndef total(nums):\n"
        "    return functools.reduce(operator.add, nums, 0)",
    ),
    (
        "sum_list_loop",
        "import itertools\ndef total(nums):\n    return ([0] + list(itertools.accumulate(nums)))[-1]",
    ),
    (
        "sum_list_loop",
        "import statistics\ndef total(nums):\n"
        "    return statistics.fmean(nums) * len(nums) if nums else 0",
    ),
    (
        "sum_list_loop",
        "def total(nums):\n    result = 0\n    i = 0\n    while i < len(nums):\n"
        "        result += nums[i]\n        i += 1\n    return result",
    ),
    ("sum_list_loop", "def total(nums):\n    return nums[0] + total(nums[1:]) if nums else 0"),
    (
        "sum_list_loop",
        "import math\ndef total(nums):\n    for n in nums:\n        pass\n    return math.fsum(nums)",
    ),
    (
        "sum_list_loop",
        "def total(nums):\n    result = 0\n    [result := result + n for n in nums]\n"
        "    return result",
    ),
    ("sum_list_loop", "from math import *\ndef total(nums):\n    return fsum(nums)"),
    ("sum_list_loop", "import math\ndef total(nums):\n    return math.__dict__['fs' + 'um'](nums)"),
    ("max_list_loop", "def biggest(nums):\n    return sorted(nums)[-1]"),
    ("max_list_loop", "def biggest(nums):\n    nums.sort()\n    return nums[-1]"),
    ("count_char_loop", "def count_a(text):\n    return text.count('a')"),
    (
        "count_char_loop",
        "def count_a(text):\n    for ch in text:\n        ch\n    return text.count('a')",
    ),
    ("count_char_loop", "def count_a(text):\n    return sum(1 for ch in text if ch == 'a')"),
    ("running_product_loop", "import math\ndef product(nums):\n    return math.prod(nums)"),
    ("count_evens_loop", "def count_evens(nums):\n    return len([n for n in nums if n % 2 == 0])"),
]


@pytest.mark.parametrize(("exercise", "code"), NOT_THE_EXERCISE)
def test_code_that_is_not_the_exercise_is_wrong_though_its_tests_pass(
    exercises: dict[str, Any], exercise: str, code: str
) -> None:
    result = grade_exercise(_fenced(code), exercises[exercise])
    assert result.verdict == "wrong", result
    assert result.candidate is not None and result.candidate.startswith("code:")


THE_EXERCISE = [
    (
        "sum_list_loop",
        "def total(nums):\n    result = 0\n    for n in nums:\n        result += n\n    return result",
    ),
    (
        "max_list_loop",
        "def biggest(nums):\n    best = nums[0]\n    i = 1\n    while i < len(nums):\n"
        "        if nums[i] > best:\n            best = nums[i]\n        i += 1\n    return best",
    ),
    (
        "count_char_loop",
        "def count_a(text):\n    count = 0\n    for ch in text:\n        if ch == 'a':\n"
        "            count += 1\n    return count",
    ),
    (
        "count_evens_loop",
        "def count_evens(nums):\n    n = 0\n    while True:\n        break\n"
        "    for x in nums:\n        n += x % 2 == 0\n    return n",
    ),
]


@pytest.mark.parametrize(("exercise", "code"), THE_EXERCISE)
def test_a_loop_that_does_the_work_is_correct(
    exercises: dict[str, Any], exercise: str, code: str
) -> None:
    # a learner's own variable named `count` is no way to text.count: only a builtin's name is
    # refused as a variable
    assert grade_exercise(_fenced(code), exercises[exercise]).verdict == "correct"


def test_the_feedback_names_the_missing_loop(exercises: dict[str, Any]) -> None:
    code = "def total(nums):\n    return nums[0] + total(nums[1:]) if nums else 0"
    result = grade_exercise(_fenced(code), exercises["sum_list_loop"])
    assert "for loop" in result.reason and "for loop" in result.facts[0]


@pytest.mark.parametrize(
    ("code", "require", "missing"),
    [
        ("for n in xs:\n    pass", ("for",), "for loop"),  # its variable never read
        ("for n in xs:\n    print(n)", ("for",), None),
        ("while x:\n    x -= 1", ("while",), None),
        ("while x:\n    y = 1", ("while",), "while loop"),  # its condition never changes
        ("while True:\n    break", ("loop",), None),
        ("[n for n in xs]", ("loop",), "loop"),
        ("def f(:", ("for",), None),  # does not parse: the tests report it
        ("x = 1", (), None),
    ],
)
def test_a_required_loop_is_one_that_works(
    code: str, require: tuple[str, ...], missing: str | None
) -> None:
    assert missing_structure(code, require) == missing


def test_a_library_name_is_forbidden_as_used_not_as_a_variable() -> None:
    assert forbidden_use("count = 0\ncount += 1", ("count",)) is None
    assert forbidden_use("n = text.count('a')", ("count",)) == "the name `count`"
    assert forbidden_use("sum = 0", ("sum",)) == "the name `sum`"  # a builtin: any use


def test_the_shipped_solutions_meet_their_requirements(exercises: dict[str, Any]) -> None:
    coded = [e for e in exercises.values() if e.tests]
    assert {e.id for e in coded if e.require} >= {
        "sum_list_loop",
        "max_list_loop",
        "count_char_loop",
        "count_evens_loop",
        "running_product_loop",
    }
    for exercise in coded:
        assert exercise.solution
        assert missing_structure(exercise.solution, exercise.require) is None, exercise.id
        assert forbidden_use(exercise.solution, exercise.forbid) is None, exercise.id
