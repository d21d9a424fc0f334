"""The loader: YAML positions, structural errors, resolution, and diagnostics at file:line:col."""

from __future__ import annotations

import textwrap

import pytest

from pedrag.dsl.loader import load_text

BASE = """\
pedrag: 1
theory:
  id: tiny
  name: Tiny theory
metrics:
  frustration: {type: float, range: [0, 1], source: inferred}
  affect: {type: enum, values: [calm, frustrated], source: inferred}
  mastery: {type: float, range: [0, 1], source: trusted}
  exam_active: {type: bool, source: trusted}
  intent: {type: enum, values: [question, attempt], source: classified}
actions:
  encourage: {rung: H0, priority: 5, description: Encourage., tags: [affect_support]}
  hint: {rung: H3, priority: 6, description: Leading question.}
rules:
  - id: upset
    when: "frustration >= 0.7 or affect == frustrated"
    then: encourage
  - id: stuck
    when: "frustration < 0.7 and mastery < 0.5"
    then: hint
ceiling:
  start: H4
  steps:
    - {when: exam_active, set: H0}
"""


def diagnostics(text: str) -> list[tuple[str, int, int, str]]:
    loaded = load_text(textwrap.dedent(text), "t.yaml")
    return [(d.check, d.span.line, d.span.column, d.message) for d in loaded.diagnostics if d.span]


def test_the_base_file_is_clean_and_resolves() -> None:
    loaded = load_text(BASE, "t.yaml")
    assert loaded.diagnostics == []
    assert loaded.theory is not None
    assert [r.id for r in loaded.theory.rules] == ["upset", "stuck"]
    assert loaded.theory.rules[0].priority == 5  # defaults to the action's priority
    assert loaded.theory.ceiling_start == 4
    assert loaded.theory.metrics["exam_active"].default is False
    assert loaded.theory.metrics["affect"].default == "calm"


def test_syntax_error_inside_a_block_scalar_points_into_the_yaml_file() -> None:
    text = BASE.replace(
        '    when: "frustration < 0.7 and mastery < 0.5"\n',
        "    when: |\n      frustration < 0.7 and\n        mastery << 0.5\n",
    )
    found = diagnostics(text)
    assert found[0][:3] == ("syntax-error", 21, 18)
    line = text.splitlines()[20]
    assert line[17] == "<"


def test_syntax_error_in_a_folded_plain_scalar() -> None:
    text = BASE.replace(
        '    when: "frustration < 0.7 and mastery < 0.5"\n',
        "    when: frustration < 0.7 and\n      mastery ! 0.5\n",
    )
    check, line, column, _ = diagnostics(text)[0]
    assert (check, line, column) == ("syntax-error", 20, 15)


def test_duplicate_yaml_keys_are_an_error_not_last_one_wins() -> None:
    text = BASE.replace(
        "  hint: {rung: H3",
        "  encourage: {rung: H1, priority: 2, description: x}\n  hint: {rung: H3",
    )
    check, line, column, message = diagnostics(text)[0]
    assert (check, line, column) == ("syntax-error", 13, 3)
    assert "duplicate key `encourage`" in message and "line 12" in message


def test_unknown_key_suggests_the_closest_allowed_key() -> None:
    loaded = load_text(BASE.replace("priority: 6,", "prority: 6,"), "t.yaml")
    unknown = [d for d in loaded.diagnostics if d.check == "unknown-name"]
    assert unknown and unknown[0].help == "did you mean `priority`?"
    assert (unknown[0].span.line, unknown[0].span.column) == (13, 20)


def test_unknown_enum_value_and_action_are_named_with_suggestions() -> None:
    text = BASE.replace("affect == frustrated", "affect == frustated").replace(
        "then: hint", "then: hnt"
    )
    loaded = load_text(text, "t.yaml")
    messages = {(d.check, d.span.line, d.help) for d in loaded.diagnostics}
    assert ("unknown-name", 16, "did you mean `frustrated`?") in messages
    assert ("unknown-name", 20, "did you mean `hint`?") in messages


def test_constant_outside_the_metric_range_is_a_type_error() -> None:
    found = diagnostics(BASE.replace("frustration >= 0.7 or", "frustration >= 1.7 or"))
    assert found[0][:3] == ("type-error", 16, 27)


