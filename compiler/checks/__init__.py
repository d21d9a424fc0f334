"""The check catalog: one module per check, each exposing `INFO` (and `run` if it has one).

`--explain`, the docs' check list and the SARIF rule list are generated from this catalog,
so they cannot drift from what the checks do. Front-end checks (syntax, names, types, trust
boundary) are reported by `pedrag.dsl`; their modules here carry only metadata, except that a
front-end check spanning files (duplicate theory ids across a set) has a `run(files)` the driver
calls even with --no-semantic. A `semantic` check's `run` takes an `Analysis` of one theory, a
`set` check's `run` takes every loaded file.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from pedrag.dsl.diagnostics import Diagnostic, Severity


@dataclass(frozen=True)
class CheckInfo:
    name: str
    severity: Severity
    summary: str
    explanation: str
    example: str  # a failing theory fragment
    fix: str
    stage: str = "semantic"  # "front-end" | "semantic" | "set"


@dataclass(frozen=True)
class Check:
    info: CheckInfo
    # semantic: run(analysis); front-end: run(files); set: run(files, memo) (`compiler/graphs.py`)
    run: Callable[..., Iterable[Diagnostic]] | None


@lru_cache(maxsize=1)
def catalog() -> dict[str, Check]:
    """Every check, by name, discovered from this package's modules."""
    found: dict[str, Check] = {}
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        info = getattr(module, "INFO", None)
        if isinstance(info, CheckInfo):
            found[info.name] = Check(info, getattr(module, "run", None))
    return found
