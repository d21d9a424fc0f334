"""The public API is exactly what `pedrag/__init__.py` exports; a change here must be deliberate."""

from __future__ import annotations

import subprocess
import sys

import pedrag

EXPECTED = [
    "AsyncTutor",
    "CheckResult",
    "CompiledPolicy",
    "Diagnostic",
    "Grade",
    "LLMRequest",
    "LoadedFile",
    "MemoryStore",
    "OfflineBackend",
    "OpenAIBackend",
    "PedragError",
    "Session",
    "SessionStore",
    "Severity",
    "TheorySet",
    "TurnResult",
    "Tutor",
    "__version__",
    "backend_from_env",
    "check_paths",
    "compile_theory",
    "grade_exercise",
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


ERRORS = [
    "CourseIndexError", "ConditionSyntaxError", "ConfigError", "DiffError", "EditError",
    "ExtractionError", "ExtractionUsageError", "InstructorError", "LLMError", "LLMRefusal",
    "LLMUnavailable", "LearnerNotFound", "PathError", "PedragError", "PolicyFormatError",
    "ReadError", "SessionNotFound", "StateError", "StoreError", "TheoryLoadError",
    "TranslationError", "TurnConflict", "WriterError", "YamlError",
]  # fmt: skip


def test_every_exception_pedrag_raises_on_purpose_derives_from_one_root() -> None:
    import pedrag.errors

    assert pedrag.errors.__all__ == sorted(ERRORS)
    for name in ERRORS:
        error = getattr(pedrag.errors, name)
        assert issubclass(error, pedrag.PedragError), name
    assert pedrag.errors.PedragError is pedrag.PedragError
    # builtin bases kept: callers that caught ValueError still do
    assert issubclass(pedrag.errors.TheoryLoadError, ValueError)


def test_no_exception_class_outside_the_hierarchy() -> None:
    """Every exception class a pedrag module defines derives from PedragError (a new one that
    subclasses a builtin directly fails here)."""
    import ast
    from pathlib import Path

    root = Path(pedrag.__file__).resolve().parent.parent
    strays = []
    # (not evaluate/: the evaluator shares no code with the tutor, its own errors included)
    for folder in ("dsl", "compiler", "runtime", "kernel", "extract", "pedrag"):
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if not isinstance(node, ast.ClassDef):
                    continue
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                builtin = bases & {"Exception", "ValueError", "RuntimeError", "TypeError"}
                if node.name == "PedragError":
                    continue
                private = node.name.startswith("_")  # a module's internal control flow
                if builtin and not bases - builtin - {"object"} and not private:
                    strays.append(f"{path.relative_to(root)}:{node.lineno} {node.name}")
    assert not strays, strays
