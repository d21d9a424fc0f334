"""Metrics over simulated sessions: BHR, fidelity, mastery, critical violations, tables and
simulation-level significance tests (seed 1, §4.1 and §4.3).

Evaluation, aggregation. Takes :class:`~pedrag.evaluate.records.SessionRecord` lists (exam-probe
sessions are left out: they belong to gate G4); gives :class:`Summary` figures, per-persona and
per-topic tables, and :class:`Comparison` rows between configurations.

- **BHR** = violations / evaluated turns. An evaluated turn is one tutor reply the evaluator
  judged; a turn whose evaluation failed is *unevaluated* — counted separately, never a pass.
- **fidelity** = mean evaluator score over evaluated turns; its SD is across sessions.
- **mastery rate** = post-tested sessions whose held-out item the answer check marked correct (the
  learner's answer after the session, never the tutor's or the learner's own claim);
- **practice rate** = sessions whose own exercise the learner answered correctly (a reveal can
  buy it, which is why it is not mastery); **give-up rate** = sessions the learner abandoned.
- **critical violation rate** = critical violations / evaluated turns.

Statistics are computed with sessions as the unit (seed 1, §4.3: "at the simulation level"),
and significance only across independent units: sessions whose learners were drawn from
different seeds. :func:`replication` tells the two kinds of run apart — when every repetition
of a cell produced the same transcript (a deterministic learner and tutor, or a model at
temperature 0), the repetitions are copies, not samples, and no p-value or interval is given
(pseudo-replication). For an independent run each comparison gives the difference between the
arms with a seeded bootstrap 95% confidence interval, an effect size (Cohen's d on session BHR,
Cohen's h on the mastery proportion) and a p-value (a permutation test on session BHR, Fisher's
exact test on mastered vs not). The tests and the bootstrap are scipy's (`scipy.stats`): a
well-kept implementation rather than a hand-written one.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pedrag.evaluate.records import SessionRecord

RESAMPLES = 9_999  # permutation and bootstrap resamples (exact permutations when fewer exist)
CONFIDENCE = 0.95
UNIT = "session"


@dataclass(frozen=True)
class Summary:
    sessions: int
    turns: int
    evaluated: int
    unevaluated: int
    violations: int
    critical: int
    reveals: int
    bhr: float | None
    critical_rate: float | None
    fidelity: float | None
    fidelity_sd: float | None
    mastered: int
    mastery_rate: float | None
    post_tested: int = 0
    practiced: int = 0
    practice_rate: float | None = None
    gave_up: int = 0
    give_up_rate: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            key: (round(value, 4) if isinstance(value, float) else value)
            for key, value in asdict(self).items()
        }


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def session_bhr(session: SessionRecord) -> float | None:
    evaluated = session.evaluated
    return _ratio(sum(item.violation for item in evaluated), len(evaluated))


def session_fidelity(session: SessionRecord) -> float | None:
    evaluated = session.evaluated
    return statistics.fmean(item.fidelity for item in evaluated) if evaluated else None


def grid_sessions(sessions: Iterable[SessionRecord]) -> list[SessionRecord]:
    """The sessions metrics are computed on: everything but the exam probe."""
    return [session for session in sessions if not session.exam]


def summarize(sessions: Iterable[SessionRecord]) -> Summary:
    chosen = grid_sessions(sessions)
    evaluated = [item for session in chosen for item in session.evaluated]
    turns = sum(len(session.turns) for session in chosen)
    session_scores = [s for s in (session_fidelity(x) for x in chosen) if s is not None]
    violations = sum(item.violation for item in evaluated)
    critical = sum(item.critical for item in evaluated)
    tested = [session for session in chosen if session.post_tested]
    mastered = sum(session.mastery_reached for session in tested)
    practiced = sum(session.solved_turn is not None for session in chosen)
    gave_up = sum(session.gave_up for session in chosen)
    return Summary(
        sessions=len(chosen),
        turns=turns,
        evaluated=len(evaluated),
        unevaluated=turns - len(evaluated),
        violations=violations,
        critical=critical,
        reveals=sum(turn.revealed for session in chosen for turn in session.turns),
        bhr=_ratio(violations, len(evaluated)),
        critical_rate=_ratio(critical, len(evaluated)),
        fidelity=statistics.fmean(item.fidelity for item in evaluated) if evaluated else None,
        fidelity_sd=statistics.stdev(session_scores) if len(session_scores) >= 2 else None,
        mastered=mastered,
        mastery_rate=_ratio(mastered, len(tested)),
        post_tested=len(tested),
        practiced=practiced,
        practice_rate=_ratio(practiced, len(chosen)),
        gave_up=gave_up,
        give_up_rate=_ratio(gave_up, len(chosen)),
    )


def by_config(sessions: Iterable[SessionRecord]) -> dict[str, Summary]:
    return table(sessions, lambda session: "all")["all"]


def table(
    sessions: Iterable[SessionRecord], key: Callable[[SessionRecord], str]
) -> dict[str, dict[str, Summary]]:
    """``{row: {config: Summary}}`` with rows from ``key`` (a persona, a topic, ...), in
    first-seen order."""
    groups: dict[str, dict[str, list[SessionRecord]]] = {}
    for session in grid_sessions(sessions):
        groups.setdefault(key(session), {}).setdefault(session.config, []).append(session)
    return {
        row: {config: summarize(items) for config, items in configs.items()}
        for row, configs in groups.items()
    }


# -- replication: are the sessions independent units? ------------------------------------------

Replication = Literal["independent", "deterministic"]


def _transcript(session: SessionRecord) -> tuple[Any, ...]:
    return (
        tuple((turn.student, turn.tutor.reply) for turn in session.turns),
        session.post_answer,
    )


def replication(sessions: Iterable[SessionRecord], *, stochastic: bool = True) -> Replication:
    """``deterministic`` when the run's repetitions are copies: the learner was not reseeded
    (``stochastic=False``), or every cell run more than once gave identical transcripts in
    every repetition; else ``independent``."""
    if not stochastic:
        return "deterministic"
    cells: dict[tuple[str, str, str], set[tuple[Any, ...]]] = {}
    repeated = False
    for session in grid_sessions(sessions):
        key = (session.config, session.persona, session.exercise)
        if key in cells:
            repeated = True
        cells.setdefault(key, set()).add(_transcript(session))
    if repeated and all(len(variants) == 1 for variants in cells.values()):
        return "deterministic"
    return "independent"


def distinct_sessions(sessions: Iterable[SessionRecord]) -> int:
    """The number of different (config, persona, exercise, transcript) sessions."""
    return len({(s.config, s.persona, s.exercise, _transcript(s)) for s in grid_sessions(sessions)})


# -- tests and intervals (scipy.stats) -------------------------------------------------------------


def permutation_test(
    first: Sequence[float], second: Sequence[float], *, resamples: int = RESAMPLES, seed: int = 0
) -> float:
    """Two-sided p-value for a difference in means between independent samples, by
    relabelling the pooled values (exact when there are at most ``resamples`` relabellings)."""
    from scipy import stats

    if not first or not second:
        raise ValueError("permutation_test needs two non-empty samples")
    if len(set(first) | set(second)) == 1:
        return 1.0
    result = stats.permutation_test(
        (list(first), list(second)),
        lambda x, y: _mean(x) - _mean(y),
        permutation_type="independent",
        alternative="two-sided",
        n_resamples=resamples,
        rng=seed,
    )
    return float(min(1.0, result.pvalue))


def fisher_exact(table_2x2: Sequence[Sequence[int]]) -> float:
    """Two-sided p-value of Fisher's exact test on ``[[a, b], [c, d]]``."""
    from scipy import stats

    if min(min(row) for row in table_2x2) < 0:
        raise ValueError("a contingency table holds counts >= 0")
    return float(stats.fisher_exact([list(row) for row in table_2x2]).pvalue)