@pytest.mark.parametrize(
    ("condition", "fragment"),
    [
        ("affect > calm", "takes only `==` and `!=`"),
        ("frustration == calm", "unknown name `calm`"),
        ("mastery", "must be true or false"),
        ("frustration * mastery > 0.1", "multiply only by a constant"),
        ("rung > H2", "unknown name `rung`"),
        ("frustration > H2", "cannot compare"),
        ("trend(affect, 3) > 0", "numeric metric"),
        ("mean(frustration, 0) > 0.5", "at least 1"),
        ("foo(frustration, 3) > 0", "unknown function"),
    ],
)
def test_type_and_name_errors_in_rule_conditions(condition: str, fragment: str) -> None:
    text = BASE.replace('"frustration >= 0.7 or affect == frustrated"', f'"{condition}"')
    loaded = load_text(text, "t.yaml")
    assert loaded.theory is None
    assert any(fragment in d.message for d in loaded.diagnostics), [
        d.message for d in loaded.diagnostics
    ]
    assert all(d.span and d.span.line == 16 for d in loaded.diagnostics)


def test_ceiling_steps_may_read_only_trusted_and_classified_metrics() -> None:
    text = BASE.replace(
        "- {when: exam_active, set: H0}",
        '- {when: "intent == attempt and frustration > 0.5", set: H7}',
    )
    found = diagnostics(text)
    assert [f[:3] for f in found] == [("trust-boundary", 24, 37)]


def test_history_functions_in_a_ceiling_cross_the_trust_boundary() -> None:
    text = BASE.replace(
        "- {when: exam_active, set: H0}", '- {when: "mean(mastery, 3) > 0.5", at_most: H2}'
    )
    assert [f[0] for f in diagnostics(text)] == ["trust-boundary"]


def test_invariants_read_action_rung_and_tags() -> None:
    text = BASE + (
        "invariants:\n"
        '  - {id: exam_quiet, never: "exam_active and rung > H0"}\n'
        "  - {id: support, always: \"frustration >= 0.8 implies 'affect_support' in tags\"}\n"
        '  - {id: no_hint, never: "action == hint and mastery > 0.9"}\n'
    )
    loaded = load_text(text, "t.yaml")
    assert loaded.diagnostics == []
    assert loaded.theory is not None and len(loaded.theory.invariants) == 3


def test_unknown_tag_in_an_invariant() -> None:
    text = BASE + "invariants:\n  - {id: support, always: \"'afect_support' in tags\"}\n"
    ((check, line, column, message),) = diagnostics(text)
    assert (check, line) == ("unknown-name", 26) and "afect_support" in message


def test_compute_only_on_computed_metrics_and_range_must_hold_it() -> None:
    bad = BASE.replace(
        "  exam_active: {type: bool, source: trusted}\n",
        '  exam_active: {type: bool, source: trusted, compute: "mean(mastery, 3)"}\n'
        '  mastery_trend: {type: float, range: [-0.5, 0.5], source: computed, compute: "trend(mastery, 3)"}\n',
    )
    messages = [m for *_, m in diagnostics(bad)]
    assert any("only allowed on computed metrics" in m for m in messages)
    assert any("outside its range" in m for m in messages)


def test_duplicate_rule_ids() -> None:
    text = BASE.replace("- id: stuck", "- id: upset")
    assert [f[:3] for f in diagnostics(text)] == [("duplicate-id", 18, 9)]


def test_missing_required_key_and_wrong_shapes() -> None:
    text = BASE.replace(
        "  hint: {rung: H3, priority: 6, description: Leading question.}",
        "  hint: {rung: H9, priority: 11}",
    )
    found = diagnostics(text)
    checks = sorted(f[0] for f in found)
    assert checks == ["syntax-error", "type-error", "type-error"]
    assert all(f[1] == 13 for f in found)


@pytest.mark.parametrize(
    "text", ["", "just a string", "- a\n- b\n", "pedrag: 2\n", "a: [1\n", "a: &x [*x]\n", "\x00"]
)
def test_non_theory_documents_give_diagnostics(text: str) -> None:
    loaded = load_text(text, "t.yaml")
    assert loaded.diagnostics and not loaded.ok


