"""`pedrag replay`: recorded offline sessions re-run under an edited theory name exactly the
turns whose recorded state the edit touches."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pedrag.cli import main
from pedrag.runtime.store.session_store import SessionStore

ROOT = Path(__file__).resolve().parents[2]
SOCRATIC = (ROOT / "theories" / "socratic.yaml").read_text()
PERSONAS = ("struggling-sarah", "answer-seeker", "injector")


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("replay") / "sessions.db")
    for persona in PERSONAS:
        code = main(
            ["simulate", "--persona", persona, "--exercise", "mult_7x8", "--turns", "5"]
            + ["--offline", "--db", path, "--format", "json"]
        )
        assert code == 0
    return path


def _records(database: str) -> list[tuple[str, dict[str, Any]]]:
    with SessionStore(database) as store:
        return [
            (item["id"], record)
            for item in store.list_sessions()
            for record in store.audit_records(item["id"])
        ]


def _replay(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["replay", *args, "--format", "json", "--all"])
    return code, json.loads(capsys.readouterr().out)


def test_the_unedited_theory_reproduces_every_recorded_turn_and_changes_none(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    same = tmp_path / "same.yaml"
    same.write_text(SOCRATIC)
    code, report = _replay(capsys, "--db", database, "--theory-file", str(same), "--exit-code")
    recorded = [r for _, r in _records(database) if r["theory"] == "socratic"]
    assert code == 0
    assert report["turns_replayed"] == len(recorded) > 0
    assert report["turns_not_reproduced"] == [] and report["turns_changed"] == 0
    assert report["turns_under_other_theories"] == len(_records(database)) - len(recorded)


def test_an_edited_rule_changes_exactly_the_turns_whose_recorded_state_it_no_longer_matches(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The catch-all rule now holds only on vague replies: every turn where it was eligible
    # and the recorded reasoning was not vague loses it, and no other turn changes.
    edited = SOCRATIC.replace(
        '  - id: catch_all_encourage\n    when: "true"',
        '  - id: catch_all_encourage\n    when: "reasoning_quality == vague"',
    )
    assert edited != SOCRATIC
    new = tmp_path / "edited.yaml"
    new.write_text(edited)
    code, report = _replay(capsys, "--db", database, "--theory-file", str(new), "--exit-code")
    expected = {
        (session, record["turn"])
        for session, record in _records(database)
        if record["theory"] == "socratic"
        and "catch_all_encourage" in record["choice"]["eligible"]
        and record["inferred"].get("reasoning_quality") != "vague"
    }
    found = {(t["session"], t["turn"]) for t in report["turns"] if t["differs"]}
    assert expected and found == expected
    assert code == 1 and report["turns_changed"] == len(expected)
    assert report["by_rule"] == {"catch_all_encourage": len(expected)}
    assert report["sessions_changed"] == len({session for session, _ in expected})
    for turn in report["turns"]:
        if turn["differs"]:
            assert "catch_all_encourage" in turn["old"]["eligible"]
            assert "catch_all_encourage" not in turn["new"]["eligible"]
            assert turn["old"]["choice"] != turn["new"]["choice"]


def test_a_weight_edit_changes_the_probabilities_of_the_turns_where_the_rule_is_eligible(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edited = SOCRATIC.replace(
        "    then: pump_for_more\n    source: graesser_2005",
        "    then: pump_for_more\n    weight: 3\n    source: graesser_2005",
        1,
    )
    assert edited != SOCRATIC
    new = tmp_path / "weight.yaml"
    new.write_text(edited)
    code, report = _replay(
        capsys, "--db", database, "--theory-file", str(new), "--session", _records(database)[0][0]
    )
    session = _records(database)[0][0]
    expected = {
        record["turn"]
        for sid, record in _records(database)
        if sid == session
        and record["theory"] == "socratic"
        and "vague_reply_pump" in record["choice"]["eligible"]
        and len(record["choice"]["eligible"]) > 1
    }
    found = {t["turn"] for t in report["turns"] if t["differs"]}
    assert expected and found == expected and code == 0
    for turn in report["turns"]:
        if turn["differs"]:
            assert turn["rules"] == ["vague_reply_pump"]
            assert turn["old"]["eligible"] == turn["new"]["eligible"]
            assert turn["new"]["choice"]["pump_for_more"] > turn["old"]["choice"]["pump_for_more"]


def test_bad_input_is_a_usage_error(
    database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = tmp_path / "t.yaml"
    new.write_text(SOCRATIC)
    assert main(["replay", "--db", database, "--theory-file", str(new), "--since", "lastweek"]) == 2
    assert "ISO 8601" in capsys.readouterr().err
    assert main(["replay", "--db", database, "--theory-file", str(new), "--session", "nope"]) == 2
    assert "no session" in capsys.readouterr().err
    assert main(["replay", "--db", database, "--theory-file", str(tmp_path / "missing.yaml")]) == 2
    future = main(["replay", "--db", database, "--theory-file", str(new), "--since", "2999-01-01"])
    assert future == 0 and "replayed 0 turns" in capsys.readouterr().out


def test_the_run_in_the_help_and_docs_is_a_real_run(
    database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pedrag.commands.replay import EPILOG

    monkeypatch.chdir(tmp_path)
    Path("edited.yaml").write_text(
        SOCRATIC.replace(
            '  - id: catch_all_encourage\n    when: "true"',
            '  - id: catch_all_encourage\n    when: "reasoning_quality == vague"',
        )
    )
    capsys.readouterr()
    assert main(["replay", "--db", database, "--theory-file", "edited.yaml"]) == 0
    produced = capsys.readouterr().out
    shown = EPILOG.split("$ pedrag replay --db sessions.db --theory-file edited.yaml\n")[1]
    shown = "".join(line.removeprefix("  ") + "\n" for line in shown.splitlines())

    def masked(text: str) -> str:  # session ids are random
        return re.sub(r"session [0-9a-f]{12}", "session ID", text)

    assert masked(produced) == masked(shown)
