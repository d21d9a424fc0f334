"""`pedrag instructor --learner ID --exams | --retake EXAM`: the service's exam routes from the
CLI, on a real SQLite database, through the same store functions (a grant from the CLI is one
the tutor honours, and one the route then refuses to repeat) and with the route's 404 and 409
cases as messages and exit statuses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pedrag.cli import main
from pedrag.commands.instructor import NO_RETAKE_DUE
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.store.session_store import AlreadyExists, SessionStore
from pedrag.runtime.turn.tutor import Tutor

LEARNING = Path(__file__).resolve().parents[1] / "data" / "runtime" / "learning.yaml"
TENANT = "school"


@pytest.fixture(scope="module")
def theories() -> TheorySet:
    return TheorySet.shipped()


@pytest.fixture
def course(tmp_path: Path) -> Path:
    folder = tmp_path / "course"
    folder.mkdir()
    shutil.copy(LEARNING, folder)  # a curriculum with an exam: times_exam
    return folder


def _sit(db: Path, theories: TheorySet, learner: str, tenant: str = TENANT) -> str:
    """A learner starts the exam as the service starts it (the learner named); its session."""
    with SessionStore(str(db), tenant=tenant) as store:
        try:
            store.create_learner(learner)
        except AlreadyExists:
            pass  # a second sitting of the same learner
        tutor = Tutor(theories, OfflineBackend(), LEARNING, store)
        return tutor.start("socratic", exercise="times_exam", learner=learner).id


def _cli(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[int, str, str]:
    code = main(["instructor", *args, "--db", str(db), "--tenant", TENANT])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_retake_granted_from_the_cli_allows_exactly_one_more_sitting(
    tmp_path: Path, course: Path, theories: TheorySet, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "sessions.db"
    first = _sit(db, theories, "ana")
    code, out, err = _cli(capsys, db, "--learner", "ana", "--exams", "--format", "json")
    assert code == 0, err
    listed = json.loads(out)
    assert [(s["exam"], s["sitting"], s["session_id"]) for s in listed["sittings"]] == [
        ("times_exam", 1, first)
    ]
    assert listed["retakes"] == []
    with pytest.raises(ValueError, match="has sat exam 'times_exam' already"):
        _sit(db, theories, "ana")

    retake = ["--learner", "ana", "--retake", "times_exam", "--theories", str(course)]
    code, out, err = _cli(capsys, db, *retake, "--format", "json")
    assert code == 0, err
    granted = json.loads(out)["retake"]
    assert (granted["exam"], granted["sitting"], granted["granted_by"]) == ("times_exam", 2, "cli")
    code, out, err = _cli(capsys, db, *retake)  # a second grant before the first is used
    assert code == NO_RETAKE_DUE and out == ""
    assert "no retake due" in err and "not used yet" in err
    with SessionStore(str(db), tenant=TENANT) as store:
        assert len(store.exam_sittings("ana")[1]) == 1  # the refused grant wrote nothing

    code, out, err = _cli(capsys, db, "--learner", "ana", "--exams")
    assert code == 0, err
    assert "sitting 3" not in out
    assert "times_exam  sitting 2  not sat yet: retake granted by cli" in out
    second = _sit(db, theories, "ana")  # the grant is honoured by the tutor, once
    with pytest.raises(ValueError, match=f"session {second}"):
        _sit(db, theories, "ana")
    code, out, err = _cli(capsys, db, "--learner", "ana", "--exams")
    assert code == 0, err
    assert f"times_exam  sitting 2  session {second}" in out
    assert "retake granted by cli" in out and "not sat yet" not in out
    # used, the grant makes the next one due again
    code, out, err = _cli(capsys, db, *retake)
    assert code == 0, err
    assert "learner ana may sit times_exam once more (sitting 3, granted by cli" in out


def test_the_routes_refusals_are_messages_and_exit_statuses(
    tmp_path: Path, course: Path, theories: TheorySet, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "sessions.db"
    _sit(db, theories, "ana")
    _sit(db, theories, "bo", tenant="other")  # another tenant's learner is no one here
    with SessionStore(str(db), tenant=TENANT) as store:
        store.create_learner("cy")  # a learner who never sat an exam
    served = ["--theories", str(course)]
    cases = [
        (["--learner", "zed", "--exams"], 1, "no learner 'zed' in tenant 'school'"),
        (["--learner", "bo", "--exams"], 1, "no learner 'bo' in tenant 'school'"),
        (["--learner", "bo", "--retake", "times_exam", *served], 1, "no learner 'bo'"),
        (
            ["--learner", "ana", "--retake", "mult_7x8", *served],
            1,
            "no exam 'mult_7x8' in the loaded curricula (exams: fraction_exam, loop_exam, "
            "quick_exam, times_exam)",  # mult_7x8 is practice
        ),
        (
            ["--learner", "ana", "--retake", "times_exam"],
            1,
            "(exams: none); pass the curricula `pedrag serve` serves with --theories",
        ),
        (
            ["--learner", "cy", "--retake", "times_exam", *served],
            NO_RETAKE_DUE,
            "learner 'cy' has not sat exam 'times_exam': nothing to retake",
        ),
    ]
    for args, status, message in cases:
        code, out, err = _cli(capsys, db, *args)
        assert (code, out) == (status, ""), (args, err)
        assert message in err, (args, err)
    with SessionStore(str(db), tenant=TENANT) as store:
        assert store.exam_sittings("ana")[1] == [] and store.exam_sittings("cy") == ([], [])


@pytest.mark.parametrize(
    "args, message",
    [
        (["--exams"], "--exams and --retake need --learner ID"),
        ([], "give a session id, or --learner ID with --exams or --retake EXAM"),
        (["abc123", "--learner", "ana", "--exams"], "a session id or --learner, not both"),
        (["--learner", "ana"], "give --exams (list sittings and retakes) or --retake EXAM"),
        (["--learner", "ana", "--exams", "--lift-conduct"], "change a session: give its id"),
    ],
)
def test_mixed_up_options_are_usage_errors(
    tmp_path: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, tmp_path / "sessions.db", *args)
    assert (code, out) == (2, "") and message in err
