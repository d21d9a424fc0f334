"""Architecture checks import-linter cannot express: allow-lists over the import graph.

The layer rule and each runtime package's boundary are stated once, as import-linter contracts
in pyproject.toml (run by tests/test_tooling.py). What stays here needs an allow-list rather
than a list of forbidden modules: the policy core reaches only the kernel (seed 2, §4: "the
policy core imports nothing that can carry student text"), the kernel imports only the
standard library, and the policy core's input has no text field. The graph is read statically
(``ast``), so a lazy import inside a function counts too.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def imports_of(module: str) -> set[str]:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, module
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if importlib.util.find_spec(_package(name)) is not None}


def _package(name: str) -> str:
    top = name.split(".")[0]
    return top


def reachable(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        if module in seen or not module.startswith("pedrag"):
            continue
        try:
            if importlib.util.find_spec(module) is None:
                continue
        except ModuleNotFoundError:
            continue  # `from pkg import name` where name is not a module
        seen.add(module)
        todo.extend(imports_of(module))
    return seen


def test_policy_core_reaches_only_the_kernel() -> None:
    """So it reaches no module that handles student text, whatever modules are added later
    (pyproject's contract names the text-handling modules known today)."""
    graph = reachable("pedrag.runtime.policy.policy_core")
    kernel = {name for name in graph if name.startswith("pedrag.kernel")}
    assert graph - kernel <= {
        "pedrag",
        "pedrag.runtime",
        "pedrag.runtime.policy",
        "pedrag.runtime.policy.policy_core",
    }


def test_the_kernel_imports_only_the_standard_library_and_itself() -> None:
    """Everything that calls the kernel (the policy core, the runtime's loader, the front end)
    stays free of lark, yaml, pydantic and z3 through it."""
    import sys

    for path in sorted((ROOT / "kernel").glob("*.py")):
        module = f"pedrag.kernel.{path.stem}" if path.stem != "__init__" else "pedrag.kernel"
        for name in imports_of(module):
            top = name.split(".")[0]
            assert (
                top in sys.stdlib_module_names
                or name.startswith("pedrag.kernel")
                or (name == "pedrag")
            ), f"{module} imports {name}"


def test_policy_core_input_types_have_no_text_field() -> None:
    core = importlib.import_module("pedrag.runtime.policy.policy_core")
    for cls in (core.PolicyInput,):
        hints = typing.get_type_hints(cls)
        for field in dataclasses.fields(cls):
            annotation = str(hints[field.name])
            assert (
                "str, " in annotation
                or "str]" in annotation
                or "str" not in annotation.replace("Scalar", "")
            )
            assert field.name not in {"text", "message", "content", "prompt", "student"}