def test_metric_provenance_must_name_declared_sources() -> None:
    text = BASE.replace(
        "  name: Tiny theory\n", "  name: Tiny theory\n  sources: [{id: meno, title: Meno}]\n"
    ).replace(
        "mastery: {type: float, range: [0, 1], source: trusted}",
        "mastery: {type: float, range: [0, 1], source: trusted, provenance: [meno, menno]}",
    )
    loaded = load_text(text, "t.yaml")
    assert [(d.check, d.items, d.help) for d in loaded.diagnostics] == [
        ("unknown-name", ("metric:mastery",), "did you mean `meno`?")
    ]


def test_yaml_booleans_where_text_belongs_say_so_and_suggest_quotes() -> None:
    text = BASE.replace("values: [question, attempt]", "values: [yes, no]")
    found = load_text(text, "t.yaml").diagnostics
    assert [(d.span.line, d.span.column) for d in found if d.span] == [(10, 33), (10, 38)]
    assert "YAML reads `yes` as the boolean true" in found[0].message
    assert found[0].help == 'quote it: "yes"'


def test_a_key_yaml_reads_as_a_bool_keeps_its_name() -> None:
    text = BASE.replace("  hint: {", "  on: {").replace("then: hint", 'then: "on"')
    loaded = load_text(text, "t.yaml")
    assert loaded.theory is not None, loaded.diagnostics
    assert "on" in loaded.theory.actions


def test_a_numeric_condition_is_reported_by_the_condition_checker() -> None:
    text = BASE.replace('when: "frustration < 0.7 and mastery < 0.5"', "when: 1")
    found = diagnostics(text)
    assert found == [
        ("type-error", 19, 11, "a condition must be true or false, but this is a number")
    ]


def test_windows_line_endings_give_the_same_positions_and_clean_excerpts() -> None:
    from pedrag.compiler.reports.text import format_diagnostic

    text = BASE.replace('affect == frustrated"', 'affect == frustated"')
    unix = load_text(text, "t.yaml")
    windows = load_text(text.replace("\n", "\r\n"), "t.yaml")
    assert [d.span for d in unix.diagnostics] == [d.span for d in windows.diagnostics]
    shown = format_diagnostic(windows.diagnostics[0], {"t.yaml": windows.source})
    assert "\r" not in shown


def test_tab_indentation_gets_a_hint() -> None:
    loaded = load_text(BASE.replace("\n  name: Tiny theory", "\n\tname: Tiny theory"), "t.yaml")
    (found,) = loaded.diagnostics
    assert found.check == "syntax-error" and found.span is not None and found.span.line == 4
    assert found.help is not None and "tabs" in found.help


def test_carets_line_up_under_tabs_and_wide_characters() -> None:
    from pedrag.compiler.reports.text import format_diagnostic

    text = BASE.replace(
        'when: "frustration >= 0.7 or affect == frustrated"',
        'description: "挫败感"\n    when: "frustration >= 0.7 or\tafect == frustrated"',
    )
    loaded = load_text(text, "t.yaml")
    (found,) = [d for d in loaded.diagnostics if d.check == "unknown-name"]
    line, caret = format_diagnostic(found, {"t.yaml": loaded.source}).splitlines()[2:4]
    assert caret.index("^") == line.index("afect")
    assert caret.count("^") == len("afect")


def test_a_file_that_is_not_utf8_is_reported_at_the_offending_byte(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pedrag.dsl.loader import load_file

    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"pedrag: 1\ntheory: {id: t, name: caf\xe9}\n")
    (found,) = load_file(path).diagnostics
    assert found.span is not None and (found.span.line, found.span.column) == (2, 26)
    assert found.span.file == str(path) and "not UTF-8" in found.message


def test_a_theory_needs_at_least_one_action() -> None:
    text = BASE.split("actions:")[0] + "actions: {}\nrules: []\n"
    loaded = load_text(text, "t.yaml")
    assert loaded.theory is None
    (diagnostic,) = loaded.diagnostics
    assert diagnostic.check == "type-error" and diagnostic.span.line == 11
    assert "at least 1 item" in diagnostic.message


