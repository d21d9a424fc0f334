"""`pedrag check --fix` can only improve a file: generated theories in every layout, the
README's example, `--diff`, stdin, and fixes that would make a file worse."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pedrag.cli import main
from pedrag.compiler.driver import check_text
from pedrag.compiler.fixes import fix_text

ROOT = Path(__file__).resolve().parents[2]

METRICS = {
    "frustration": "{type: float, range: [0, 1], source: inferred}",
    "hint_requests": "{type: int, range: [0, 5], source: inferred}",
    "affect": "{type: enum, values: [calm, confused, frustrated], source: inferred}",
}
ACTIONS = {
    "encourage": "{rung: H0, priority: 5, description: Encourage.}",
    "probe": "{rung: H3, priority: 5, description: Ask a probing question.}",
}
CONDITIONS = [
    "frustration >= 0.7",
    "frustration < 0.4",
    "hint_requests >= 2",
    "affect == confused",
    "frustration < 0.2 and hint_requests == 0",
    "affect == frustrated or frustration > 0.9",
]


@st.composite
def theories(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A theory file with coverage gaps, in a drawn layout, and the comments written in it."""
    comments: list[str] = []

    def comment() -> str:
        text = f"# note {len(comments)}."
        comments.append(text)
        return text

    def eol() -> str:
        return f"  {comment()}" if draw(st.booleans()) else ""

    newline = draw(st.sampled_from(["\n", "\r\n"]))
    indent = " " * draw(st.sampled_from([2, 4]))
    chosen = draw(st.lists(st.sampled_from(CONDITIONS), min_size=1, max_size=3, unique=True))
    rules = [
        (f"r{index}", condition, draw(st.sampled_from(sorted(ACTIONS))))
        for index, condition in enumerate(chosen)
    ]
    sequence_style = draw(st.sampled_from(["block", "flow-line", "flow-lines"]))
    item_style = draw(st.sampled_from(["block", "flow"]))
    if sequence_style == "block":
        lines = ["rules:" + eol()]
        for rule_id, condition, action in rules:
            if draw(st.booleans()):
                lines.append(indent + comment())
            if item_style == "flow":
                lines.append(
                    f'{indent}- {{id: {rule_id}, when: "{condition}", then: {action}}}' + eol()
                )
            elif draw(st.booleans()):
                lines.append(f"{indent}- id: {rule_id}" + eol())
                lines.append(f"{indent}  when: |")
                lines.append(f"{indent}    {condition}")
                lines.append(f"{indent}  then: {action}" + eol())
            else:
                lines.append(f"{indent}- id: {rule_id}" + eol())
                lines.append(f'{indent}  when: "{condition}"' + eol())
                lines.append(f"{indent}  then: {action}" + eol())
        if draw(st.booleans()):
            lines.append(indent + comment())  # a comment after the last rule stays after it
        if draw(st.booleans()):
            lines.append("")
            lines.append(comment())
    else:
        items = [f'{{id: {r}, when: "{c}", then: {a}}}' for r, c, a in rules]
        if sequence_style == "flow-line":
            lines = ["rules: [" + ", ".join(items) + "]" + eol()]
        else:
            trailing = draw(st.booleans())
            lines = ["rules: ["]
            for index, item in enumerate(items):
                comma = "," if index < len(items) - 1 or trailing else ""
                lines.append(f"{indent}{item}{comma}" + eol())
            lines.append("]")
    sections = {
        "theory": ["theory: {id: generated, name: Generated}" + eol()],
        "metrics": ["metrics:"] + [f"{indent}{n}: {d}" + eol() for n, d in METRICS.items()],
        "actions": ["actions:"] + [f"{indent}{n}: {d}" + eol() for n, d in ACTIONS.items()],
        "rules": lines,
        "ceiling": ["ceiling:", f"{indent}start: H4" + eol()],
    }
    order = draw(st.permutations(sorted(sections)))
    body = [comment(), "pedrag: 1"]
    for name in order:
        body.extend(sections[name])
    text = newline.join(body)
    if draw(st.booleans()):
        text += newline
    return text, comments