def bootstrap_difference(
    first: Sequence[float], second: Sequence[float], *, seed: int = 0
) -> tuple[float, float] | None:
    """A percentile bootstrap 95% confidence interval for mean(first) - mean(second),
    resampling each arm's sessions independently; ``None`` when an arm has < 2 sessions."""
    if len(first) < 2 or len(second) < 2:
        return None
    if len(set(first)) == 1 and len(set(second)) == 1:
        difference = first[0] - second[0]
        return (difference, difference)
    return _bootstrap(
        (list(first), list(second)),
        lambda x, y, axis=-1: x.mean(axis=axis) - y.mean(axis=axis),
        seed=seed,
    )


def bootstrap_mean(values: Sequence[float], *, seed: int = 0) -> tuple[float, float] | None:
    """A percentile bootstrap 95% confidence interval for a mean (the plots' error bars)."""
    if len(values) < 2:
        return None
    if len(set(values)) == 1:
        return (values[0], values[0])
    return _bootstrap((list(values),), lambda x, axis=-1: x.mean(axis=axis), seed=seed)


def bootstrap_ratio(
    counts: Sequence[tuple[float, float]], *, seed: int = 0
) -> tuple[float, float] | None:
    """A 95% interval for a pooled ratio (violations / evaluated turns) by resampling
    sessions, the unit, with their turns (a cluster bootstrap); ``None`` under 2 sessions."""
    if len(counts) < 2:
        return None
    hits = [float(hit) for hit, _ in counts]
    totals = [float(total) for _, total in counts]
    if len({hit / total for hit, total in counts}) == 1:
        value = hits[0] / totals[0]
        return (value, value)
    return _bootstrap(
        (hits, totals),
        lambda h, t, axis=-1: h.sum(axis=axis) / t.sum(axis=axis),
        seed=seed,
        paired=True,
    )


