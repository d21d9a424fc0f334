"""Shared set-up for the runtime turn tests: the shipped theories (compiled once) and the
runtime fixture curriculum."""

from __future__ import annotations

import functools
from pathlib import Path

from pedrag.runtime.policy.theory_set import TheorySet

CURRICULUM = Path(__file__).parent.parent / "data" / "runtime" / "curriculum.yaml"


@functools.cache
def shipped() -> TheorySet:
    return TheorySet.shipped()
