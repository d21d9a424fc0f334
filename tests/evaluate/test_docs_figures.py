"""docs/evaluation.md's figures are the offline default grid's, as the command prints them.

The default grid with ``--sensitivity`` takes minutes (seven runs of 204 sessions), too slow
for the suite, so the command the doc names writes its JSON report to a stored file
(``docs/evaluation-figures.json``, ``-o``) and the tests check, in seconds:

- the doc names the default grid (no grid option) and that file;
- the doc's block is the command's rendering of that file (``--figures`` prints
  :func:`figures_markdown` of the report ``-o`` writes);
- the file is this code's output: its grid is the command's default grid, a slice of it
  (one persona x one exercise, every arm and repetition) run again gives the same sessions,
  and its MRBench rows are the rubric's agreement now.

Regenerate both with ``PEDRAG_UPDATE_DOCS=1`` (runs the command, a few minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from pedrag.cli import main
from pedrag.evaluate.records import ExerciseCase
from pedrag.evaluate.report import figures_markdown
from pedrag.evaluate.run import Grid, run_grid
from pedrag.runtime.policy.theory_set import TheorySet
from tests.evaluate.test_answer_check import mrbench_agreement, mrbench_dev

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "evaluation.md"
STORED_NAME = "docs/evaluation-figures.json"
STORED = ROOT / STORED_NAME
BLOCK = re.compile(r"(<!-- figures-start -->\n)(.*?)(<!-- figures-end -->)", re.DOTALL)
GRID_OPTIONS = frozenset(
    "--configs --personas --exercises --topics --reps --turns --seed --theory --theories "
    "--curriculum --deterministic --no-exam-probe --endpoint --model".split()
)


def command() -> list[str]:
    found = re.search(r"<!-- figures-command: (.*?) -->", DOC.read_text(encoding="utf-8"))
    assert found, "docs/evaluation.md names no figures command"
    return shlex.split(found.group(1))


def stored() -> dict[str, Any]:
    report: dict[str, Any] = json.loads(STORED.read_text(encoding="utf-8"))
    return report


@pytest.fixture(scope="module", autouse=True)
def regenerate() -> None:
    """With ``PEDRAG_UPDATE_DOCS=1``: run the doc's command (writing the stored file) and put
    its output in the doc, as golden files are regenerated on request."""
    if not os.environ.get("PEDRAG_UPDATE_DOCS"):
        return
    args = [
        str(mrbench_dev()) if arg == "MRBENCH" else str(STORED) if arg == STORED_NAME else arg
        for arg in command()[1:]
    ]
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(args) == 0
    text = DOC.read_text(encoding="utf-8")
    DOC.write_text(
        BLOCK.sub(lambda m: m.group(1) + out.getvalue() + m.group(3), text), encoding="utf-8"
    )


def test_the_doc_names_the_default_grid_and_the_stored_report() -> None:
    args = command()
    assert args[:2] == ["pedrag", "evaluate"]
    assert not GRID_OPTIONS & set(args), "the doc's figures are the default grid's"
    assert {"--sensitivity", "--figures", "--mrbench"} <= set(args)
    assert args[args.index("-o") + 1] == STORED_NAME


def test_the_docs_figures_are_the_commands_rendering_of_the_stored_report() -> None:
    block = BLOCK.search(DOC.read_text(encoding="utf-8"))
    assert block is not None
    report = stored()
    assert report["sensitivity"] and report["mrbench"] and report["paired"]
    assert block.group(2) == figures_markdown(report), "regenerate with PEDRAG_UPDATE_DOCS=1"


def test_the_stored_report_is_this_codes_default_grid(
    theories: TheorySet, curriculum: Any, exercises: dict[str, ExerciseCase]
) -> None:
    from pedrag.commands import evaluate as command_module

    parser = argparse.ArgumentParser()
    command_module.add_arguments(parser)
    default = command_module._grid(parser.parse_args([]), exercises)
    report = stored()
    assert report["grid"] == default.to_dict()
    # One cell of every arm, run again, gives the sessions the file holds (a session's seed
    # comes from the grid seed, persona, exercise and repetition, not from its neighbours).
    persona, exercise = "struggling-sarah", default.exercises[0]
    cell = Grid(
        configs=default.configs,
        personas=(persona,),
        exercises=(exercise,),
        reps=default.reps,
        turns=default.turns,
        seed=default.seed,
        theory=default.theory,
        exam_probe=False,
    )
    again = [s.to_dict() for s in run_grid(cell, theories, curriculum).sessions]
    kept = [
        s
        for s in report["sessions"]
        if s["persona"] == persona and s["exercise"] == exercise and not s["exam"]
    ]
    assert len(again) == len(default.configs) * default.reps
    assert again == kept, "the stored report is stale: regenerate with PEDRAG_UPDATE_DOCS=1"
    assert report["mrbench"] == [row.to_dict() for row in mrbench_agreement()]