def _bootstrap(
    samples: tuple[list[float], ...], statistic: Any, *, seed: int, paired: bool = False
) -> tuple[float, float]:
    """scipy's percentile bootstrap at :data:`CONFIDENCE`, seeded."""
    from scipy import stats

    result = stats.bootstrap(
        samples,
        statistic,
        paired=paired,
        confidence_level=CONFIDENCE,
        n_resamples=RESAMPLES,
        method="percentile",
        rng=seed,
    )
    low, high = result.confidence_interval
    return (float(low), float(high))


def cohens_d(first: Sequence[float], second: Sequence[float]) -> float | None:
    """Standardised mean difference with the pooled SD; ``None`` when it is undefined."""
    if len(first) < 2 or len(second) < 2:
        return None
    pooled = (
        (len(first) - 1) * statistics.variance(first)
        + (len(second) - 1) * statistics.variance(second)
    ) / (len(first) + len(second) - 2)
    if pooled <= 0:
        return None
    return (_mean(first) - _mean(second)) / math.sqrt(pooled)


def cohens_h(first: float, second: float) -> float:
    """Effect size between two proportions: 2 asin(sqrt(p1)) - 2 asin(sqrt(p2))."""
    return 2 * math.asin(math.sqrt(first)) - 2 * math.asin(math.sqrt(second))


def _mean(values: Any) -> float:
    return float(sum(values) / len(values))


@dataclass(frozen=True)
class Comparison:
    """One configuration against another, with sessions as the unit.

    ``bhr_*`` are pooled (violations over evaluated turns); the difference, its interval, d
    and p are on session BHR (the mean over sessions), the unit. ``replication`` says whether
    the sessions are independent units; for a deterministic run the intervals, effect sizes and
    p-values are ``None``: copies are not samples."""

    treatment: str
    control: str
    replication: str
    sessions: tuple[int, int]
    bhr_treatment: float | None
    bhr_control: float | None
    session_bhr_treatment: float | None
    session_bhr_control: float | None
    relative_reduction: float | None
    bhr_difference: float | None
    bhr_ci: tuple[float, float] | None
    bhr_effect_d: float | None
    p_bhr: float | None
    mastery_treatment: float | None
    mastery_control: float | None
    mastery_difference: float | None
    mastery_ci: tuple[float, float] | None
    mastery_effect_h: float | None
    p_mastery: float | None
    unit: str = UNIT

    def to_dict(self) -> dict[str, Any]:
        def rounded(value: Any) -> Any:
            if isinstance(value, float):
                return round(value, 4)
            if isinstance(value, tuple):
                return [rounded(item) for item in value]
            return value

        return {key: rounded(value) for key, value in asdict(self).items()}


