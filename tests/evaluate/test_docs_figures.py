"""docs/evaluation.md's figures are the command's output: the test runs the command the doc
names and compares the block (regenerate with ``PEDRAG_UPDATE_DOCS=1``)."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from pedrag.cli import main
from tests.evaluate.test_answer_check import mrbench_dev

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "evaluation.md"
BLOCK = re.compile(r"(<!-- figures-start -->\n)(.*?)(<!-- figures-end -->)", re.DOTALL)


def test_the_docs_figures_are_the_commands_output(capsys: pytest.CaptureFixture[str]) -> None:
    text = DOC.read_text(encoding="utf-8")
    command = re.search(r"<!-- figures-command: (.*?) -->", text)
    assert command, "docs/evaluation.md names no figures command"
    args = shlex.split(command.group(1))
    assert args[:2] == ["pedrag", "evaluate"]
    args = [str(mrbench_dev()) if arg == "MRBENCH" else arg for arg in args[1:]]
    assert main(args) == 0
    produced = capsys.readouterr().out
    block = BLOCK.search(text)
    assert block is not None
    if os.environ.get("PEDRAG_UPDATE_DOCS"):
        DOC.write_text(
            BLOCK.sub(lambda m: m.group(1) + produced + m.group(3), text), encoding="utf-8"
        )
        return  # regenerated on request, as golden files are
    assert block.group(2) == produced, "regenerate with PEDRAG_UPDATE_DOCS=1"
