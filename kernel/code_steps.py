"""Which steps of a programming exercise a learner's code has done, read from its syntax tree.

An exercise's `hint_code:` (dsl/model.py) gives, for each of its hints, the statement of its
worked solution that the hint's step writes (`result = 0` for "You need a variable that keeps a
running total, set before the loop starts"). A learner's code has done that step when it holds
the same statement at the same loop depth: with any names (`total = 0` is `result = 0`), a
`___` standing for any expression (`result = ___`: set to anything), `x = x + n` read as
`x += n`, and a compound statement (`if n % 2 == 0:`) compared by its header alone. The depth
is what tells a running total set before the loop from one reset inside it.

Lives below the DSL and the runtime: the curriculum's loader checks every `hint_code:` statement
against the exercise's own solution, and the tutor reads the learner's code with the same rule,
so a step is never "done" in a way the solution itself does not do it.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator, Sequence

from pedrag.kernel.code_rules import CodeTooDeep, parse_python

WILDCARD = "___"  # the outline's blank: any expression
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_BODIES = ("body", "orelse", "finalbody", "handlers")
Step = tuple[int, ast.AST]  # (loop depth, the statement's shape)


def parse_step(text: str) -> ast.stmt | None:
    """The one statement ``text`` writes (a compound statement's header may end at its colon),
    or None when it is not one Python statement."""
    source = text.strip()
    if source.endswith(":"):
        source += " pass"
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    return tree.body[0] if len(tree.body) == 1 else None


def shape(statement: ast.stmt) -> ast.AST:
    """The statement as compared: its header alone, names numbered by first appearance, the
    wildcard kept, `x = x op y` as `x op= y`."""
    node = _augmented(statement)
    header = _header(node)
    names: dict[str, str] = {}
    for child in ast.walk(header):
        if isinstance(child, ast.Name) and child.id != WILDCARD:
            child.id = names.setdefault(child.id, f"v{len(names)}")
        elif isinstance(child, ast.arg):
            child.arg = names.setdefault(child.arg, f"v{len(names)}")
    return header


def _augmented(statement: ast.stmt) -> ast.stmt:
    """A fresh copy of ``statement``, `x = x op y` written as `x op= y`."""
    copy = ast.parse(ast.unparse(statement)).body[0]
    if (
        isinstance(copy, ast.Assign)
        and len(copy.targets) == 1
        and isinstance(copy.targets[0], ast.Name)
        and isinstance(copy.value, ast.BinOp)
        and isinstance(copy.value.left, ast.Name)
        and copy.value.left.id == copy.targets[0].id
    ):
        return ast.AugAssign(target=copy.targets[0], op=copy.value.op, value=copy.value.right)
    return copy


def _header(statement: ast.stmt) -> ast.AST:
    """A compound statement without the statements it holds."""
    for field in _BODIES:
        if isinstance(getattr(statement, field, None), list):
            setattr(statement, field, [])
    return statement


def steps(code: str) -> list[Step]:
    """Every statement of ``code`` with its loop depth, in order; [] when it does not parse,
    or is too deep to read (`code_rules.parse_python`; its shapes are copied and compared
    recursively, so a statement too deep for that reads as no step)."""
    return list(_steps(code))


@functools.lru_cache(maxsize=64)
def _steps(code: str) -> tuple[Step, ...]:
    """:func:`steps`, parsed once per code: a turn asks of the same code several times (the
    hints it has done, the hint to show, after the reply). The shapes are shared: read only."""
    try:
        tree = parse_python(code)
        return tuple(_walk(tree.body, 0)) if tree is not None else ()
    except (CodeTooDeep, RecursionError, MemoryError):
        return ()


def _walk(body: list[ast.stmt], depth: int) -> Iterator[Step]:
    for statement in body:
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield depth, shape(statement)
        inner = depth + 1 if isinstance(statement, _LOOPS) else depth
        for field in _BODIES:
            children = getattr(statement, field, None)
            if isinstance(children, list):
                handlers = [c for c in children if isinstance(c, ast.ExceptHandler)]
                for handler in handlers:
                    yield from _walk(handler.body, inner)
                yield from _walk([c for c in children if isinstance(c, ast.stmt)], inner)


def matches(wanted: ast.AST, found: ast.AST) -> bool:
    """Whether the statement shape ``found`` is ``wanted``, a wildcard in it standing for any
    expression (contexts and positions aside)."""
    return _same(wanted, found)


def _same(wanted: ast.AST, found: ast.AST) -> bool:
    if isinstance(wanted, ast.Name) and wanted.id == WILDCARD:
        return True
    if type(wanted) is not type(found):
        return False
    for field, value in ast.iter_fields(wanted):
        if field in ("ctx", "type_comment"):
            continue
        other = getattr(found, field, None)
        if isinstance(value, list):
            if not isinstance(other, list) or len(value) != len(other):
                return False
            if not all(_same_value(a, b) for a, b in zip(value, other, strict=True)):
                return False
        elif not _same_value(value, other):
            return False
    return True


def _same_value(wanted: object, found: object) -> bool:
    if isinstance(wanted, ast.AST):
        return isinstance(found, ast.AST) and _same(wanted, found)
    return wanted == found


def solution_step(text: str, solution: str) -> Step | None:
    """``text`` as a step of ``solution`` (its loop depth there and its shape), or None when it
    is not one statement, or ``solution`` holds no such statement."""
    statement = parse_step(text)
    if statement is None:
        return None
    wanted = shape(statement)
    return next(
        ((depth, wanted) for depth, found in steps(solution) if matches(wanted, found)), None
    )


def has_step(step: Step, found: Sequence[Step]) -> bool:
    """Whether code whose statements are ``found`` (:func:`steps`) has ``step``."""
    depth, wanted = step
    return any(depth == at and matches(wanted, shaped) for at, shaped in found)
