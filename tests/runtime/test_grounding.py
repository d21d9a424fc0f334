"""Grounded turns (issue 17): concept questions answered from the course's own materials,
quoted and cited; no supporting passage, no invented answer; the judge rejects unsupported
claims as `grounding`, and the audit records what was shown and cited."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pedrag.extract.materials import index_materials
from pedrag.runtime.course.grounding import unsupported_claim
from pedrag.runtime.course.index import CourseIndex
from pedrag.runtime.llm.offline_grounded import NOT_COVERED, WITHHELD
from pedrag.runtime.llm.openai_backend import OpenAIBackend, OpenAISettings
from pedrag.runtime.store.session_store import SessionStore
from pedrag.runtime.turn.classifier import heuristic_concept_question, heuristic_intent
from pedrag.runtime.turn.tutor import Tutor
from tests.course_folder import write_course
from tests.fake_openai import FakeOpenAI, Reply
from tests.runtime.test_tutor_failures import scripted
from tests.runtime.test_tutor_withholding import ActorSays
from tests.runtime.tutor_fixtures import shipped

CURRICULUM = """\
pedrag: 1
kind: curriculum
id: biology
course: {course}
goals:
  - {{id: photosynthesis_basics, domain: biology, topic: photosynthesis}}
exercises:
  - id: gas_in
    goal: photosynthesis_basics
    prompt: Which gas do plants take in from the air for photosynthesis?
    answer: carbon dioxide
    accept: ["CO2"]