def test_an_empty_range_is_reported_on_the_range() -> None:
    loaded = load_text(
        BASE.replace(
            "mastery: {type: float, range: [0, 1]", "mastery: {type: float, range: [1, 0]"
        ),
        "t.yaml",
    )
    (diagnostic,) = loaded.diagnostics
    assert diagnostic.check == "type-error" and "empty" in diagnostic.message
    assert (diagnostic.span.line, diagnostic.span.column) == (8, 33)


EIGHT_MISTAKES = """\
pedrag: 1
theory: {id: eight, name: Eight mistakes}
metrics:
  frustration: {type: float, range: [0, 1], source: inferred}
  attempts: {type: int, range: [0, 10], source: trusted}
actions:
  encourage: {rung: H0, priority: 5, description: Encourage.}
  probe: {rung: H9, priority: 5, description: Probe.}
  hint: {rung: H2, priority: high, description: Hint.}
  explain: {rung: H4, priorty: 5, description: Explain.}
  model: {rung: H5, priority: 5, description: Model., tagz: [x]}
rules:
  - {id: upset, when: "frustraton >= 0.7", then: encourage}
  - {id: stuck, when: "attempts >= 3", then: encourag}
  - {id: odd, when: "attempts >= 0.5 and", then: encourage}
  - {id: typed, when: "frustration == yes", then: encourage}
  - {id: keep, when: "attempts >= 5", then: probe}
ceiling: {start: H4}
"""


def test_a_file_with_eight_independent_mistakes_reports_all_eight_in_one_run() -> None:
    """Four broken actions (validation) and four broken rules (resolution): the rules are
    resolved against the actions that are valid, so no second run is needed; `keep` names
    the broken action `probe`, which is not reported again."""
    found = diagnostics(EIGHT_MISTAKES)
    assert [(check, line) for check, line, _, _ in found] == [
        ("type-error", 8),  # rung H9
        ("type-error", 9),  # priority: high
        ("unknown-name", 10),  # priorty (one finding, not also "missing `priority`")
        ("unknown-name", 11),  # tagz
        ("unknown-name", 13),  # frustraton
        ("unknown-name", 14),  # encourag
        ("syntax-error", 15),  # a condition ending in `and`
        ("unknown-name", 16),  # yes
    ]
    messages = [message for *_, message in found]
    assert "unknown key `priorty`" in messages[2]
    assert "rule `stuck` names unknown action `encourag`" in messages[5]


def test_a_misspelt_required_key_is_one_unknown_name_with_did_you_mean() -> None:
    text = BASE.replace("then: hint", "thne: hint")
    loaded = load_text(text, "t.yaml")
    assert [(d.check, d.message, d.help) for d in loaded.diagnostics] == [
        (
            "unknown-name",
            "unknown key `thne`",
            "did you mean `then`?",
        )
    ]


def test_rules_after_a_dropped_rule_keep_their_own_lines() -> None:
    """A broken rule is left out for resolution; the rules after it are still reported at
    their own lines (the positions are re-indexed, not shifted onto a neighbour)."""
    text = BASE.replace('    when: "frustration >= 0.7 or affect == frustrated"\n', "").replace(
        "mastery < 0.5", "mastry < 0.5"
    )
    found = diagnostics(text)
    # `upset` (line 15) lacks `when:`; `stuck`'s misspelt metric is on its own line 18.
    assert [(check, line) for check, line, _, _ in found] == [
        ("syntax-error", 15),
        ("unknown-name", 18),
    ]


def test_a_yaml_merge_key_is_named_not_pyyamls_constructor_message() -> None:
    text = BASE.replace(
        "  frustration: {type: float, range: [0, 1], source: inferred}\n",
        "  base: &base {type: float, range: [0, 1], source: inferred}\n"
        "  frustration: {<<: *base}\n",
    )
    (found,) = load_text(text, "t.yaml").diagnostics
    assert found.message == "YAML merge keys (`<<:`) are not supported in pedrag files"
    assert (found.span.line, found.span.column) == (7, 17)
    assert "constructor" not in (found.help or "")
