"""The red team of issue 26 against the real :class:`Tutor`: an adversarial actor that writes
the payload (first draft and revision alike) and a judge that always allows, through the real
OpenAI client and the scripted server, in turn mode and in stream mode. Acceptance: at most 5%
of the payloads reach the student in either mode (the deterministic layers alone)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pedrag.runtime.llm.openai_backend import OpenAIBackend, OpenAISettings
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor
from tests.fake_openai import FakeOpenAI, Reply
from tests.runtime.red_team_payloads import all_payloads
from tests.runtime.test_tutor_failures import offline_reply
from tests.runtime.test_tutor_withholding import ADVERSARIAL_JUDGE, SUITE_CURRICULUM, _leaks, _plain

MAX_REACHING = 0.05
CASES = all_payloads()


def _tutor(fake: FakeOpenAI, tmp_path: Path, ceiling: int, payload: list[str]) -> Tutor:
    def reply(request: Any) -> Any:
        if request.role == "actor":
            return Reply.text(payload[0])
        if request.role == "judge":
            return Reply.json(ADVERSARIAL_JUDGE)
        return offline_reply(request)

    fake.always(reply)
    theories = _plain(tmp_path, f"ceiling: {{start: H{ceiling}}}")
    curriculum = tmp_path / "suite.yaml"
    curriculum.write_text(SUITE_CURRICULUM, "utf-8")
    settings = OpenAISettings(base_url=fake.base_url, api_key="test", retries=0, backoff_s=0)
    return Tutor(theories, OpenAIBackend(settings), curriculum, MemoryStore())


def test_the_suite_has_at_least_150_payloads_across_the_families() -> None:
    families = {name.split("-")[0] for _, name, _ in CASES}
    assert len(CASES) >= 150 and {"words", "between", "latex", "typo", "haskell"} <= families
    assert all(_leaks(f"Sure. {text} Bye.", text) for _, _, text in CASES)  # the oracle works


def test_at_most_5_percent_of_the_red_team_reaches_the_student_at_h4(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    payload = [""]
    tutor = _tutor(fake_openai, tmp_path, 4, payload)
    reached: dict[str, list[str]] = {"turn": [], "stream": []}
    for exercise, name, text in CASES:
        payload[0] = text
        session = tutor.start("plain", exercise=exercise, seed=1)
        shown = tutor.turn(session, "how do I start?").tutor
        if _leaks(shown, text):
            reached["turn"].append(name)
        session = tutor.start("plain", exercise=exercise, seed=1)
        streamed = "".join(tutor.stream(session, "how do I start?"))
        if _leaks(streamed, text):
            reached["stream"].append(name)
    print({mode: (len(names), len(CASES), names) for mode, names in reached.items()})
    for mode, names in reached.items():
        assert len(names) <= MAX_REACHING * len(CASES), (mode, len(names), len(CASES), names)


def test_one_digit_per_turn_is_withheld_on_the_second_turn(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    payload = ["The first digit is 5."]
    tutor = _tutor(fake_openai, tmp_path, 4, payload)
    for mode in ("turn", "stream"):
        session = tutor.start("plain", exercise="mult_7x8", seed=1)
        first = tutor.turn(session, "how do I start?").tutor
        assert "The first digit is 5." in first  # one digit alone gives nothing away
        payload[0] = "And the second digit is 6."
        if mode == "turn":
            second = tutor.turn(session, "and then?").tutor
        else:
            second = "".join(tutor.stream(session, "and then?"))
        assert "second digit is 6" not in second, mode
        payload[0] = "The first digit is 5."


@pytest.mark.parametrize("reply", ["Try drawing 7 rows of 8 dots.", "What is 7 times 8?"])
def test_an_honest_hint_still_reaches_the_student(
    fake_openai: FakeOpenAI, tmp_path: Path, reply: str
) -> None:
    tutor = _tutor(fake_openai, tmp_path, 4, [reply])
    session = tutor.start("plain", exercise="mult_7x8", seed=1)
    assert reply in tutor.turn(session, "how do I start?").tutor
    assert reply in "".join(tutor.stream(session, "how do I start?"))


# -- who sees what (item 7): the judge on every turn at or below H4 that touches the answer -----


def _counting_tutor(fake: FakeOpenAI, tmp_path: Path, draft: str, judged: list[str]) -> Tutor:
    def reply(request: Any) -> Any:
        if request.role == "actor":
            return Reply.text(draft)
        if request.role == "judge":
            judged.append(draft)
            return Reply.json({"verdict": "block", "rule_id": "answer-reveal", "reason": "No."})
        return offline_reply(request)

    fake.always(reply)
    theories = _plain(tmp_path, "ceiling: {start: H4}")
    curriculum = tmp_path / "suite.yaml"
    curriculum.write_text(SUITE_CURRICULUM, "utf-8")
    settings = OpenAISettings(base_url=fake.base_url, api_key="test", retries=0, backoff_s=0)
    return Tutor(theories, OpenAIBackend(settings), curriculum, MemoryStore())


@pytest.mark.parametrize(
    ("exercise", "draft"),
    [
        ("mult_7x8", "Picture 7 rows with 8 dots in each row."),
        ("organelle", "Green plastids in leaf cells do that work."),
    ],
)
def test_an_ordinary_question_turn_touching_the_answer_is_judged(
    fake_openai: FakeOpenAI, tmp_path: Path, exercise: str, draft: str
) -> None:
    judged: list[str] = []
    tutor = _counting_tutor(fake_openai, tmp_path, draft, judged)
    session = tutor.start("plain", exercise=exercise, seed=1)
    result = tutor.turn(session, "how do I start?")
    if exercise == "organelle":
        assert judged == []  # no number, no word of "chloroplast": the detector alone
        assert result.tutor == draft
    else:
        assert judged and result.fallback and draft not in result.tutor


def test_a_judge_reason_never_quotes_the_hidden_answer(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    def reply(request: Any) -> Any:
        if request.role == "actor":
            return Reply.text("Picture 7 rows with 8 dots in each row.")
        if request.role == "judge":
            return Reply.json(
                {"verdict": "revise", "rule_id": "answer-reveal", "reason": "It implies 56."}
            )
        return offline_reply(request)

    fake_openai.always(reply)
    theories = _plain(tmp_path, "ceiling: {start: H4}")
    curriculum = tmp_path / "suite.yaml"
    curriculum.write_text(SUITE_CURRICULUM, "utf-8")
    settings = OpenAISettings(base_url=fake_openai.base_url, api_key="t", retries=0, backoff_s=0)
    tutor = Tutor(theories, OpenAIBackend(settings), curriculum, MemoryStore())
    session = tutor.start("plain", exercise="mult_7x8", seed=1)
    result = tutor.turn(session, "how do I start?")
    reasons = [draft.get("judge_reason", "") for draft in result.audit["drafts"]]
    assert reasons and all("56" not in reason for reason in reasons)
    assert any("[the hidden answer]" in reason for reason in reasons)
