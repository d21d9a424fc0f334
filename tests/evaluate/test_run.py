"""The offline grid: reproducible, and the supervised runtime beats the baseline on BHR; the
`pedrag evaluate` command's exits and outputs."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pedrag.cli import main
from pedrag.evaluate import gates, metrics
from pedrag.evaluate.report import build_report
from pedrag.evaluate.run import EvaluationResult, Grid, run_grid
from pedrag.runtime.policy.theory_set import TheorySet
from tests.evaluate.conftest import shipped

SMALL = Grid(
    personas=("answer-seeker", "injector", "earnest-but-stuck", "anxious-alex"),
    exercises=("mult_7x8", "loop_range_output"),
    reps=2,
    turns=6,
    seed=11,
)


@pytest.fixture(scope="module")
def small_run() -> EvaluationResult:
    """The SMALL grid, run once for the tests that only read it."""
    theories, curriculum = shipped()
    return run_grid(SMALL, theories, curriculum)


def test_the_same_seed_gives_the_same_report(
    small_run: EvaluationResult, theories: TheorySet, curriculum: Any
) -> None:
    first = build_report(small_run, transcripts=True)
    again = build_report(run_grid(SMALL, theories, curriculum), transcripts=True)
    assert json.dumps(first, sort_keys=True) == json.dumps(again, sort_keys=True)


def test_pedrag_reveals_less_than_the_chat_arms_offline(small_run: EvaluationResult) -> None:
    result = small_run
    summary = metrics.by_config(result.sessions)
    assert summary["baseline"].reveals > 0  # the unguarded chatbot hands out the answer
    assert summary["pedrag"].reveals == 0
    critical = {name: summary[name].critical_rate for name in summary}
    assert critical["pedrag"] < critical["prompt_only"] < critical["baseline"]  # type: ignore[operator]
    bhr = {name: summary[name].bhr for name in summary}
    assert bhr["pedrag"] < bhr["prompt_only"] < bhr["baseline"]  # type: ignore[operator]
    results = gates.evaluate_gates(result.sessions, "pedrag", result.exercises)
    assert gates.gates_pass(results), [r.to_dict() for r in results]
    assert not gates.gates_pass(gates.evaluate_gates(result.sessions, "baseline", result.exercises))


def test_a_different_seed_draws_different_concessions(theories: TheorySet, curriculum: Any) -> None:
    grid = Grid(
        configs=("prompt_only",),
        personas=("answer-seeker",),
        exercises=("mult_7x8",),
        reps=1,
        turns=8,
        exam_probe=False,
    )
    replies = [
        [
            turn.tutor.reply
            for turn in run_grid(replace(grid, seed=seed), theories, curriculum).sessions[0].turns
        ]
        for seed in range(4)
    ]
    assert len({tuple(item) for item in replies}) > 1


def run_cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["evaluate", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


TINY = (
    "--personas",
    "injector,earnest-but-stuck",
    "--exercises",
    "mult_7x8",
    "--reps",
    "1",
    "--turns",
    "3",
)


def test_the_command_writes_json_and_passes_the_gates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.json"
    code, stdout, _ = run_cli(*TINY, "--format", "json", "-o", str(out), "--gates", capsys=capsys)
    assert code == 0
    report = json.loads(stdout)
    assert json.loads(out.read_text()) == report
    assert set(report["configs"]) == {"baseline", "prompt_only", "pedrag"}
    assert [gate["status"] for gate in report["gates"]["pedrag"]] == ["pass"] * 4
    assert "transcript" not in report["sessions"][0]


def test_the_text_report_has_every_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = run_cli(*TINY, "--configs", "baseline,pedrag", capsys=capsys)
    assert code == 0
    for title in (
        "Summary per configuration",
        "Comparisons, sessions as the unit",
        "Per persona",
        "Per topic",
        "Acceptance gates",
        "Over-help ladder",
    ):
        assert title in stdout


def test_gates_exit_1_when_a_gate_is_not_measured(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(
        "--personas",
        "curious-carlos",
        "--exercises",
        "mult_7x8",
        "--reps",
        "1",
        "--turns",
        "2",
        "--configs",
        "pedrag",
        "--gates",
        capsys=capsys,
    )
    assert code == 1
    assert "G2 not measured" in err


@pytest.mark.parametrize(
    "args",
    [
        ("--configs", "baseline,chatgpt"),
        ("--personas", "nobody"),
        ("--exercises", "no_such_exercise"),
        ("--topics", "astrology"),
        ("--configs", "baseline", "--gates"),
        ("--reps", "0"),
        ("--student", "llm", "--offline"),
    ],
)
def test_usage_problems_exit_2(args: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(*args, capsys=capsys)
    assert code == 2
    assert err.startswith("pedrag evaluate:")


def test_plot_without_matplotlib_is_a_note_not_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        code, _, err = run_cli(*TINY, "--plot", str(tmp_path / "x.png"), capsys=capsys)
        assert code == 0
        assert "matplotlib is not installed" in err
    else:
        code, _, _ = run_cli(*TINY, "--plot", str(tmp_path / "x.png"), capsys=capsys)
        assert code == 0
        assert (tmp_path / "x.png").is_file()


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (("--personas", "answer-seekr"), "did you mean 'answer-seeker'?"),
        (("--configs", "pedrg"), "did you mean 'pedrag'?"),
        (("--exercises", "mult_7x9"), "did you mean 'mult_7x8'?"),
        (("--topics", "arithmatic"), "did you mean 'arithmetic'?"),
    ],
)
def test_an_unknown_name_suggests_the_closest_known_one(
    args: tuple[str, ...], suggestion: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(*args, capsys=capsys)

    assert code == 2 and suggestion in err


def test_the_report_goes_into_a_folder_that_does_not_exist_yet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "reports" / "today" / "report.json"

    code, _, _ = run_cli(
        *TINY, "--configs", "pedrag", "--no-exam-probe", "-o", str(out), capsys=capsys
    )

    assert code == 0 and json.loads(out.read_text())["grid"]


def test_an_output_that_is_a_folder_exits_2_before_the_grid_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, err = run_cli(*TINY, "-o", str(tmp_path), capsys=capsys)

    assert code == 2 and "is a folder" in err and stdout == ""


def test_simulated_sessions_stay_out_of_the_session_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PEDRAG_DB", str(tmp_path / "sessions.db"))
    args = (*TINY, "--configs", "pedrag", "--no-exam-probe")

    assert run_cli(*args, capsys=capsys)[0] == 0
    assert run_cli(*args, capsys=capsys)[0] == 0, "a rerun reuses the grid's session ids"
    assert not (tmp_path / "sessions.db").exists()


def test_pedrag_with_actor_history_does_not_over_revise_earnest_turns(
    theories: TheorySet, curriculum: Any
) -> None:
    # The runtime sends six exchanges of history by default; the earnest learner's long
    # sessions must still pass G2 (history is not pressure to the simulated actor).
    grid = Grid(
        configs=("pedrag",),
        personas=("earnest-but-stuck",),
        exercises=("mult_7x8", "photo_organelle", "loop_range_header"),
        reps=2,
        turns=12,
        exam_probe=False,
    )
    result = run_grid(grid, theories, curriculum)
    g2 = gates.gate_g2(result.sessions, supervised=True)
    assert g2.measured_over >= 24 and g2.status == "pass", g2.to_dict()


def _rendered(report: dict[str, Any]) -> str:
    import io

    from rich.console import Console

    from pedrag.evaluate.report import render_text

    buffer = io.StringIO()
    render_text(report, Console(file=buffer, width=200, highlight=False))
    return buffer.getvalue()


def test_a_deterministic_run_prints_no_p_value_and_states_n_and_unit(
    theories: TheorySet, curriculum: Any
) -> None:
    grid = replace(SMALL, exercises=("add_38_47", "photo_organelle"), stochastic=False)
    report = build_report(run_grid(grid, theories, curriculum))
    assert report["statistics"]["replication"] == "deterministic"
    assert all(
        item["p_bhr"] is None and item["p_mastery"] is None for item in report["comparisons"]
    )
    text = _rendered(report)
    assert "p (" not in text and "p <" not in text and "< 0.001" not in text
    assert "No significance test" in text
    assert "unit: one session; n = baseline 16, prompt_only 16, pedrag 16 sessions" in text
    assert "deterministic replication" in text


def test_an_independent_run_states_n_unit_and_gives_p_values(
    theories: TheorySet, curriculum: Any
) -> None:
    grid = replace(SMALL, exercises=("add_38_47", "photo_organelle"), reps=3)
    report = build_report(run_grid(grid, theories, curriculum))
    assert report["statistics"]["replication"] == "independent"
    text = _rendered(report)
    assert "unit: one session; n = baseline 24, prompt_only 24, pedrag 24 sessions" in text
    assert "3 repetitions per cell" in text and "p (permutation)" in text
    (versus_baseline, *_) = report["comparisons"]
    assert versus_baseline["p_bhr"] is not None and versus_baseline["bhr_ci"] is not None


def test_the_plot_has_per_persona_and_per_topic_panels(
    theories: TheorySet, curriculum: Any, tmp_path: Path
) -> None:
    from pedrag.evaluate.report import write_plot

    report = build_report(run_grid(replace(SMALL, exercises=("add_38_47",)), theories, curriculum))
    path = tmp_path / "report.png"
    assert write_plot(report, path) is None
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000


def test_a_results_file_resumes_a_run_without_running_saved_sessions(
    theories: TheorySet, curriculum: Any, tmp_path: Path
) -> None:
    from pedrag.evaluate.results import ResultsFile, ResultsMismatch

    grid = replace(SMALL, exercises=("add_38_47",), reps=1)
    path = tmp_path / "results.jsonl"
    fingerprint = {"seed": grid.seed, "model": None}
    first = run_grid(grid, theories, curriculum, results=ResultsFile(path, fingerprint))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(first.sessions)

    class Refuses:
        name = "pedrag"
        supervised = True

        def start(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("a saved session was run again")

    tutors = {name: Refuses() for name in grid.configs}  # type: ignore[misc]
    again = run_grid(
        grid, theories, curriculum, results=ResultsFile(path, fingerprint), tutors=tutors
    )
    assert json.dumps(build_report(again), sort_keys=True) == json.dumps(
        build_report(first), sort_keys=True
    )
    # A line cut short by a crash is dropped and its session runs again.
    path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:40], encoding="utf-8")
    resumed = ResultsFile(path, fingerprint)
    assert len(resumed.done) == len(lines) - 1
    with pytest.raises(ResultsMismatch, match="seed differ"):
        ResultsFile(path, {"seed": 99, "model": None})


def test_the_estimate_counts_model_calls_by_role_from_an_offline_dry_run(
    theories: TheorySet, curriculum: Any
) -> None:
    from pedrag.evaluate.estimate import estimate_grid
    from pedrag.runtime.llm.pricing import Price, PriceBook

    grid = replace(SMALL, exercises=("add_38_47",), reps=1, exam_probe=False)
    unpriced = estimate_grid(grid, theories, curriculum, student_llm=True, evaluator_llm=True)
    assert unpriced.calls["actor"] >= unpriced.turns  # every turn calls an actor
    assert unpriced.calls["student"] >= unpriced.turns + unpriced.sessions  # and a post-test
    assert unpriced.calls["evaluator"] == unpriced.turns
    assert {"classifier", "analyzer"} <= set(unpriced.calls)  # the supervised runtime's roles
    assert unpriced.max_calls >= unpriced.total_calls and unpriced.cost_usd is None
    assert "cost: unknown" in "\n".join(unpriced.lines())
    priced = estimate_grid(
        grid,
        theories,
        curriculum,
        student_llm=False,
        evaluator_llm=False,
        prices=PriceBook(override=Price(1.0, 2.0)),
        model="m",
        completion_cap=10,
    )
    assert "student" not in priced.calls and "evaluator" not in priced.calls
    assert priced.completion_tokens <= 10 * priced.total_calls
    expected = (priced.prompt_tokens * 1.0 + priced.completion_tokens * 2.0) / 1000
    assert priced.cost_usd == pytest.approx(expected, rel=0.01)
    assert priced.max_cost_usd is not None and priced.max_cost_usd >= priced.cost_usd
