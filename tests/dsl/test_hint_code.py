"""`hint_code:`: the statement of a programming exercise's solution each hint's step writes,
checked against the solution when the file loads and read in the learner's code by one rule
(`kernel/code_steps.py`)."""

from __future__ import annotations

import pytest

from pedrag.dsl.loader import load_text
from pedrag.kernel.code_steps import has_step, solution_step, steps

SOLUTION = (
    "def total(nums):\n    result = 0\n    for n in nums:\n        result += n\n    return result\n"
)

_FILE = """\
pedrag: 1
kind: curriculum
id: c
goals:
  - {id: loops, domain: programming, topic: python_loops, concept: "A loop repeats."}
exercises:
  - id: sum_it
    goal: loops
    language: python
    prompt: Write total(nums) with a for loop.
    answer: "result += n"
    solution: |
      def total(nums):
          result = 0
          for n in nums:
              result += n
          return result
    hints: ["Set a running total before the loop.", "Add each number to it.", "Return it."]
    hint_code: CODE
"""


def test_hint_code_the_solution_writes_loads() -> None:
    loaded = load_text(_FILE.replace("CODE", '["result = ___", "result += n", ""]'), "c.yaml")
    assert loaded.ok, [d.message for d in loaded.diagnostics]


@pytest.mark.parametrize(
    ("code", "said"),
    [
        ('["result = 1"]', "`hint_code` 1 ('result = 1') is not one statement"),
        ('["x = (", ""]', "`hint_code` 1 ('x = (') is not one statement"),
        ('["", "", "", "return result"]', "`hint_code` has 4 statements for 3 hints"),
    ],
)
def test_hint_code_the_solution_does_not_write_is_a_clear_error(code: str, said: str) -> None:
    loaded = load_text(_FILE.replace("CODE", code), "c.yaml")
    assert not loaded.ok
    assert any(said in d.message for d in loaded.diagnostics), [
        d.message for d in loaded.diagnostics
    ]


@pytest.mark.parametrize(
    ("wanted", "code", "done"),
    [
        ("result = ___", "total = 5\nfor x in xs:\n    pass", True),  # any names, any value
        ("result = ___", "for x in xs:\n    total = 0", False),  # reset inside the loop
        ("result += n", "t = 0\nfor x in xs:\n    t = t + x", True),  # x = x + y is x += y
        ("result += n", "t = 0\nfor x in xs:\n    t += 1", False),
        ("result += n", "t = 0\nfor x in xs:\n    t = x", False),
        ("return result", "def f(a):\n    return a", True),
        ("return result", "def f(a):\n    for x in a:\n        return x", False),
    ],
)
def test_a_step_is_done_by_the_same_statement_at_the_same_loop_depth(
    wanted: str, code: str, done: bool
) -> None:
    step = solution_step(wanted, SOLUTION)
    assert step is not None
    assert has_step(step, steps(code)) is done


def test_code_that_does_not_parse_has_done_no_step() -> None:
    step = solution_step("result = ___", SOLUTION)
    assert step is not None and not has_step(step, steps("total = 0\nfor x in"))
