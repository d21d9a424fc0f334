"""`pedrag index`: index a course folder, skip what did not change, search it, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pedrag.cli import main
from tests.course_folder import write_course


def test_index_then_reindex_then_search(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_course(tmp_path / "bio")
    db = str(tmp_path / "db.sqlite")

    assert main(["index", str(folder), "--course", "bio_101", "--db", db]) == 0
    first = capsys.readouterr().out
    assert main(["index", str(folder), "--course", "bio_101", "--db", db]) == 0
    second = capsys.readouterr().out
    question = "what does chlorophyll absorb?"
    assert main(["index", "--course", "bio_101", "--db", db, "--search", question]) == 0
    found = capsys.readouterr().out
    argv = ["index", "--course", "bio_101", "--db", db, "--list", "--format", "json"]
    assert main(argv) == 0
    listed = json.loads(capsys.readouterr().out)

    assert "added      slides-4.pdf  (3 passages)" in first
    assert "3 files, 3 (re)indexed" in first
    assert "3 files, 0 (re)indexed" in second and "unchanged  notes.md" in second
    assert found.splitlines()[0].startswith("[slides 4, p. 2]") and "(supports)" in found
    assert [d["document"] for d in listed["documents"]] == [
        "handout.html",
        "notes.md",
        "slides-4.pdf",
    ]


def test_index_errors_are_one_line_with_the_right_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db.sqlite")
    (tmp_path / "picture.png").write_bytes(b"\x89PNG")

    assert main(["index", str(tmp_path / "missing"), "--course", "bio", "--db", db]) == 1
    assert "no such file or directory" in capsys.readouterr().err
    assert main(["index", str(tmp_path / "picture.png"), "--course", "bio", "--db", db]) == 1
    assert "unsupported file type `.png`" in capsys.readouterr().err
    assert main(["index", str(tmp_path), "--course", "Bio 101", "--db", db]) == 2
    assert "course id 'Bio 101'" in capsys.readouterr().err
    assert main(["index", "--course", "bio", "--db", db]) == 2
    assert "give MATERIALS" in capsys.readouterr().err


def test_why_shows_what_a_question_would_retrieve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db.sqlite")
    assert main(["index", str(write_course(tmp_path / "bio")), "--course", "bio", "--db", db]) == 0
    capsys.readouterr()
    socratic = str(Path(__file__).resolve().parents[2] / "theories" / "socratic.yaml")
    base = ["why", socratic, "--state", "intent=question", "--course", "bio", "--db", db]

    assert main([*base, "--question", "Is chlorophyll the thing that catches the light?"]) == 0
    concept = capsys.readouterr().out
    assert main([*base, "--question", "What is a black hole?", "--format", "json"]) == 0
    uncovered = json.loads(capsys.readouterr().out)["grounding"]
    assert main([*base, "--question", "How do I start?"]) == 0
    exercise_talk = capsys.readouterr().out

    assert "concept question: yes" in concept and "grounding required" in concept
    assert "shown [slides 4, p. 2]  covers 67%: Chlorophyll is the green pigment" in concept
    assert uncovered["grounding_required"] and uncovered["passages"] == []
    assert "concept question: no" in exercise_talk and "grounding not required" in exercise_talk
    assert main(["why", socratic, "--course", "bio"]) == 2