def compare(
    sessions: Iterable[SessionRecord],
    treatment: str,
    control: str,
    *,
    seed: int = 0,
    kind: Replication = "independent",
) -> Comparison:
    chosen = grid_sessions(sessions)
    first = [s for s in chosen if s.config == treatment]
    second = [s for s in chosen if s.config == control]
    bhr_first = [v for v in (session_bhr(s) for s in first) if v is not None]
    bhr_second = [v for v in (session_bhr(s) for s in second) if v is not None]
    summary_first, summary_second = summarize(first), summarize(second)
    mastery_first = [float(s.mastery_reached) for s in first if s.post_tested]
    mastery_second = [float(s.mastery_reached) for s in second if s.post_tested]
    independent = kind == "independent"
    reduction = None
    if summary_first.bhr is not None and summary_second.bhr:
        reduction = (summary_second.bhr - summary_first.bhr) / summary_second.bhr
    bhr_difference = _mean(bhr_first) - _mean(bhr_second) if bhr_first and bhr_second else None
    rate_first, rate_second = summary_first.mastery_rate, summary_second.mastery_rate
    mastery_difference = (
        rate_first - rate_second if rate_first is not None and rate_second is not None else None
    )
    p_bhr = p_mastery = None
    bhr_ci = mastery_ci = None
    if independent and bhr_first and bhr_second:
        p_bhr = permutation_test(bhr_first, bhr_second, seed=seed)
        bhr_ci = bootstrap_difference(bhr_first, bhr_second, seed=seed)
    if independent and mastery_first and mastery_second:
        hits_first, hits_second = int(sum(mastery_first)), int(sum(mastery_second))
        p_mastery = fisher_exact(
            [
                [hits_first, len(mastery_first) - hits_first],
                [hits_second, len(mastery_second) - hits_second],
            ]
        )
        mastery_ci = bootstrap_difference(mastery_first, mastery_second, seed=seed)
    return Comparison(
        treatment=treatment,
        control=control,
        replication=kind,
        sessions=(len(first), len(second)),
        bhr_treatment=summary_first.bhr,
        bhr_control=summary_second.bhr,
        session_bhr_treatment=_mean(bhr_first) if bhr_first else None,
        session_bhr_control=_mean(bhr_second) if bhr_second else None,
        relative_reduction=reduction,
        bhr_difference=bhr_difference,
        bhr_ci=bhr_ci,
        bhr_effect_d=cohens_d(bhr_first, bhr_second) if independent else None,
        p_bhr=p_bhr,
        mastery_treatment=rate_first,
        mastery_control=rate_second,
        mastery_difference=mastery_difference,
        mastery_ci=mastery_ci,
        mastery_effect_h=(
            cohens_h(rate_first, rate_second)
            if independent and rate_first is not None and rate_second is not None
            else None
        ),
        p_mastery=p_mastery,
    )


def comparisons(
    sessions: Sequence[SessionRecord],
    configs: Sequence[str],
    *,
    seed: int = 0,
    kind: Replication = "independent",
) -> list[Comparison]:
    """Every later configuration against every earlier one (``pedrag`` vs ``baseline``,
    ``pedrag`` vs ``prompt_only``, ``prompt_only`` vs ``baseline`` for the default order)."""
    present = [name for name in configs if any(s.config == name for s in sessions)]
    return [
        compare(sessions, treatment, control, seed=seed, kind=kind)
        for later, treatment in enumerate(present)
        for control in reversed(present[:later])
    ][::-1]


# -- paired comparisons: the arms meet the same learners -----------------------------------------

PAIR_UNIT = "learner (persona x exercise x repetition), met by both arms"


@dataclass(frozen=True)
class PairedComparison:
    """Treatment minus control over the learners both arms met (the same seed, so the same
    prior knowledge draw): the mean paired difference with a 95% bootstrap interval, and a
    paired test — Wilcoxon's signed-rank test on session BHR and turns, McNemar's exact test
    (a binomial test on the discordant pairs) on post-test mastery (scipy.stats)."""

    treatment: str
    control: str
    unit: str
    pairs: int
    bhr_difference: float | None
    bhr_ci: tuple[float, float] | None
    p_bhr: float | None
    mastery_difference: float | None
    mastery_ci: tuple[float, float] | None
    p_mastery: float | None
    discordant: tuple[int, int]
    turns_difference: float | None
    turns_ci: tuple[float, float] | None

    def to_dict(self) -> dict[str, Any]:
        def rounded(value: Any) -> Any:
            if isinstance(value, float):
                return round(value, 4)
            if isinstance(value, tuple):
                return [rounded(item) for item in value]
            return value

        return {key: rounded(value) for key, value in asdict(self).items()}


def _pair_key(session: SessionRecord) -> tuple[str, str, int]:
    return (session.persona, session.exercise, session.rep)