"""
CHLOROPHYLL = "Chlorophyll is the green pigment inside chloroplasts that captures light energy."
QUESTION = "Is chlorophyll the thing that catches the light?"


@pytest.fixture()
def course(tmp_path: Path) -> Iterator[tuple[SessionStore, Path]]:
    with SessionStore(str(tmp_path / "db.sqlite")) as store:
        index_materials(CourseIndex(store), "bio_101", [write_course(tmp_path / "bio")])
        curriculum = tmp_path / "biology.yaml"
        curriculum.write_text(CURRICULUM.format(course="bio_101"), "utf-8")
        yield store, curriculum


def _tutor(course: tuple[SessionStore, Path], backend: Any = None) -> Tutor:
    store, curriculum = course
    return Tutor(shipped(), backend, curriculum, store)


def test_a_concept_question_offline_gets_the_right_passage_quoted_and_cited(course: Any) -> None:
    tutor = _tutor(course)
    session = tutor.start("socratic", exercise="gas_in", seed=3)
    result = tutor.turn(session, QUESTION)

    assert result.contract.grounding_required and result.contract.judge_required
    assert f'"{CHLOROPHYLL}" [slides 4, p. 2].' in result.tutor
    grounding = result.audit["grounding"]
    assert grounding["kind"] == "question"
    assert grounding["shown"][0]["citation"] == "[slides 4, p. 2]"
    assert grounding["cited"] == ["[slides 4, p. 2]"]
    assert result.judge is not None and result.judge["verdict"] == "allow"
    assert "carbon dioxide" not in result.tutor.lower()


def test_a_question_the_materials_do_not_cover_is_not_answered(course: Any) -> None:
    tutor = _tutor(course)
    session = tutor.start("socratic", exercise="gas_in", seed=3)
    result = tutor.turn(session, "What is a black hole made of?")

    assert result.contract.grounding_required
    assert result.tutor.startswith(NOT_COVERED)
    assert "[" not in result.tutor
    assert result.audit["grounding"]["shown"] == [] and result.audit["grounding"]["cited"] == []


def test_retrieval_never_shows_a_passage_that_states_the_hidden_answer(course: Any) -> None:
    tutor = _tutor(course)
    session = tutor.start("socratic", exercise="gas_in", seed=3)
    # The stomata passage answers this, and it names the exercise's answer (carbon dioxide).
    result = tutor.turn(session, "What are stomata for?")

    grounding = result.audit["grounding"]
    assert grounding["withheld"] >= 1
    assert all(
        item["document"] != "notes.md" or "Stomata" not in item["heading"]
        for item in grounding["shown"]
    )
    assert "carbon dioxide" not in result.tutor.lower() and "co2" not in result.tutor.lower()
    assert result.tutor.startswith(WITHHELD) and NOT_COVERED not in result.tutor


def test_exercise_talk_is_not_a_concept_question_and_is_not_grounded(course: Any) -> None:
    tutor = _tutor(course)
    session = tutor.start("socratic", exercise="gas_in", seed=3)
    result = tutor.turn(session, "How do I start?")

    assert result.audit["grounding"] is None and not result.contract.grounding_required
    assert "course materials" not in result.tutor


def test_without_a_course_nothing_is_grounded(course: Any, tmp_path: Path) -> None:
    store, _ = course
    plain = tmp_path / "plain.yaml"
    plain.write_text(CURRICULUM.replace("course: {course}\n", "").format(), "utf-8")
    tutor = Tutor(shipped(), None, plain, store)
    session = tutor.start("socratic", exercise="gas_in", seed=3)
    result = tutor.turn(session, QUESTION)

    assert not result.contract.grounding_required and result.audit["grounding"] is None


def test_an_exam_is_never_grounded(course: Any, tmp_path: Path) -> None:
    tutor = _tutor(course)
    session = tutor.start("socratic", exercise="gas_in", seed=3, trusted={"exam_active": True})
    result = tutor.turn(session, QUESTION)

    assert result.contract.exam_lockdown and not result.contract.grounding_required
    assert "[slides" not in result.tutor


def test_a_streamed_grounded_turn_is_judged_whole_and_cites(course: Any) -> None:
    tutor = _tutor(course)
    session = tutor.start("socratic", exercise="gas_in", seed=3)
    shown = "".join(tutor.stream(session, QUESTION))

    assert "[slides 4, p. 2]" in shown
    assert session.results[-1].audit["stream"]["mode"] == "buffered"


def test_the_offline_judge_rejects_an_unsupported_claim_then_points_to_the_passages(
    course: Any,
) -> None:
    tutor = _tutor(
        course, ActorSays("Chlorophyll is made of iron and hears sound [slides 4, p. 2].")
    )
    session = tutor.start("socratic", exercise="gas_in", seed=3)
    result = tutor.turn(session, QUESTION)

    assert result.revised and result.fallback
    assert result.tutor.startswith("Have a look at [slides 4, p. 2]")
    rejected = [d for d in result.audit["drafts"] if d.get("judge_rule_id") == "grounding"]
    assert len(rejected) == 2 and "does not support" in rejected[0]["judge_reason"]


def _scripted_turn(
    fake: FakeOpenAI, course: Any, drafts: Iterator[str], verdicts: Iterator[dict[str, str]]
) -> tuple[Tutor, Any, Any]:
    """One grounded turn (the concept question) on the scripted server: the actor says
    `drafts` in turn, the judge answers `verdicts` in turn."""
    fake.always(
        scripted(
            {
                "actor": lambda request: Reply.text(next(drafts)),
                "judge": lambda request: Reply.json(next(verdicts)),
            }
        )
    )
    settings = OpenAISettings(base_url=fake.base_url, api_key="t", retries=0, backoff_s=0)
    tutor = _tutor(course, OpenAIBackend(settings, sleep=lambda seconds: None))
    session = tutor.start("socratic", exercise="gas_in", seed=3)
    return tutor, session, tutor.turn(session, QUESTION)


def test_a_draft_with_an_unsupported_claim_is_revised_on_the_scripted_server(
    fake_openai: FakeOpenAI, course: Any
) -> None:
    drafts = iter(
        [
            "Chlorophyll is made of iron and absorbs sound waves [slides 4, p. 2].",
            f'Yes: "{CHLOROPHYLL}" [slides 4, p. 2] What colour do you think it reflects?',
        ]
    )
    reason = "The draft says chlorophyll is made of iron, which no passage supports."
    verdicts = iter(
        [
            {"verdict": "revise", "rule_id": "grounding", "reason": reason},
            {"verdict": "allow", "rule_id": "within-contract", "reason": "Supported and cited."},
        ]
    )
    tutor, session, result = _scripted_turn(fake_openai, course, drafts, verdicts)

    assert result.revised and not result.fallback
    assert result.tutor.startswith('Yes: "Chlorophyll is the green pigment')
    first = result.audit["drafts"][0]
    assert first["judge"] == "revise" and first["judge_rule_id"] == "grounding"
    assert first["judge_reason"] == reason
    assert result.audit["grounding"]["cited"] == ["[slides 4, p. 2]"]
    judged = [r for r in fake_openai.requests_to("chat") if r.role == "judge"]
    assert len(judged) == 2 and all(CHLOROPHYLL in r.text for r in judged)
    assert all("catches the light" not in r.text for r in judged)  # never the student message
    actor = [r for r in fake_openai.requests_to("chat") if r.role == "actor"]
    assert "rule grounding" in actor[1].text and CHLOROPHYLL in actor[0].text


def test_a_draft_the_model_judge_lets_through_still_meets_the_support_rule_in_code(
    fake_openai: FakeOpenAI, course: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model judge is told the support rule; the runtime enforces it. A draft citing a
    passage this turn never showed, allowed by the judge, is revised all the same, and the
    audit says the support check rejected it, with its reason."""
    from pedrag.cli import main

    drafts = iter(
        [
            "Chlorophyll also stores water, see [textbook, p. 99].",
            f'Yes: "{CHLOROPHYLL}" [slides 4, p. 2] What colour do you think it reflects?',
        ]
    )
    allow = {"verdict": "allow", "rule_id": "within-contract", "reason": "Looks fine."}
    session, result = _scripted_turn(fake_openai, course, drafts, iter([allow] * 2))[1:]

    assert result.revised and not result.fallback
    assert result.tutor.startswith('Yes: "Chlorophyll is the green pigment')
    first, second = result.audit["drafts"]
    assert first["judge"] == "allow" and "[textbook, p. 99]" in first["support"]
    assert "support" not in second
    actor = [r for r in fake_openai.requests_to("chat") if r.role == "actor"]
    assert "rule grounding" in actor[1].text
    store, _ = course
    assert main(["audit", session.id, "--db", store.url.removeprefix("sqlite+pysqlite:///")]) == 0
    assert "draft 1 rejected by the support check [grounding]: The draft cites" in (
        capsys.readouterr().out
    )


