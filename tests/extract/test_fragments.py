"""Per-chunk fragments: the schema from the format's models, validation, one retry, the cache."""

from __future__ import annotations

from pathlib import Path

from pedrag.extract.cache import AnswerCache
from pedrag.extract.chunker import Chunk
from pedrag.extract.fragments import extract_fragment, fragment_errors, fragment_schema
from pedrag.runtime.llm.openai_backend import backend_from_env
from tests.fake_openai import FakeOpenAI

CHUNK = Chunk("meno.txt", 1, (1,), "SOCRATES: Tell me, boy, do you know ...", 12)
VALID = {
    "actions": {
        "ask_leading_question": {
            "rung": "H3",
            "priority": 7,
            "description": "Ask a leading question.",
        }
    }
}
INVALID = {"actions": {"lecture": {"rung": "H9", "priority": 3, "description": "Lecture."}}}


def backend(fake: FakeOpenAI):  # type: ignore[no-untyped-def]
    made = backend_from_env({"OPENAI_BASE_URL": fake.base_url, "PEDRAG_LLM_RETRIES": "0"})
    assert made is not None
    return made


def test_schema_spells_the_theory_format_keys() -> None:
    schema = fragment_schema()

    assert set(schema["properties"]) == {"metrics", "actions", "rules", "principles"}
    assert schema["additionalProperties"] is False
    assert {"Metric", "Action", "Rule", "Principle"} <= set(schema["$defs"])


def test_validation_reports_structure_and_condition_syntax() -> None:
    assert fragment_errors(VALID)[1] == []
    _, errors = fragment_errors(INVALID)
    assert errors and errors[0].startswith("actions.lecture.rung")
    _, errors = fragment_errors({"rules": [{"id": "r", "when": "confusion >>= 1", "then": "a"}]})
    assert errors and errors[0].startswith("rules.0.when")
    _, errors = fragment_errors({"theory": {}})
    assert errors == ["theory: Extra inputs are not permitted"]


def test_invalid_fragment_is_retried_with_its_errors(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(INVALID, VALID)

    outcome = extract_fragment(CHUNK, backend(fake_openai), AnswerCache(tmp_path), "m")

    assert outcome.fragment is not None and "ask_leading_question" in outcome.fragment.actions
    assert outcome.attempts == 2
    retry = fake_openai.requests_to("chat")[1]
    assert [m["role"] for m in retry.messages] == ["system", "user", "assistant", "user"]
    assert "H9" in retry.messages[2]["content"]
    assert "actions.lecture.rung" in retry.messages[3]["content"]
    assert retry["response_format"]["json_schema"]["name"] == "theory_fragment"


def test_fragment_invalid_twice_is_skipped_with_its_errors(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script("this is not JSON", INVALID)

    outcome = extract_fragment(CHUNK, backend(fake_openai), AnswerCache(tmp_path), "m")

    assert outcome.skipped and outcome.attempts == 2
    assert outcome.errors[0].startswith("actions.lecture.rung")
    assert len(fake_openai.requests_to("chat")) == 2


def test_outcomes_are_cached_by_chunk_text_and_model(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    fake_openai.script(VALID, VALID)
    cache = AnswerCache(tmp_path)
    model_backend = backend(fake_openai)

    extract_fragment(CHUNK, model_backend, cache, "m")
    again = extract_fragment(CHUNK, model_backend, cache, "m")
    extract_fragment(CHUNK, model_backend, cache, "other-model")

    assert again.cached and again.fragment is not None
    assert len(fake_openai.requests_to("chat")) == 2  # the first call and the other model
