"""`pedrag --version`, `--help` and a mistyped command answer without importing any command.

The CLI lists its commands from `pedrag.cli.COMMANDS`; each command module declares the same
name, order and help line, and only the command being run is imported, so `pedrag check`
does not pay for the LLM client and `pedrag --version` for nothing at all.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pedrag.cli import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("z3", "openai", "networkx", "sqlalchemy", "yaml", "lark", "pydantic")

PROBE = f"""
import json, sys
from pedrag.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
loaded = sorted(m for m in sys.modules if m.startswith("pedrag.commands.") or m in {set(HEAVY)!r})
print(json.dumps({{"code": code, "loaded": loaded}}), file=sys.stderr)
"""


def _declared(path: Path) -> dict[str, object]:
    tree = ast.parse(path.read_text("utf-8"))
    out: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("NAME", "ORDER", "HELP"):
                out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def test_the_command_table_matches_what_each_command_module_declares() -> None:
    modules = sorted((ROOT / "pedrag" / "commands").glob("[a-z]*.py"))
    declared = {d["NAME"]: (d["ORDER"], d["HELP"]) for d in map(_declared, modules) if d}
    assert declared == COMMANDS


def _probe(*args: str) -> tuple[object, list[str], str]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},  # help lines unwrapped
    )
    report = json.loads(result.stderr.strip().splitlines()[-1])
    return report["code"], report["loaded"], result.stdout


@pytest.mark.parametrize("args", [("--version",), ("--help",), ()])
def test_version_and_help_import_no_command_and_no_heavy_library(args: tuple[str, ...]) -> None:
    code, loaded, out = _probe(*args)
    assert loaded == []
    if args == ("--version",):
        assert code == 0 and out.startswith("pedrag ")
    else:
        assert code in (0, 2)
        for name, (_, help_text) in COMMANDS.items():
            assert name in out and help_text in out


def test_a_mistyped_command_is_refused_without_importing_commands() -> None:
    code, loaded, _ = _probe("chekc", "theories/")
    assert code == 2 and loaded == []


def test_check_imports_its_own_command_only_and_no_llm_client() -> None:
    code, loaded, _ = _probe("check", "theories/socratic.yaml", "--no-semantic")
    assert code == 0
    commands = [
        m
        for m in loaded
        if m.startswith("pedrag.commands.") and not m.rsplit(".", 1)[1].startswith("_")
    ]
    assert commands == ["pedrag.commands.check"]  # shared helpers (`_output`) aside
    assert "openai" not in loaded and "sqlalchemy" not in loaded


def test_the_version_has_one_source_and_the_installed_metadata_agrees() -> None:
    import importlib.metadata

    import pedrag

    assert importlib.metadata.version("pedrag") == pedrag.__version__


def test_check_without_semantics_loads_no_solver_and_no_graph_library() -> None:
    code, loaded, _ = _probe("check", "theories/", "--no-semantic")
    assert code == 0
    assert "z3" not in loaded and "networkx" not in loaded
    # A dead rule's unsat core is z3's: the probe sees the semantic checks' real imports.
    code, loaded, _ = _probe("check", "tests/data/checks/dead-rule.yaml", "--no-cache")
    assert "z3" in loaded


def test_a_tutor_on_the_memory_store_never_loads_sqlalchemy() -> None:
    probe = (
        "import sys\n"
        "from pedrag.runtime.store.memory import MemoryStore\n"
        "from pedrag.runtime.policy.theory_set import TheorySet\n"
        "from pedrag.runtime.turn.tutor import Tutor\n"
        "tutor = Tutor(TheorySet.shipped(), store=MemoryStore())\n"
        "session = tutor.start(theory='socratic', exercise='mult_7x8')\n"
        "print(bool(tutor.turn(session, 'I think it is 54').tutor))\n"
        "print('sqlalchemy' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["True", "False"]


def test_a_batch_command_runs_without_the_cyclic_collector_and_gives_it_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`pedrag check` turns the cyclic collector off while it runs (`pedrag.cli.BATCH`) and
    on again when it returns, so a program calling `main` in process keeps its collector;
    a long-running command keeps it on throughout."""
    import gc

    from pedrag import cli
    from pedrag.commands import check

    seen: list[bool] = []
    monkeypatch.setattr(check, "run", lambda args: seen.append(gc.isenabled()) or 0)
    assert gc.isenabled()
    assert cli.main(["check", "theories/socratic.yaml"]) == 0
    assert seen == [False] and gc.isenabled()
    assert "chat" not in cli.BATCH and "serve" not in cli.BATCH and "lsp" not in cli.BATCH


def test_the_database_default_in_help_is_the_stores() -> None:
    """`--db`'s help is written out so that `--help` does not import SQLAlchemy; it must
    still say what the store does."""
    from pedrag.commands._options import DB_DEFAULT
    from pedrag.runtime.store.session_store import DEFAULT_DB_PATH, ENV_DB

    assert DB_DEFAULT == f"${ENV_DB} or ./{DEFAULT_DB_PATH.as_posix()}"


def _pedrag(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "pedrag.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        **kwargs,
    )


def test_a_batch_command_ends_without_teardown_and_loses_no_output(tmp_path: Path) -> None:
    """`pedrag check` ends the process without tearing its objects down (`cli.console`):
    the whole report still arrives, the exit code is `main`'s, and what the command wrote to
    files (the check cache) is complete."""
    from pedrag.cli import main

    cache = {**os.environ, "PEDRAG_CACHE_DIR": str(tmp_path / "cache")}
    broken = tmp_path / "broken.yaml"
    broken.write_text((ROOT / "tests/data/checks/conflict.yaml").read_text("utf-8"), "utf-8")
    for target in ("theories", str(broken)):
        result = _pedrag("check", target, "--format", "json", env=cache)
        report = json.loads(result.stdout)  # the whole report, to its last byte
        assert result.returncode == main(["check", target, "--no-cache", "--format", "json"])
        assert (result.returncode == 1) == (report["summary"]["errors"] > 0)
    again = _pedrag("check", "theories", "--format", "json", env=cache)
    assert (
        json.loads(again.stdout)["diagnostics"]
        == json.loads(_pedrag("check", "theories", "--format", "json", "--no-cache").stdout)[
            "diagnostics"
        ]
    )
    assert list((tmp_path / "cache" / "check").glob("*.pickle"))


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path) -> None:
    """`pedrag check ... | head`: the pipe closes before the report is written out (a report
    larger than the pipe's buffer, so the write really fails)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from theory_gen import generate

    theory = tmp_path / "many.yaml"
    theory.write_text(generate(1000, 1, "weighted"), "utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "pedrag.cli", "check", str(theory), "--format", "json"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read(1) == b"{"
    process.stdout.close()
    error = process.stderr.read().decode()
    assert process.wait() in (0, 1)
    assert "Traceback" not in error and "Exception ignored" not in error
