"""Bad input gets diagnostics, never a traceback: arbitrary text, YAML and mutated theories."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pedrag.cli import main
from pedrag.dsl.loader import load_text
from tests.dsl.test_loader import BASE

KEYS = [
    "pedrag",
    "theory",
    "id",
    "name",
    "metrics",
    "actions",
    "rules",
    "when",
    "then",
    "type",
    "range",
    "values",
    "source",
    "rung",
    "priority",
    "ceiling",
    "steps",
    "start",
    "invariants",
    "never",
    "kind",
    "goals",
    "exercises",
    "requires",
    "answer",
    "adaptation",
    "switch",
    "monitors",
    "x",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 60),
    st.floats(allow_nan=False, width=32),
    st.text(max_size=12),
    st.sampled_from(["H3", "H9", "inferred", "trusted", "enum", "float", "a and", "x > 1"]),
)
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)
    ),
    max_leaves=25,
)


def _assert_diagnosed_or_clean(text: str) -> None:
    loaded = load_text(text, "fuzz.yaml")
    for diagnostic in loaded.diagnostics:
        assert diagnostic.check and diagnostic.message
    if loaded.theory is None and loaded.curriculum is None:
        assert loaded.diagnostics, "a file that did not resolve must say why"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_arbitrary_text_never_raises(text: str) -> None:
    _assert_diagnosed_or_clean(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_arbitrary_yaml_documents_never_raise(document: object) -> None:
    _assert_diagnosed_or_clean(yaml.safe_dump(document))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_theories_never_raise(data: st.DataObject) -> None:
    text = BASE
    for _ in range(data.draw(st.integers(1, 3))):
        position = data.draw(st.integers(0, len(text)))
        action = data.draw(st.sampled_from(["delete", "insert", "line"]))
        if action == "delete":
            text = text[:position] + text[position + data.draw(st.integers(1, 8)) :]
        elif action == "insert":
            text = (
                text[:position]
                + data.draw(
                    st.sampled_from(
                        [
                            ":",
                            "{",
                            "[",
                            "'",
                            '"',
                            " ",
                            "\n",
                            "- ",
                            "&a",
                            "*a",
                            "#",
                            "\t",
                            "H9",
                            "not ",
                        ]
                    )
                )
                + text[position:]
            )
        else:
            lines = text.splitlines(keepends=True)
            del lines[data.draw(st.integers(0, len(lines) - 1))]
            text = "".join(lines)
    _assert_diagnosed_or_clean(text)


@settings(max_examples=40, deadline=None)
@given(documents)
def test_the_cli_reports_arbitrary_documents_as_json(tmp_path_factory, document: object) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / "doc.yaml"
    path.write_text(yaml.safe_dump(document))
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["check", str(path), "--format", "json", "--no-semantic"])
    report = json.loads(out.getvalue())
    assert code in (0, 1)
    assert (code == 1) == (report["summary"]["errors"] > 0)


def test_the_cli_in_a_subprocess_on_garbage_exits_1_without_traceback(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "garbage.yaml"
    path.write_bytes(b"rules: [\n  - {when: 'x >', then: \x00}\n")
    result = subprocess.run(
        [sys.executable, "-m", "pedrag.cli", "check", str(path)], capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    assert "error[syntax-error]" in result.stdout


def test_numbers_too_large_for_a_condition_are_syntax_errors_at_their_column() -> None:
    # A 400-digit literal once reached the resolver's range check and raised OverflowError.
    huge = "9" * 400
    for condition in (
        f"frustration > {huge}",
        "frustration < 1e400",
        f"frustration * 1{'0' * 40} < 3",
    ):
        text = BASE.replace(
            '"frustration >= 0.7 or affect == frustrated"', json.dumps(condition), 1
        )
        assert json.dumps(condition) in text
        loaded = load_text(text, "t.yaml")
        errors = [d for d in loaded.diagnostics if d.check == "syntax-error"]
        assert len(errors) == 1 and "too large" in errors[0].message, loaded.diagnostics
        number = condition.split()[-1] if "*" not in condition else condition.split()[2]
        line = text.splitlines()[errors[0].span.line - 1]
        assert line[errors[0].span.column - 1 :].startswith(number)
    # A large number within the bound is still a number.
    text = BASE.replace(
        '"frustration >= 0.7 or affect == frustrated"', '"frustration < 1000000000000000"', 1
    )
    assert not [d for d in load_text(text, "t.yaml").diagnostics if d.check == "syntax-error"]
