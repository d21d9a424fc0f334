"""Turning analysis answers into diagnostics: witnesses, `unknown` answers, rule spans.

Compiler stage helper shared by the semantic checks in `compiler/checks/`. Takes `Outcome`s
and rules; gives `Diagnostic` pieces so every check words witnesses and solver timeouts the
same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.dsl.ir import RuleInfo
from pedrag.dsl.spans import Span
from pedrag.kernel.rungs import rung_name

if TYPE_CHECKING:  # z3 loads only when a semantic check runs
    from pedrag.compiler.analysis import Analysis, Outcome


def with_ceiling(analysis: Analysis, witness: dict[str, Any] | None) -> dict[str, Any] | None:
    """The witness plus the ceiling the policy core computes in it, when steps exist."""
    if witness is None:
        return None
    if not analysis.theory.ceiling_steps:
        return dict(witness)
    full = dict(witness)
    # Shown only when the witness fixes every metric the steps read; otherwise the ceiling
    # did not matter to the question and depends on metrics the witness leaves free.
    read = set().union(
        *(analysis.translator.condition(s.when.expr).vars for s in analysis.theory.ceiling_steps)
    )
    if read <= witness.keys():
        full["ceiling"] = rung_name(analysis.ceiling_at(witness))
    return full


def unknown(check: str, what: str, span: Span | None, items: tuple[str, ...]) -> Diagnostic:
    """A question the solver could not decide in time: reported, never taken as a pass."""
    return Diagnostic(
        check=check,
        severity=Severity.WARNING,
        message=f"unknown: could not decide {what} (solver timeout); not proved either way",
        span=span,
        items=items,
        help="simplify the conditions involved, or raise the solver timeout",
        data={"result": "unknown"},
    )


def rule_item(rule: RuleInfo) -> str:
    return f"rule:{rule.id}"


def outcome_unknown(outcome: Outcome) -> bool:
    return outcome.unknown


T = TypeVar("T")


class Remembered(Generic[T]):
    """One check's diagnostics, each kept by the objects it is made of, in a process that
    checks again (the language server, `encode.SHARING`): the rules and answers a one-rule
    edit left alone are the same objects in the next check, so their findings are not worded
    and built again (4,078 redundant rules at 5,000 rules were a tenth of the server's
    re-check). The objects are frozen (rules, their conditions and spans, answers), and held
    beside the diagnostic so their ids stay theirs; only the last two checks' are kept."""

    def __init__(self) -> None:
        self._previous: dict[tuple[int, ...], tuple[tuple[Any, ...], T]] = {}
        self._current: dict[tuple[int, ...], tuple[tuple[Any, ...], T]] = {}

    def begin(self) -> None:
        """A new check: what the one before last kept is let go."""
        self._previous, self._current = self._current, {}

    def get(self, made_of: tuple[Any, ...], make: Callable[[], T]) -> T:
        from pedrag.compiler import encode

        if not encode.SHARING:
            return make()
        key = tuple(map(id, made_of))
        hit = self._current.get(key) or self._previous.get(key)
        if hit is None:
            hit = (made_of, make())
        self._current[key] = hit
        return hit[1]
