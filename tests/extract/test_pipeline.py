"""The whole extraction against the fake OpenAI server with a scripted model (issue 5's
acceptance): the written file checks clean, duplicates are merged, provenance is kept, the
invalid fragment is reported, the repair round fixes an error, and a rerun is served from the
cache."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pedrag.compiler.driver import check_paths
from pedrag.extract.pipeline import ExtractionError, ExtractOptions, extract
from pedrag.runtime.llm.openai_backend import backend_from_env
from tests.extract import scripted
from tests.fake_openai import FakeOpenAI, Reply


def run(fake: FakeOpenAI, tmp_path: Path, **options: object):  # type: ignore[no-untyped-def]
    corpus = scripted.write_corpus(tmp_path / "corpus")
    backend = backend_from_env({"OPENAI_BASE_URL": fake.base_url, "PEDRAG_LLM_RETRIES": "0"})
    assert backend is not None
    settings = {
        "output": tmp_path / "theories" / "meno.yaml",
        "theory_id": "meno",
        "cache_dir": tmp_path / "cache",
        **options,
    }
    return extract(corpus, ExtractOptions(**settings), backend)  # type: ignore[arg-type]


@pytest.fixture
def scripted_fake(fake_openai: FakeOpenAI) -> FakeOpenAI:
    return scripted.install(fake_openai)


def test_extracted_file_checks_clean(scripted_fake: FakeOpenAI, tmp_path: Path) -> None:
    result = run(scripted_fake, tmp_path)

    checked = check_paths([str(result.output)])
    assert checked.errors == 0, [d.message for d in checked.diagnostics]
    assert result.clean
    assert result.output.read_text(encoding="utf-8") == result.text


def test_near_duplicate_actions_are_merged_and_rules_re_pointed(
    scripted_fake: FakeOpenAI, tmp_path: Path
) -> None:
    result = run(scripted_fake, tmp_path)
    data = yaml.safe_load(result.text)

    assert set(data["actions"]) == {"ask_leading_question", "encourage"}
    assert [(m.duplicate, m.survivor) for m in result.merge.merged_actions] == [
        ("pose_guiding_question", "ask_leading_question")
    ]
    # B's rule, re-pointed to the survivor, equals A's rule: dropped, not kept twice.
    assert result.merge.dropped_rules == ["confused_guide"]
    assert [rule["then"] for rule in data["rules"] if rule["when"] == "confusion >= 0.5"] == [
        "ask_leading_question"
    ]
    assert scripted_fake.requests_to("embeddings"), "the endpoint's embeddings were not used"


def test_same_name_metrics_are_widened_and_united(
    scripted_fake: FakeOpenAI, tmp_path: Path
) -> None:
    data = yaml.safe_load(run(scripted_fake, tmp_path).text)

    assert data["metrics"]["confusion"]["range"] == [0, 1]
    assert data["metrics"]["affect"]["values"] == ["calm", "perplexed", "frustrated"]


def test_every_item_cites_its_passages(scripted_fake: FakeOpenAI, tmp_path: Path) -> None:
    result = run(scripted_fake, tmp_path)
    data = yaml.safe_load(result.text)
    sources = {source["id"]: source for source in data["theory"]["sources"]}

    assert sources["a_c1"]["document"].endswith("a.txt")
    assert sources["a_c1"]["page"] == 1
    assert data["actions"]["ask_leading_question"]["source"] == ["a_c1", "b_c1"]
    assert data["actions"]["encourage"]["source"] == "b_c1"
    rules = {rule["id"]: rule for rule in data["rules"]}
    assert rules["confused"]["source"] == ["a_c1", "b_c1"]
    assert rules["perplexed"]["source"] == "b_c1"  # kept through the repair
    assert data["theory"]["principles"][0]["source"] == "a_c1"
    assert data["metrics"]["confusion"]["provenance"] == ["a_c1", "b_c1"]


def test_invalid_fragment_is_retried_once_then_reported(
    scripted_fake: FakeOpenAI, tmp_path: Path
) -> None:
    result = run(scripted_fake, tmp_path)

    [skipped] = result.skipped
    assert skipped.chunk.document.endswith("c.txt")
    assert skipped.attempts == 2
    assert any("H9" in error or "rung" in error for error in skipped.errors)
    retries = [
        r
        for r in scripted_fake.requests_to("chat")
        if "PASSAGE-C" in r.text and len(r.messages) == 4
    ]
    assert len(retries) == 1
    assert "That fragment is invalid" in retries[0].messages[3]["content"]
    assert "Skipped chunk c_c1" in result.text
    assert "lecture" not in yaml.safe_load(result.text)["actions"]


def test_repair_round_fixes_the_unknown_action(scripted_fake: FakeOpenAI, tmp_path: Path) -> None:
    result = run(scripted_fake, tmp_path)

    [first] = result.repair.rounds
    assert [d.check for d in first.errors] == ["unknown-name"]
    assert "give_torpedo_shock" in first.errors[0].message
    assert first.changed == ["replaced rule:perplexed"]
    [repair_request] = [
        r for r in scripted_fake.requests_to("chat") if scripted.schema_name(r) == "theory_repair"
    ]
    assert "give_torpedo_shock" in repair_request.text
    assert "Checks clean after 1 repair round" in result.text


def test_unrepaired_errors_are_written_in_the_header(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    scripted.install(fake_openai)
    fake_openai.always(
        lambda r: {} if scripted.schema_name(r) == "theory_repair" else scripted.answer(r)
    )

    result = run(fake_openai, tmp_path, rounds=2)

    assert not result.clean
    assert [r.problem for r in result.repair.rounds] == ["the model proposed no change"] * 2
    assert "NOT CLEAN: 1 error(s) remain after 2 repair rounds" in result.text
    assert "give_torpedo_shock" in result.text.split("pedrag: 1")[0]


def test_second_run_is_served_from_the_cache(scripted_fake: FakeOpenAI, tmp_path: Path) -> None:
    first = run(scripted_fake, tmp_path)
    chat_before = len(scripted_fake.requests_to("chat"))

    second = run(scripted_fake, tmp_path)

    assert len(scripted_fake.requests_to("chat")) == chat_before
    assert second.text == first.text
    assert second.cache_misses == 0 and second.cache_hits == 4  # 3 chunks + 1 repair


def test_endpoint_failure_stops_and_the_rerun_resumes(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    scripted.install(fake_openai)
    fake_openai.script(scripted.answer, Reply.error(500, "overloaded"))

    with pytest.raises(ExtractionError, match="chunk 2 of 3.*rerun to resume"):
        run(fake_openai, tmp_path)
    asked = len(fake_openai.requests_to("chat"))

    result = run(fake_openai, tmp_path)

    passages = [r.text for r in fake_openai.requests_to("chat")[asked:]]
    assert not any("PASSAGE-A" in text for text in passages), "chunk 1 was asked again"
    assert result.clean


def test_lexical_embeddings_need_no_endpoint(scripted_fake: FakeOpenAI, tmp_path: Path) -> None:
    result = run(scripted_fake, tmp_path, embeddings="lexical")

    assert result.embedder == "lexical"
    assert not scripted_fake.requests_to("embeddings")
    assert [m.survivor for m in result.merge.merged_actions] == ["ask_leading_question"]


DEAD = {
    "metrics": {"frustration": {"type": "float", "source": "inferred", "range": [0, 1]}},
    "actions": {
        "encourage": {"rung": "H0", "priority": 5, "description": "Encourage the learner."}
    },
    "rules": [
        {"id": "calm_down", "when": "frustration > 0.9 and frustration < 0.1", "then": "encourage"}
    ],
}
UNDEAD = {"rules": [{"id": "calm_down", "when": "frustration > 0.9", "then": "encourage"}]}


def test_repair_round_fixes_a_dead_rule(fake_openai: FakeOpenAI, tmp_path: Path) -> None:
    fake_openai.always(lambda r: UNDEAD if scripted.schema_name(r) == "theory_repair" else DEAD)
    corpus = tmp_path / "meno.txt"
    corpus.write_text(
        "SOCRATES: Then he was the better for the torpedo's touch?\n", encoding="utf-8"
    )
    backend = backend_from_env({"OPENAI_BASE_URL": fake_openai.base_url})
    assert backend is not None
    output = tmp_path / "dead.yaml"

    result = extract(
        [corpus], ExtractOptions(output=output, theory_id="dead", cache_dir=None), backend
    )

    [first] = result.repair.rounds
    assert "dead-rule" in [d.check for d in first.errors]
    [repair_request] = [
        r for r in fake_openai.requests_to("chat") if scripted.schema_name(r) == "theory_repair"
    ]
    assert "dead-rule" in repair_request.text and "calm_down" in repair_request.text
    assert check_paths([str(output)]).errors == 0
    [rule] = yaml.safe_load(output.read_text(encoding="utf-8"))["rules"]
    assert (rule["when"], rule["source"]) == ("frustration > 0.9", "meno_c1")


class NoteCollector:
    def __init__(self) -> None:
        self.notes: list[str] = []

    def start(self, stage: str, total: int | None = None) -> None:
        pass

    def advance(self, stage: str, amount: int = 1) -> None:
        pass

    def finish(self, stage: str) -> None:
        pass

    def note(self, message: str) -> None:
        self.notes.append(message)


def test_an_interrupt_says_how_much_is_cached_and_the_rerun_resumes(
    scripted_fake: FakeOpenAI, tmp_path: Path
) -> None:
    corpus = scripted.write_corpus(tmp_path / "corpus")
    backend = backend_from_env({"OPENAI_BASE_URL": scripted_fake.base_url})
    assert backend is not None
    complete = backend.complete
    calls: list[object] = []

    def interrupted_on_the_second_call(request):  # type: ignore[no-untyped-def]
        calls.append(request)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return complete(request)

    backend.complete = interrupted_on_the_second_call  # type: ignore[method-assign]
    options = ExtractOptions(tmp_path / "x.yaml", "x", cache_dir=tmp_path / "cache")
    reporter = NoteCollector()

    with pytest.raises(KeyboardInterrupt):
        extract(corpus, options, backend, reporter)
    assert reporter.notes == [
        f"interrupted at chunk 2 of 3; the 1 chunks before it are cached in {tmp_path / 'cache'}: "
        "rerun to resume"
    ]

    rerun = NoteCollector()
    extract(corpus, options, backend, rerun)
    assert rerun.notes[0].startswith("resuming: 1 of 3 chunks were answered by an earlier run")


def test_source_ids_follow_corpus_order_when_a_later_chunk_is_skipped(
    scripted_fake: FakeOpenAI, tmp_path: Path
) -> None:
    # Two documents with one stem: the first keeps the plain prefix even though the second's
    # chunk is reported (as skipped) before any fragment is merged.
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "meno.txt").write_text("PASSAGE-A\nSOCRATES: Tell me, boy.\n", encoding="utf-8")
    (folder / "meno.md").write_text("PASSAGE-C\nSOCRATES: Attend now.\n", encoding="utf-8")
    backend = backend_from_env({"OPENAI_BASE_URL": scripted_fake.base_url})
    assert backend is not None
    options = ExtractOptions(output=tmp_path / "x.yaml", theory_id="x", cache_dir=None)

    result = extract([folder / "meno.txt", folder / "meno.md"], options, backend)

    data = yaml.safe_load(result.text)
    assert [source["id"] for source in data["theory"]["sources"]] == ["meno_c1"]
    assert "# Skipped chunk meno_2_c1 (meno.md, chunk 1, p. 1)" in result.text
