"""`pedrag chat --script`: a fenced code block is one message, its indentation kept. Before,
each line of a function went as a message of its own, stripped, so a learner could not hand in
code through the CLI at all."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pedrag.cli import main
from pedrag.commands.chat import messages

FUNCTION = ["```python", "def total(nums):", "    result = 0", "    for n in nums:",
            "        result += n", "    return result", "```"]  # fmt: skip


def test_a_fenced_block_is_one_message_with_its_indentation() -> None:
    lines = ["  hello ", "", *FUNCTION, "is that right?"]
    assert messages(lines) == ["hello", "\n".join(FUNCTION), "is that right?"]


def test_a_block_never_closed_runs_to_the_end_and_is_closed() -> None:
    assert messages(["```", "x = 1"]) == ["```\nx = 1\n```"]


def test_code_handed_in_through_the_cli_is_run_and_graded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "script.txt"
    script.write_text("\n".join(FUNCTION) + "\n", "utf-8")
    argv = ["chat", "--exercise", "sum_list_loop", "--script", str(script)]
    assert main([*argv, "--db", str(tmp_path / "s.db")]) == 0
    out = capsys.readouterr().out
    # its three declared tests and the ones drawn on other inputs (generated_tests)
    passed = re.search(r"your code passes all (\d+) tests", out)
    assert passed is not None and int(passed.group(1)) > 3, out
