"""Further tests for a programming exercise, on inputs its author did not write: the same
function called with new arguments of the same shapes, the expected values computed by the
exercise's worked ``solution`` in the grader's sandbox.

Why: an exercise declares three or four tests, and code written for exactly those passes them
(``return {(1, 2, 3): 6, (): 0}[tuple(nums)]``, or a token loop beside ``return 6``) while doing
nothing the exercise teaches. A grade writes mastery, so "passes the tests" must mean "computes
the function". New inputs, drawn like the author's (lists of whole numbers in the same range,
strings over the same letters), tell the two apart; the learner never sees them.

A solution that does not pass its own declared tests values nothing (no test is drawn), so
a slip in an author's solution never fails a learner. Only inputs the solution itself answers
with a plain value are kept: a call the solution
refuses (``biggest([])``) is outside the exercise, and a value holding a float is dropped,
since a learner's correct sum in another order may differ in its last digit. The inputs are
drawn from a generator seeded by the exercise's solution and tests, so one piece of code always
gets one verdict.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import random
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pedrag.runtime.learning.code_runner import run_calls, same_value

COUNT = 12
"""How many generated calls are kept at most (drawn from up to four times as many)."""

_MAX_LIST = 8
_MAX_TEXT = 10


@dataclass(frozen=True)
class _Shape:
    """What one argument looks like across the author's tests: its kind ("int", "bool",
    "str", "list", "tuple"), the values' range or letters, and an element's shape."""

    kind: str
    low: int = 0
    high: int = 0
    letters: str = ""
    lengths: tuple[int, int] = (0, 0)
    element: _Shape | None = None


def generated_tests(
    solution: str | None, tests: Sequence[tuple[str, str]], withheld: Sequence[str] = ()
) -> tuple[tuple[str, str], ...]:
    """Up to :data:`COUNT` ``(call, expected literal)`` pairs beyond ``tests``, or none when
    the exercise has no solution or its tests are not one function called with literals."""
    if not solution or not tests:
        return ()
    return _generated(solution, tuple(tests), tuple(withheld))


@functools.lru_cache(maxsize=64)
def _generated(
    solution: str, tests: tuple[tuple[str, str], ...], withheld: tuple[str, ...]
) -> tuple[tuple[str, str], ...]:
    shaped = _function_and_shapes([call for call, _ in tests])
    if shaped is None:
        return ()
    name, shapes = shaped
    seed = hashlib.sha256(repr((solution, tests)).encode("utf-8")).digest()
    rng = random.Random(seed)
    known = {call.replace(" ", "") for call, _ in tests}
    calls: list[str] = []
    for _ in range(4 * COUNT):
        call = f"{name}({', '.join(repr(_draw(shape, rng)) for shape in shapes)})"
        if call.replace(" ", "") not in known:
            known.add(call.replace(" ", ""))
            calls.append(call)
    declared = [call for call, _ in tests]
    values = run_calls(solution, [*declared, *calls], withheld)
    if values is None or not all(
        value is not None and same_value(ast.literal_eval(value), ast.literal_eval(expect))
        for value, (_, expect) in zip(values, tests, strict=False)
    ):
        # A solution that fails its own tests values nothing: a learner is never held to it.
        return ()
    kept = [
        (call, value)
        for call, value in zip(calls, values[len(declared) :], strict=True)
        if value is not None and not _holds_a_float(value)
    ]
    return tuple(kept[:COUNT])


def _function_and_shapes(calls: Sequence[str]) -> tuple[str, tuple[_Shape, ...]] | None:
    """The one function the tests call and each positional argument's shape, or None."""
    names: set[str] = set()
    columns: list[list[Any]] = []
    for call in calls:
        try:
            node = ast.parse(call, mode="eval").body
        except SyntaxError:
            return None
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.keywords:
            return None
        try:
            values = [ast.literal_eval(argument) for argument in node.args]
        except (ValueError, SyntaxError):
            return None
        if columns and len(values) != len(columns):
            return None
        columns = columns or [[] for _ in values]
        for column, value in zip(columns, values, strict=True):
            column.append(value)
        names.add(node.func.id)
    if len(names) != 1 or not columns:
        return None
    shapes = [_shape(column) for column in columns]
    if any(shape is None for shape in shapes):
        return None
    return names.pop(), tuple(shape for shape in shapes if shape is not None)


def _shape(values: Sequence[Any]) -> _Shape | None:
    kinds = {type(value) for value in values}
    if len(kinds) != 1:
        return None
    kind = kinds.pop()
    if kind is bool:
        return _Shape("bool")
    if kind is int:
        low, high = min(values), max(values)
        return _Shape("int", min(low, -10), max(high, 10))
    if kind is str:
        lengths = [len(value) for value in values]
        letters = "".join(sorted(set("".join(values)))) or string.ascii_lowercase[:3]
        if max(lengths) == min(lengths) == 1:  # one character each time: a character
            return _Shape("str", letters=letters, lengths=(1, 1))
        return _Shape("str", letters=letters, lengths=(0, max(_MAX_TEXT, max(lengths))))
    if kind in (list, tuple):
        items = [item for value in values for item in value]
        element = _shape(items) if items else None
        if element is None or element.kind in ("list", "tuple"):
            return None
        longest = max(len(value) for value in values)
        return _Shape(kind.__name__, lengths=(0, max(_MAX_LIST, longest)), element=element)
    return None


def _draw(shape: _Shape, rng: random.Random) -> Any:
    if shape.kind == "bool":
        return rng.random() < 0.5
    if shape.kind == "int":
        return rng.randint(shape.low, shape.high)
    if shape.kind == "str":
        return "".join(rng.choice(shape.letters) for _ in range(rng.randint(*shape.lengths)))
    assert shape.element is not None
    items = [_draw(shape.element, rng) for _ in range(rng.randint(*shape.lengths))]
    return items if shape.kind == "list" else tuple(items)


def _holds_a_float(literal: str) -> bool:
    return any(
        isinstance(node, ast.Constant) and isinstance(node.value, (float, complex))
        for node in ast.walk(ast.parse(literal, mode="eval"))
    )
