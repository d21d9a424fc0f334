"""The full run in docs/extraction.md is what `docs/examples/extract_demo.py` prints today.

The demo runs `pedrag extract` twice and `pedrag check` once, as subprocesses, against the
scripted model in `tests/data/extract_demo/replies.json` served on 127.0.0.1; it runs once
for the whole module (about three seconds).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from pedrag.compiler.driver import check_paths

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "examples" / "extract_demo.py"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("extract_demo", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return _load_script()


@pytest.fixture(scope="module")
def demo(script: ModuleType) -> Any:
    return script.run_demo()


def test_the_full_run_in_extraction_md_is_what_the_demo_prints(
    script: ModuleType, demo: Any
) -> None:
    current = script.DOC.read_text("utf-8")

    assert script.updated_doc(current, script.markdown(demo)) == current, (
        "docs/extraction.md's full run is stale: run python docs/examples/extract_demo.py --write"
    )


def test_the_demo_theory_checks_clean(demo: Any, tmp_path: Path) -> None:
    (tmp_path / "meno.yaml").write_text(demo.theory, encoding="utf-8")

    checked = check_paths([str(tmp_path / "meno.yaml")])

    assert checked.errors == 0, [d.message for d in checked.diagnostics]
    check_step = demo.steps[-1]
    assert check_step.command == "pedrag check $DEMO/meno.yaml"
    assert check_step.exit_code == 0 and "checked 1 file: 0 errors" in check_step.output


def test_the_demo_merges_a_duplicate_skips_an_invalid_chunk_and_repairs_a_dead_rule(
    demo: Any,
) -> None:
    data = yaml.safe_load(demo.theory)
    header = [line for line in demo.theory.splitlines() if line.startswith("#")]

    assert "# Merged action `elicit_next_step` into `ask_leading_question`" in "\n".join(header)
    assert "elicit_next_step" not in data["actions"]
    assert any(line.startswith("# Skipped chunk meno_2_c2 (meno.pdf, chunk 2") for line in header)
    assert "# Checks clean after 1 repair round: 0 errors, 0 warning(s)." in header
    rules = {rule["id"]: rule for rule in data["rules"]}
    assert rules["torpedo_touch"]["when"] == "belief == perplexed"
    # Provenance: every source is cited and points at a document and a page.
    assert {s["document"] for s in data["theory"]["sources"]} == {
        "tests/data/corpus/meno.txt",
        "tests/data/corpus/meno.pdf",
    }


def test_the_rerun_is_answered_from_the_cache(demo: Any) -> None:
    first, second = demo.chat_requests

    assert first == 6  # 4 chunks, the invalid chunk's retry, 1 repair round
    assert second == 0
    assert "cache: 5 hits, 0 misses" in demo.steps[3].output


def test_the_demo_talks_only_to_the_local_server_and_prints_nothing_volatile(
    script: ModuleType, demo: Any
) -> None:
    text = script.transcript(demo)

    assert demo.hosts == {"127.0.0.1"}
    assert "━" not in text and "0:00" not in text  # no progress bars off a terminal
    assert "/tmp" not in text and "pedrag-demo-" not in text
