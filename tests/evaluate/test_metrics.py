"""Metrics on hand-built transcripts: BHR, fidelity, mastery, and the significance tests
against values known from the literature (Fisher's tea-tasting table and friends)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from pedrag.evaluate import metrics
from tests.evaluate.conftest import evaluation, session, turn


def test_bhr_counts_violations_over_evaluated_turns_only() -> None:
    sessions = [
        session(
            "pedrag",
            [
                turn(1, evaluation(1.0)),
                turn(2, evaluation(0.7, ("affect-ignored", "minor"))),
                turn(3, unevaluated=True),
                turn(4, evaluation(0.0, ("answer-reveal", "critical"))),
            ],
        )
    ]
    summary = metrics.summarize(sessions)
    assert summary.turns == 4
    assert summary.evaluated == 3
    assert summary.unevaluated == 1
    assert summary.bhr == pytest.approx(2 / 3)
    assert summary.critical_rate == pytest.approx(1 / 3)
    assert summary.fidelity == pytest.approx((1.0 + 0.7 + 0.0) / 3)


def test_fidelity_sd_is_across_sessions_and_mastery_rate_counts_sessions() -> None:
    sessions = [
        session("pedrag", [turn(1, evaluation(1.0)), turn(2, evaluation(0.8))], mastered=True),
        session("pedrag", [turn(1, evaluation(0.6))], mastered=False),
        session("pedrag", [turn(1, evaluation(0.5))], mastered=True, rep=1),
    ]
    summary = metrics.summarize(sessions)
    assert summary.mastery_rate == pytest.approx(2 / 3)
    assert summary.fidelity_sd == pytest.approx(
        math.sqrt(((0.9 - 2 / 3) ** 2 + (0.6 - 2 / 3) ** 2 + (0.5 - 2 / 3) ** 2) / 2)
    )


def test_exam_probe_sessions_are_left_out_of_the_metrics() -> None:
    sessions = [
        session("pedrag", [turn(1, evaluation(1.0))]),
        session("pedrag", [turn(1, evaluation(0.0, ("exam-content", "critical")))], exam=True),
    ]
    summary = metrics.summarize(sessions)
    assert summary.sessions == 1
    assert summary.bhr == 0.0


def test_tables_group_by_persona_then_config() -> None:
    sessions = [
        session("baseline", [turn(1, evaluation(0.0, ("answer-reveal", "critical")))]),
        session("pedrag", [turn(1, evaluation(1.0))]),
        session("pedrag", [turn(1, evaluation(1.0))], persona="injector"),
    ]
    table = metrics.table(sessions, lambda item: item.persona)
    assert list(table) == ["curious-carlos", "injector"]
    assert table["curious-carlos"]["baseline"].bhr == 1.0
    assert table["curious-carlos"]["pedrag"].bhr == 0.0
    assert list(table["injector"]) == ["pedrag"]


def test_exact_permutation_test_matches_the_enumerated_value() -> None:
    # 20 relabellings of six values; only the observed split and its mirror are as extreme.
    assert metrics.permutation_test([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)
    assert metrics.permutation_test([1, 1, 1], [1, 1, 1]) == 1.0


def test_monte_carlo_permutation_test_is_seeded_and_never_zero() -> None:
    first = [0.0] * 20
    second = [1.0] * 20  # C(40, 20) relabellings: too many to enumerate
    p = metrics.permutation_test(first, second, resamples=2000, seed=3)
    assert p == metrics.permutation_test(first, second, resamples=2000, seed=3)
    assert 0 < p <= 2 / 2001  # the observed split counts itself (two-sided)


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ([[3, 1], [1, 3]], 0.4857142857),  # Fisher's lady tasting tea
        ([[8, 2], [1, 5]], 0.0349650350),
        ([[0, 5], [5, 0]], 2 / 252),
        ([[2, 2], [2, 2]], 1.0),
    ],
)
def test_fisher_exact_matches_known_two_sided_values(
    table: list[list[int]], expected: float
) -> None:
    assert metrics.fisher_exact(table) == pytest.approx(expected, rel=1e-6)


def _independent_sessions() -> list:
    reveal = evaluation(0.0, ("answer-reveal", "critical"))
    return [
        *(
            session("baseline", [turn(1, reveal, student=f"hi {r}"), turn(2, reveal)], rep=r)
            for r in range(4)
        ),
        *(
            session("pedrag", [turn(1, student=f"hi {r}"), turn(2)], mastered=True, rep=r)
            for r in range(4)
        ),
    ]


def test_comparison_reports_effect_sizes_intervals_and_p_values() -> None:
    sessions = _independent_sessions()
    assert metrics.replication(sessions) == "independent"
    (comparison,) = metrics.comparisons(sessions, ["baseline", "pedrag"])
    assert (comparison.treatment, comparison.control) == ("pedrag", "baseline")
    assert comparison.unit == "session" and comparison.sessions == (4, 4)
    assert comparison.relative_reduction == pytest.approx(1.0)
    assert comparison.bhr_difference == pytest.approx(-1.0)
    assert comparison.bhr_ci == (-1.0, -1.0)  # every session at 0 vs every one at 1
    assert comparison.mastery_effect_h == pytest.approx(math.pi)
    assert comparison.p_bhr == pytest.approx(2 / 70)  # C(8, 4) = 70 relabellings
    assert comparison.p_mastery == pytest.approx(2 / 70)


def test_bootstrap_interval_covers_the_difference_and_is_seeded() -> None:
    first = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    second = [0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    low, high = metrics.bootstrap_difference(first, second, seed=2) or (0.0, 0.0)
    assert low < 0.75 - 0.25 < high
    assert (low, high) == metrics.bootstrap_difference(first, second, seed=2)


def test_repetitions_that_are_copies_get_no_p_value() -> None:
    # The same transcript in every repetition of each cell: a deterministic replication.
    reveal = evaluation(0.0, ("answer-reveal", "critical"))
    sessions = [
        *(session("baseline", [turn(1, reveal)], rep=r) for r in range(4)),
        *(session("pedrag", [turn(1)], mastered=True, rep=r) for r in range(4)),
    ]
    kind = metrics.replication(sessions)
    assert kind == "deterministic"
    (comparison,) = metrics.comparisons(sessions, ["baseline", "pedrag"], kind=kind)
    assert comparison.p_bhr is None and comparison.p_mastery is None
    assert comparison.bhr_ci is None and comparison.mastery_ci is None
    assert comparison.bhr_difference == pytest.approx(-1.0)  # the figure itself is reported
    assert metrics.distinct_sessions(sessions) == 2
    assert metrics.replication(_independent_sessions(), stochastic=False) == "deterministic"


def test_paired_comparison_meets_the_same_learners_and_states_its_unit() -> None:
    bad = evaluation(0.0, ("answer-reveal", "critical"))
    sessions = []
    for rep in range(6):
        # pedrag: clean, mastered on reps 0-3; baseline: one violation in two, mastered on 0.
        sessions.append(session("pedrag", [turn(1), turn(2), turn(3)], rep=rep, mastered=rep < 4))
        sessions.append(session("baseline", [turn(1, bad), turn(2)], rep=rep, mastered=rep == 0))
    sessions.append(session("pedrag", [turn(1)], rep=9))  # no partner: not a pair
    (paired,) = metrics.paired_comparisons(sessions, ("baseline", "pedrag"))
    assert (paired.treatment, paired.control, paired.pairs) == ("pedrag", "baseline", 6)
    assert "persona x exercise x repetition" in paired.unit
    assert paired.bhr_difference == pytest.approx(-0.5)
    assert paired.discordant == (3, 0)
    assert paired.mastery_difference == pytest.approx(0.5)
    assert paired.p_mastery == pytest.approx(0.25)  # exact McNemar: 2 * 0.5**3
    assert paired.turns_difference == pytest.approx(1.0)
    assert paired.bhr_ci == (-0.5, -0.5)  # every pair differs by the same amount
    assert paired.p_bhr is not None and paired.p_bhr < 0.05


def test_claim_check_compares_the_claimed_rung_with_the_rubrics_reading() -> None:
    from dataclasses import replace

    from pedrag.evaluate.records import TurnEvaluation

    def claimed(claim: int | None, read: int) -> Any:
        base = turn(1, TurnEvaluation(fidelity=1.0, estimated_rung=read))
        return replace(base, tutor=replace(base.tutor, rung=claim))

    sessions = [
        session("pedrag", [claimed(5, 3), claimed(3, 3), claimed(2, 4)]),
        session("baseline", [claimed(None, 7)]),  # no claim: nothing to check
    ]
    assert metrics.claim_check(sessions) == {
        "pedrag": {"replies": 3, "below": 1, "at": 1, "above": 1}
    }
