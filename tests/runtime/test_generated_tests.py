"""Code written for an exercise's declared tests alone does not pass it: the grader also runs
the learner's function on inputs its author did not write, valued by the worked solution
(runtime/learning/generated_tests.py).

Before, a loop doing token work beside a table of the declared tests' answers was graded
correct on every shipped code exercise (red team T2's "found, not fixed"); each case below
passes the declared tests, as the first assertion of its test shows."""

from __future__ import annotations

import ast
from collections import Counter
from typing import Any

import pytest

from pedrag.runtime.learning import generated_tests as generated_module
from pedrag.runtime.learning.code_runner import run_tests
from pedrag.runtime.learning.generated_tests import COUNT, generated_tests
from pedrag.runtime.learning.grader import grade_exercise, grading_inputs
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

CODE_EXERCISES = (
    "sum_list_loop",
    "count_evens_loop",
    "max_list_loop",
    "count_char_loop",
    "running_product_loop",
)

# What each function computes, written here from the exercises' prompts, not from their
# solutions: the oracle the generated expected values are checked against.
ORACLE = {
    "sum_list_loop": lambda nums: sum(nums),
    "count_evens_loop": lambda nums: sum(1 for n in nums if n % 2 == 0),
    "max_list_loop": lambda nums: max(nums),
    "count_char_loop": lambda text: Counter(text)["a"],
    "running_product_loop": lambda nums: eval("*".join(map(str, nums)) or "1"),
}

# Each passes its exercise's declared tests, uses no forbidden name and has a loop that
# reads its variable: only other inputs tell it from the function.
WRITTEN_FOR_THE_TESTS = {
    "sum_list_loop": """def total(nums):
    seen = []
    for n in nums:
        seen.append(n)
    return {(1, 2, 3): 6, (): 0, (-4, 4, 10): 10}[tuple(seen)]""",
    "count_evens_loop": """def count_evens(nums):
    k = 0
    for n in nums:
        k += n
    return {10: 2, 0: 0, 16: 1}.get(k, 0)""",
    "max_list_loop": """def biggest(nums):
    last = None
    for n in nums:
        last = n
    return {2: 9, -7: -1, 4: 4}[last]""",
    "count_char_loop": """def count_a(text):
    out = ''
    for ch in text:
        out += ch
    return 3 if out == 'banana' else 0""",
    "running_product_loop": """def product(nums):
    n_items = 0
    for n in nums:
        n_items += n
    return {9: 24, 0: 1, 3: -10}[n_items]""",
}

# Right, and unlike the worked solutions.
RIGHT = {
    "sum_list_loop": """def total(nums):
    running = 0
    for i in range(len(nums)):
        running = running + nums[i]
    return running""",
    "count_evens_loop": """def count_evens(nums):
    count = 0
    for n in nums:
        if not n & 1:
            count += 1
    return count""",
    "max_list_loop": """def biggest(nums):
    best = None
    for n in nums:
        if best is None or n > best:
            best = n
    return best""",
    "count_char_loop": """def count_a(text):
    found = 0
    for letter in text:
        found += letter == 'a'
    return found""",
    "running_product_loop": """def product(nums):
    out = 1
    for n in reversed(nums):
        out *= n
    return out""",
}


@pytest.fixture(scope="module")
def exercises() -> dict[str, Any]:
    return {e.id: e for e in Tutor(store=MemoryStore()).curriculum.exercises}


@pytest.mark.parametrize("exercise_id", CODE_EXERCISES)
def test_each_code_exercise_gets_new_inputs_valued_as_its_function_would(
    exercises: dict[str, Any], exercise_id: str
) -> None:
    key, tests, rules = grading_inputs(exercises[exercise_id])
    extra = generated_tests(key.solution, tests, rules.forbid)
    assert len(extra) >= COUNT - 2
    declared = {call.replace(" ", "") for call, _ in tests}
    assert not declared & {call.replace(" ", "") for call, _ in extra}
    assert len({call for call, _ in extra}) == len(extra)
    for call, expect in extra:
        arguments = [ast.literal_eval(a) for a in ast.parse(call, mode="eval").body.args]  # type: ignore[attr-defined]
        assert ast.literal_eval(expect) == ORACLE[exercise_id](*arguments), call