PASSAGES = [{"cite": "[slides 4, p. 2]", "text": CHLOROPHYLL + " It reflects green light."}]


@pytest.mark.parametrize(
    ("draft", "problem"),
    [
        ("Chlorophyll captures light energy [slides 4, p. 2]. What does that suggest?", None),
        (f'The slides say: "{CHLOROPHYLL}" [slides 4, p. 2]', None),
        ("Think about the colour leaves reflect.", None),
        ("Chlorophyll is stored in the roots [slides 9, p. 1].", "not among this turn's passages"),
        ('The slides say "chlorophyll is blue and absorbs green light".', "no passage contains"),
        ("Chlorophyll is made of iron and hears sound [slides 4, p. 2].", "does not support"),
    ],
)
def test_support_rule(draft: str, problem: str | None) -> None:
    found = unsupported_claim(draft, PASSAGES)
    assert (found is None) if problem is None else (found is not None and problem in found)


@pytest.mark.parametrize(
    ("message", "concept"),
    [
        ("Is chlorophyll the thing that catches the light?", True),
        ("What is chlorophyll?", True),
        ("what does osmosis mean?", True),
        ("Why do leaves look green?", True),
        ("How does photosynthesis work?", True),
        ("How do I start?", False),
        ("Is my answer right?", False),
        ("What is 7 times 8?", False),
        ("What is the answer?", False),
        ("Is it 56?", False),
        ("what should I do next?", False),
    ],
)
def test_the_pre_classifier_tells_concept_questions_from_exercise_talk(
    message: str, concept: bool
) -> None:
    intent = heuristic_intent(message)
    assert heuristic_concept_question(message, intent) is concept
    assert not heuristic_concept_question(message, "solution_demand")


def test_the_shipped_point_to_concept_actions_declare_grounding() -> None:
    assert "grounded" in shipped()["socratic"].policy.actions["point_to_concept"].tags
    assert "grounded" in shipped()["srl"].policy.actions["point_to_resource"].tags


def test_pedrag_audit_shows_passages_citations_and_grounding_rejections(
    course: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from pedrag.cli import main

    store, _ = course
    tutor = _tutor(course)
    session = tutor.start("socratic", exercise="gas_in", seed=3)
    tutor.turn(session, QUESTION)
    liar = _tutor(
        course, ActorSays("Chlorophyll is made of iron and hears sound [slides 4, p. 2].")
    )
    lied = liar.start("socratic", exercise="gas_in", seed=3)
    liar.turn(lied, QUESTION)
    database = store.url.removeprefix("sqlite+pysqlite:///")

    assert main(["audit", session.id, "--db", database]) == 0
    grounded = capsys.readouterr().out
    assert main(["audit", lied.id, "--db", database]) == 0
    rejected = capsys.readouterr().out

    assert "grounding question in course bio_101: shown [slides 4, p. 2]" in grounded
    assert "cited [slides 4, p. 2]" in grounded
    assert "draft 1 rejected by the judge [grounding]: The draft attributes" in rejected
    assert (
        "FALLBACK (templated reply)" in rejected and "Have a look at [slides 4, p. 2]" in rejected
    )


def test_the_store_is_asked_about_materials_only_when_grounding_could_apply(
    course: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    real = CourseIndex.has_course

    def counting(self: CourseIndex, name: str) -> bool:
        asked.append(name)
        return real(self, name)

    monkeypatch.setattr(CourseIndex, "has_course", counting)
    tutor = _tutor(course)
    session = tutor.start("socratic", exercise="gas_in", seed=3)
    results = [tutor.turn(session, m) for m in ("I think it is oxygen", "How do I start?")]
    # Exercise talk asks only when the chosen action is the grounded one (socratic's).
    assert len(asked) == sum(r.action == "point_to_concept" for r in results)
    ordinary = len(asked)
    result = tutor.turn(session, QUESTION)
    assert result.contract.grounding_required and len(asked) == ordinary + 1
