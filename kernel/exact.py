"""Exact arithmetic: a number as the rational it prints as (DESIGN, "One semantics").

Stage: kernel, standard library only. Takes an int, a float (or anything else, passed
through by `exact`); gives a `Fraction`. Why: the compiler proves a condition over rationals
and the runtime evaluates arithmetic in rationals, so both must read a float the same way, by
its shortest decimal (0.1 is 1/10, as the designer wrote it), not by its binary value. This
module is that one reading; the compiler's encoding, lowering, witnesses and the runtime's
generated code all call it.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any


def decimal_fraction(value: float | int | Fraction) -> Fraction:
    """A number as a `Fraction`: a float by the decimal it prints as, anything else as itself
    (an int, a `Fraction`, a bool as 0 or 1)."""
    return Fraction(repr(value)) if isinstance(value, float) else Fraction(value)


def exact(value: Any) -> Any:
    """`decimal_fraction` for an int or a float; a bool, a string or anything else unchanged
    (generated code reads every operand of an exact comparison through it)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return decimal_fraction(value)