@pytest.mark.parametrize("exercise_id", CODE_EXERCISES)
def test_code_written_for_the_declared_tests_is_wrong(
    exercises: dict[str, Any], exercise_id: str
) -> None:
    code = WRITTEN_FOR_THE_TESTS[exercise_id]
    _, tests, rules = grading_inputs(exercises[exercise_id])
    assert run_tests(code, tests, rules.forbid).passed  # what made it pass before
    grade = grade_exercise(f"```\n{code}\n```", exercises[exercise_id])
    assert grade.verdict == "wrong", grade.reason
    assert grade.run is not None and len(grade.run.outcomes) > len(tests)
    said = " ".join((*grade.facts, grade.reason))  # what the tutor may tell the learner
    for outcome in grade.run.outcomes[len(tests) :]:  # the drawn inputs stay hidden
        assert outcome.call not in said and outcome.call.split("(", 1)[1] not in said


@pytest.mark.parametrize("exercise_id", CODE_EXERCISES)
def test_right_code_unlike_the_solution_stays_correct(
    exercises: dict[str, Any], exercise_id: str
) -> None:
    grade = grade_exercise(f"```\n{RIGHT[exercise_id]}\n```", exercises[exercise_id])
    assert grade.verdict == "correct", grade.reason
    assert grade.facts[0].endswith(
        f"passes {len(grade.run.outcomes)} of {len(grade.run.outcomes)} tests"
    )  # type: ignore[union-attr]


def test_one_piece_of_code_gets_one_verdict_in_every_process(exercises: dict[str, Any]) -> None:
    key, tests, rules = grading_inputs(exercises["sum_list_loop"])
    first = generated_tests(key.solution, tests, rules.forbid)
    generated_module._generated.cache_clear()  # as a new process: drawn again from the seed
    assert generated_tests(key.solution, tests, rules.forbid) == first
    # another solution text draws other inputs
    other = generated_tests(key.solution + "\n", tests, rules.forbid)
    assert [call for call, _ in other] != [call for call, _ in first]


MEAN = "def mean(xs):\n    return sum(xs) / len(xs)"
FIRST = "def first(xs):\n    return xs[0]"


@pytest.mark.parametrize(
    ("solution", "tests", "expected"),
    [
        # no solution: the declared tests alone
        (None, (("first([1, 2])", "1"),), "none"),
        # a keyword argument, a non-literal argument, two functions: not one shape to draw from
        (FIRST, (("first(xs=[1])", "1"),), "none"),
        (FIRST, (("first(list(range(3)))", "0"),), "none"),
        (
            FIRST + "\ndef second(xs):\n    return xs[1]",
            (("first([1])", "1"), ("second([1, 2])", "2")),
            "none",
        ),
        # mixed kinds in one argument
        (FIRST, (("first([1])", "1"), ("first('ab')", "'a'")), "none"),
        # a float value is dropped, so a mean yields nothing
        (MEAN, (("mean([1, 2])", "1.5"), ("mean([4])", "4.0")), "none"),
        # a solution that fails its own declared test (or cannot run) values nothing
        (FIRST, (("first([3, 1])", "1"),), "none"),
        ("def first(xs):\n    return xs[", (("first([3, 1])", "3"),), "none"),
        # the solution refuses first([]): only non-empty lists are kept
        (FIRST, (("first([3, 1])", "3"), ("first([5])", "5")), "non-empty"),
    ],
)
def test_what_is_not_drawn(solution: str | None, tests: Any, expected: str) -> None:
    extra = generated_tests(solution, tests)
    if expected == "none":
        assert extra == ()
    else:
        assert extra and all("[]" not in call for call, _ in extra)
        for call, expect in extra:
            arguments = ast.literal_eval(call.removeprefix("first(").removesuffix(")"))
            assert ast.literal_eval(expect) == arguments[0]
