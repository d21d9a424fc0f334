"""What a programming exercise's `forbid:` and `require:` mean, read from the code's syntax tree.

The rules of those two exercise fields (dsl/model.py) live here, below the compiler and the
runtime: the grader applies them to a learner's code before it runs, and `pedrag check`
applies them to the exercise's own worked solution (`solution-breaks-exercise`), so an exercise
never asks of a learner what its own solution does not do.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Sequence
from typing import Any

from pedrag.kernel.errors import PedragError

# What can reach a forbidden name without writing it (`eval("su" + "m")`,
# `getattr(builtins, name)`, `math.__dict__["fs" + "um"]`, `operator.attrgetter(...)`): with a
# `forbid:` list, code that uses these is not accepted either.
_INDIRECT = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "getattr",
        "__import__",
        "globals",
        "locals",
        "vars",
        "__builtins__",
        "__dict__",
        "__getattribute__",
        "attrgetter",
        "methodcaller",
        "import_module",
    }
)


class CodeTooDeep(PedragError, ValueError):
    """Code whose syntax tree is too deep for this process to build (a 5,000-term sum, a
    thousand nested brackets): Python's parser gives up with a RecursionError or a
    MemoryError, not a SyntaxError. The rules cannot read it, so it is refused rather than
    waved through: the sandbox, parsing it from a shallower stack, might run it."""

    def __init__(self) -> None:
        super().__init__("the code is nested too deeply to read")


def parse_python(code: str) -> ast.Module | None:
    """``code``'s syntax tree, or None when it is not Python (the tests then report it).
    Raises :class:`CodeTooDeep` for code too deep to build a tree of: the one parser of a
    learner's code, so every reader of it fails the same, closed way."""
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    except (RecursionError, MemoryError):
        raise CodeTooDeep() from None


def forbidden_use(code: str, forbid: Sequence[str]) -> str | None:
    """The first use of a forbidden name in Python ``code``, read from its syntax tree: as a
    name (a call, or a variable of that name), a parameter, an attribute (`builtins.sum`), a
    string naming it, an import of it, or a way around writing it (`_INDIRECT`); None when
    there is none or the code does not parse (the tests then report it). Raises
    :class:`CodeTooDeep` (`parse_python`)."""
    if not forbid:
        return None
    tree = parse_python(code)
    if tree is None:
        return None
    banned = set(forbid)
    # Any use of a builtin's name counts, the learner's own variable of that name included:
    # whether "sum" in a load means the builtin depends on scope and order ("x = sum" before
    # "sum = 0", "def total(nums, sum=sum)"), which a learner could arrange; the message says
    # so. A library's name (`fsum`, `count`) is reached only through an import or an
    # attribute, both refused, so a variable `count` in a counting exercise is the learner's.
    named = {name for name in banned if hasattr(builtins, name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in named:
            return f"the name `{node.id}`"
        if isinstance(node, ast.arg) and node.arg in named:
            return f"the name `{node.arg}`"
        if isinstance(node, ast.Name) and node.id in _INDIRECT:
            return f"`{node.id}` (a way around the rule)"
        if isinstance(node, ast.Attribute) and node.attr in _INDIRECT:
            return f"`{node.attr}` (a way around the rule)"
        if isinstance(node, ast.alias) and node.name == "*":
            return "`import *` (a way around the rule)"
        if isinstance(node, ast.Attribute) and node.attr in banned:
            return f"the name `{node.attr}`"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in banned:
            return f"the name `{node.value}`"
        if isinstance(node, ast.alias) and node.name.split(".")[-1] in banned:
            return f"the name `{node.name}`"
    return None


_LOOP_NAMES = {"for": "for loop", "while": "while loop", "loop": "loop"}


def missing_structure(code: str, require: Sequence[str]) -> str | None:
    """The first loop an exercise's ``require:`` asks for that ``code`` lacks ("for loop"),
    read from its syntax tree; None when all are there or the code does not parse (the tests
    then report it). A loop counts when it does work: a for loop whose variable its body
    reads, a while loop whose body changes a name its condition reads, or `while True` with a
    `break`. A comprehension is an expression, not a loop statement. Why: "using a for loop"
    was passed by `math.fsum(nums)`, recursion and a while loop, the tests alone being run,
    and a loop that does nothing (`for n in nums: pass`) beside them is no loop either."""
    if not require:
        return None
    tree = parse_python(code)
    if tree is None:
        return None
    kinds = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and _reads(node.body, _stored(node.target)):
            kinds |= {"for", "loop"}
        elif isinstance(node, ast.While) and _working_while(node):
            kinds |= {"while", "loop"}
    for wanted in require:
        if wanted not in kinds:
            return _LOOP_NAMES.get(wanted, wanted)
    return None


def _stored(node: Any) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _reads(body: Sequence[Any], names: set[str]) -> bool:
    return any(
        isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in names
        for statement in body
        for n in ast.walk(statement)
    )


def _working_while(node: Any) -> bool:
    body = [n for statement in node.body for n in ast.walk(statement)]
    if isinstance(node.test, ast.Constant) and node.test.value:
        return any(isinstance(n, ast.Break) for n in body)
    tested = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
    changed = {
        n.id for n in body if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))
    }
    # a method call on a tested name ("while items: items.pop()") changes it too
    called = {
        n.func.value.id
        for n in body
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
    }
    return bool(tested & (changed | called))
