"""Architecture: the policy core's trust boundary and the layer order, from the import graph.

seed 2, §4: "the policy core imports nothing that can carry student text". The graph is read
statically (``ast``), so a lazy import inside a function counts too.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {"kernel": -1, "dsl": 0, "compiler": 1, "runtime": 2, "extract": 3, "evaluate": 3}
# Upward imports that exist today and are tracked, each with why; the list only shrinks.
KNOWN_UPWARD = {}
TEXT_MODULES = (
    "pedrag.runtime.turn.classifier",
    "pedrag.runtime.turn.analyzer",
    "pedrag.runtime.turn.generator",
    "pedrag.runtime.turn.judge",
    "pedrag.runtime.llm.interface",
    "pedrag.runtime.llm.openai_backend",
    "pedrag.runtime.llm.offline",
    "pedrag.runtime.turn.tutor",
    "pedrag.runtime.llm.personas",
)


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


def test_policy_core_never_reaches_a_module_that_handles_student_text() -> None:
    graph = reachable("pedrag.runtime.policy.policy_core")
    assert not graph & set(TEXT_MODULES), sorted(graph & set(TEXT_MODULES))
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


def test_layers_only_import_downwards() -> None:
    problems = []
    for folder, level in LAYERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                for name in names:
                    parts = name.split(".")
                    if parts[0] == "pedrag" and len(parts) > 1 and parts[1] in LAYERS:
                        where = str(path.relative_to(ROOT))
                        if (
                            LAYERS[parts[1]] > level
                            and not _type_checking_only(tree, node)
                            and (where, name) not in KNOWN_UPWARD
                        ):
                            problems.append(f"{where} imports {name}")
    assert not problems, problems


def _type_checking_only(tree: ast.Module, target: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            if any(child is target for child in ast.walk(node)):
                return True
    return False