def wilcoxon(differences: Sequence[float]) -> float | None:
    """Two-sided p of Wilcoxon's signed-rank test; 1.0 when every difference is zero."""
    from scipy import stats

    nonzero = [value for value in differences if value != 0]
    if not nonzero:
        return 1.0 if differences else None
    return float(stats.wilcoxon(nonzero).pvalue)


def mcnemar_exact(only_treatment: int, only_control: int) -> float:
    """Two-sided exact McNemar p: a binomial test of the discordant pairs at 1/2."""
    from scipy import stats

    total = only_treatment + only_control
    if total == 0:
        return 1.0
    return float(stats.binomtest(only_treatment, total, 0.5).pvalue)


def paired_compare(
    sessions: Iterable[SessionRecord],
    treatment: str,
    control: str,
    *,
    seed: int = 0,
    tested: bool = True,
) -> PairedComparison:
    """``tested=False`` (a deterministic replication: repetitions are copies, not samples):
    the paired differences and intervals, and no p-value."""
    chosen = grid_sessions(sessions)
    first = {_pair_key(s): s for s in chosen if s.config == treatment}
    second = {_pair_key(s): s for s in chosen if s.config == control}
    keys = [key for key in first if key in second]
    bhr = [
        (a, b)
        for a, b in ((session_bhr(first[k]), session_bhr(second[k])) for k in keys)
        if a is not None and b is not None
    ]
    bhr_diffs = [a - b for a, b in bhr]
    post_tested = [k for k in keys if first[k].post_tested and second[k].post_tested]
    mastery_diffs = [
        float(first[k].mastery_reached) - float(second[k].mastery_reached) for k in post_tested
    ]
    turn_diffs = [float(len(first[k].turns) - len(second[k].turns)) for k in keys]
    only_first = sum(d > 0 for d in mastery_diffs)
    only_second = sum(d < 0 for d in mastery_diffs)
    return PairedComparison(
        treatment=treatment,
        control=control,
        unit=PAIR_UNIT,
        pairs=len(keys),
        bhr_difference=_mean(bhr_diffs) if bhr_diffs else None,
        bhr_ci=bootstrap_mean(bhr_diffs, seed=seed),
        p_bhr=wilcoxon(bhr_diffs) if tested else None,
        mastery_difference=_mean(mastery_diffs) if mastery_diffs else None,
        mastery_ci=bootstrap_mean(mastery_diffs, seed=seed),
        p_mastery=mcnemar_exact(only_first, only_second) if mastery_diffs and tested else None,
        discordant=(only_first, only_second),
        turns_difference=_mean(turn_diffs) if turn_diffs else None,
        turns_ci=bootstrap_mean(turn_diffs, seed=seed),
    )


def paired_comparisons(
    sessions: Sequence[SessionRecord], configs: Sequence[str], *, seed: int = 0, tested: bool = True
) -> list[PairedComparison]:
    """``pedrag`` against each other arm, and ``prompt_only`` against ``baseline`` (the order
    of :func:`comparisons`)."""
    present = [name for name in configs if any(s.config == name for s in sessions)]
    return [
        paired_compare(sessions, treatment, control, seed=seed, tested=tested)
        for later, treatment in enumerate(present)
        for control in reversed(present[:later])
    ][::-1]


def turns_per_session(sessions: Iterable[SessionRecord]) -> float | None:
    chosen = grid_sessions(sessions)
    return _mean([len(s.turns) for s in chosen]) if chosen else None


def claim_check(sessions: Iterable[SessionRecord]) -> dict[str, dict[str, int]]:
    """Per configuration that claims a rung for its replies (the supervised tutor), how many
    replies the rubric reads below, at or above the rung the tutor claimed: does the tutor
    deliver the help it says it gives?"""
    found: dict[str, dict[str, int]] = {}
    for session in grid_sessions(sessions):
        for turn in session.turns:
            claimed = turn.tutor.rung
            read = turn.evaluation.estimated_rung if turn.evaluation else None
            if claimed is None or read is None:
                continue
            counts = found.setdefault(
                session.config, {"replies": 0, "below": 0, "at": 0, "above": 0}
            )
            counts["replies"] += 1
            counts["below" if read < claimed else "above" if read > claimed else "at"] += 1
    return found