def _keys(data: object) -> list[object]:
    """Every mapping's keys in order, depth first: what a fix must not reorder."""
    if isinstance(data, dict):
        return [list(data)] + [k for v in data.values() for k in _keys(v)]
    if isinstance(data, list):
        return [k for v in data for k in _keys(v)]
    return []


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(theories())
def test_fix_keeps_the_file_and_removes_the_finding(case: tuple[str, list[str]]) -> None:
    text, comments = case
    before = check_text(text, "generated.yaml")
    assert not before.errors, [d.message for d in before.diagnostics]
    gaps = [d for d in before.diagnostics if d.check == "coverage-gap"]
    outcome = fix_text(text, "generated.yaml")
    if not gaps:
        assert not outcome.changed
        return
    assert outcome.applied, outcome.rejected
    fixed = outcome.fixed
    # It parses, with no syntax error and no more errors than before.
    after = check_text(fixed, "generated.yaml")
    assert not any(d.check == "syntax-error" for d in after.diagnostics)
    assert after.errors <= before.errors
    # Every comment is kept, in order; so is every original line (only lines were added or,
    # for a one-line flow list, text inserted into it).
    assert all(fixed.count(c) == 1 for c in comments)
    in_order = sorted(comments, key=text.find)
    assert sorted(comments, key=fixed.find) == in_order
    inserted_only = iter(fixed)
    assert all(char in inserted_only for char in text)
    if "rules:" + ("\r\n" if "\r\n" in text else "\n") + " " in text:  # a block list
        kept = iter(fixed.splitlines())
        assert all(any(line == other for other in kept) for line in text.splitlines())
    # Every mapping keeps its keys in order; the old rules are all there, the new ones after.
    old, new = yaml.safe_load(text), yaml.safe_load(fixed)
    assert list(new) == list(old)
    rest_old = {k: v for k, v in old.items() if k != "rules"}
    rest_new = {k: v for k, v in new.items() if k != "rules"}
    assert _keys(rest_old) == _keys(rest_new)
    assert _keys(old["rules"]) == _keys(new["rules"][: len(old["rules"])])
    assert new["rules"][: len(old["rules"])] == old["rules"]
    # The findings the applied fixes were for are gone.
    fixed_regions = {s.when for s in outcome.applied}
    remaining = {d.data["region"] for d in after.diagnostics if d.check == "coverage-gap"}
    assert not fixed_regions & remaining
    assert {s.when for s in outcome.applied} <= {r["when"] for r in new["rules"]}
    # Newlines stay what the file used.
    if "\r\n" in text:
        assert "\n" not in fixed.replace("\r\n", "")


def _readme_example() -> str:
    readme = (ROOT / "README.md").read_text("utf-8")
    block = re.search(r"```yaml\n(# theories/tiny.yaml\n.*?)```", readme, re.DOTALL)
    assert block, "the README's tiny.yaml example is gone"
    return block.group(1)


def test_readme_example_fixed_with_fix_then_checks_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(_readme_example().replace("== frustated", "== frustrated"), "utf-8")
    original = path.read_text("utf-8")
    assert main(["check", str(path), "--fail-on", "warning"]) == 1  # a coverage gap
    assert "coverage-gap" in capsys.readouterr().out
    assert main(["check", str(path), "--fix"]) == 0
    err = capsys.readouterr().err
    assert "added 1 rule(s): fill_gap_1" in err
    fixed = path.read_text("utf-8")
    assert fixed.startswith(original.split("ceiling:")[0])  # everything up to the rules kept
    assert fixed.endswith("ceiling:" + original.split("ceiling:")[1])  # and after them
    assert main(["check", str(path), "--fail-on", "warning"]) == 0
    assert "0 errors, 0 warnings" in capsys.readouterr().out


def test_diff_prints_the_fix_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(_readme_example().replace("== frustated", "== frustrated"), "utf-8")
    before = path.read_bytes()
    assert main(["check", str(path), "--diff"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"--- a/{str(path).lstrip('/')}")
    assert "+  - {id: fill_gap_1, when:" in out
    assert path.read_bytes() == before


def test_a_fix_that_would_add_errors_is_not_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The only action is above the ceiling: the suggested rule is unsafe, and adding it anyway
    # would make a ceiling-blocked error.
    path = tmp_path / "blocked.yaml"
    path.write_text(
        "pedrag: 1\ntheory: {id: t, name: T}\n"
        "metrics:\n  frustration: {type: float, range: [0, 1], source: inferred}\n"
        "actions:\n  probe: {rung: H3, priority: 5, description: P.}\n"
        'rules:\n  - {id: calm, when: "frustration < 0.4", then: probe}\n'
        "ceiling:\n  start: H2\n",
        "utf-8",
    )
    before = path.read_bytes()
    outcome = fix_text(before.decode(), str(path), unsafe=True)
    assert outcome.rejected and not outcome.applied
    assert any("more errors" in reason for _, reason in outcome.rejected)
    assert main(["check", str(path), "--fix", "--unsafe-fixes"]) == 1
    assert "more errors" in capsys.readouterr().err
    assert path.read_bytes() == before


def test_fix_keeps_a_byte_order_mark_and_the_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "gap.yaml"
    text = (ROOT / "tests" / "data" / "checks" / "coverage-gap.yaml").read_text("utf-8")
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    path.chmod(0o640)
    assert main(["check", str(path), "--fix", "-q"]) == 0
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and b"fill_gap_1" in raw
    assert path.stat().st_mode & 0o777 == 0o640


def test_fix_from_stdin_prints_the_fixed_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (ROOT / "tests" / "data" / "checks" / "coverage-gap.yaml").read_text("utf-8")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert main(["check", "-", "--stdin-filename", "gap.yaml", "--fix"]) == 0
    captured = capsys.readouterr()
    before, after = text.split("ceiling:", 1)
    assert captured.out.startswith(before) and captured.out.endswith("ceiling:" + after)
    assert "fill_gap_1" in captured.out
    assert "0 errors, 0 warnings" in captured.err
