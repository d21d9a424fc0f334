"""The public API is exactly what `pedrag/__init__.py` exports; a change here must be deliberate."""

from __future__ import annotations

import subprocess
import sys

import pedrag

EXPECTED = [
    "CheckResult",
    "CompiledPolicy",
    "Diagnostic",
    "LLMRequest",
    "LoadedFile",
    "OfflineBackend",
    "OpenAIBackend",
    "Session",
    "SessionStore",
    "Severity",
    "TheorySet",
    "TurnResult",
    "Tutor",
    "__version__",
    "check_paths",
    "compile_theory",
    "load_file",
    "load_text",
    "lower",
]


def test_exports_are_pinned() -> None:
    assert pedrag.__all__ == EXPECTED


def test_every_export_resolves() -> None:
    for name in pedrag.__all__:
        assert getattr(pedrag, name) is not None, name


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        pedrag.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def test_importing_the_runtime_policy_does_not_load_the_parser_or_z3() -> None:
    code = (
        "import sys, pedrag.runtime.policy.compiled;"
        "bad = sorted(m for m in ('lark', 'z3', 'pedrag.dsl.parser', 'pedrag.compiler') if m in sys.modules);"
        "print(','.join(bad))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
