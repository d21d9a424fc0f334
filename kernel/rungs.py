"""The hint ladder's rungs (seed 2, §3.2): names, parsing, comparison and the ladder's text.

Kernel, standard library only. A rung is an int 0..7 everywhere inside pedrag; ``H0``..``H7`` is
how theory files, reports and the audit spell it. This module is the one place that turns one
into the other and the one place that compares a rung with a ceiling, so the compiler, ``why``
and the runtime cannot disagree about either (issue: rungs were formatted by hand in 18 places
and parsed back three different ways).
"""

from __future__ import annotations

import re

from pedrag.kernel.errors import PedragError

RUNGS = 8  # H0..H7
NO_CODE_MAX_RUNG = 4  # DESIGN, hint ladder: H0-H4 allow no code
FULL_SOLUTION = 7

# What each rung allows, as the designer-facing reference says it (schema hovers, docs).
LADDER = {
    "H0": "acknowledge / encourage",
    "H1": "restate the problem",
    "H2": "point to a concept or source",
    "H3": "leading question about the next step",
    "H4": "describe the approach in words (no code)",
    "H5": "worked example on a different problem",
    "H6": "pseudocode with blanks",
    "H7": "full solution",
}

_NAME = re.compile(r"H[0-7]")
_LENIENT = re.compile(r"\s*[Hh]?([0-7])\s*")


class RungError(PedragError, ValueError):
    """Text that is not a rung name."""


def rung_name(level: int) -> str:
    """A rung's name as theory files spell it (`H0` .. `H7`)."""
    if not 0 <= level < RUNGS:
        raise RungError(f"not a rung: {level!r} (expected 0..7)")
    return f"H{level}"


def is_rung_name(text: str) -> bool:
    """Whether ``text`` is exactly a rung's name (`H0` .. `H7`), as the condition language reads it."""
    return _NAME.fullmatch(text) is not None


def parse_rung(text: str | int) -> int:
    """A rung from its name (`H3`), or from a bare level (`3`, as JSON from a model may carry it);
    ``RungError`` for anything else."""
    if isinstance(text, int) and not isinstance(text, bool):
        if 0 <= text < RUNGS:
            return text
        raise RungError(f"not a rung: {text!r} (expected H0..H7)")
    match = _LENIENT.fullmatch(str(text))
    if match is None:
        raise RungError(f"not a rung: {text!r} (expected H0..H7)")
    return int(match.group(1))


def allows_code(rung: int) -> bool:
    """Whether help at this rung may contain code (H5 and above)."""
    return rung > NO_CODE_MAX_RUNG
