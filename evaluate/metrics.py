"""Metrics over simulated sessions: BHR, fidelity, mastery, critical violations, tables and
simulation-level significance tests (seed 1, §4.1 and §4.3).

Evaluation, aggregation. Takes :class:`~pedrag.evaluate.records.SessionRecord` lists (exam-probe
sessions are left out: they belong to gate G4); gives :class:`Summary` figures, per-persona and
per-topic tables, and :class:`Comparison` rows between configurations.

- **BHR** = violations / evaluated turns. An evaluated turn is one tutor reply the evaluator
  judged; a turn whose evaluation failed is *unevaluated* — counted separately, never a pass.
- **fidelity** = mean evaluator score over evaluated turns; its SD is across sessions.
- **mastery rate** = sessions whose student reached understanding >= 0.8 within the turn limit.
- **critical violation rate** = critical violations / evaluated turns.

Significance is tested at the simulation level, as seed 1 did: a two-sided permutation test on
session-level BHR (exact when the number of relabellings is small, otherwise a seeded Monte
Carlo), and Fisher's exact test on sessions mastered vs not. Both use the standard library only.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pedrag.evaluate.records import SessionRecord

EXACT_LIMIT = 50_000  # enumerate every relabelling up to this many, else sample
RESAMPLES = 10_000


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
    mastered = sum(session.mastery_reached for session in chosen)
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
        mastery_rate=_ratio(mastered, len(chosen)),
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


# -- significance ---------------------------------------------------------------------------------


def permutation_test(
    first: Sequence[float], second: Sequence[float], *, resamples: int = RESAMPLES, seed: int = 0
) -> float:
    """Two-sided p-value for a difference in means, by relabelling the pooled values. Exact
    (every relabelling) when there are at most ``EXACT_LIMIT`` of them; otherwise ``resamples``
    seeded random relabellings with the +1 correction, so p is never 0."""
    if not first or not second:
        raise ValueError("permutation_test needs two non-empty samples")
    pooled = [*first, *second]
    size, total = len(first), sum(pooled)
    count = len(pooled)
    observed = abs(statistics.fmean(first) - statistics.fmean(second))
    tolerance = 1e-12 * max(1.0, abs(total))

    def difference(group_sum: float) -> float:
        return abs(group_sum / size - (total - group_sum) / (count - size))

    if math.comb(count, size) <= EXACT_LIMIT:
        hits = relabellings = 0
        for indices in itertools.combinations(range(count), size):
            relabellings += 1
            if difference(sum(pooled[i] for i in indices)) >= observed - tolerance:
                hits += 1
        return hits / relabellings
    rng = random.Random(seed)
    hits = 0
    for _ in range(resamples):
        sample = rng.sample(pooled, count)
        if difference(sum(sample[:size])) >= observed - tolerance:
            hits += 1
    return (hits + 1) / (resamples + 1)


def fisher_exact(table_2x2: Sequence[Sequence[int]]) -> float:
    """Two-sided p-value of Fisher's exact test on ``[[a, b], [c, d]]``: the probability,
    under fixed margins, of every table at most as likely as the observed one."""
    (a, b), (c, d) = table_2x2
    if min(a, b, c, d) < 0:
        raise ValueError("a contingency table holds counts >= 0")
    row1, col1, total = a + b, a + c, a + b + c + d
    if total == 0:
        return 1.0

    def probability(x: int) -> float:
        return math.comb(col1, x) * math.comb(total - col1, row1 - x) / math.comb(total, row1)

    low, high = max(0, row1 - (total - col1)), min(row1, col1)
    observed = probability(a)
    return min(
        1.0,
        sum(
            p for p in (probability(x) for x in range(low, high + 1)) if p <= observed * (1 + 1e-7)
        ),
    )


@dataclass(frozen=True)
class Comparison:
    """One configuration against another, at the simulation level."""

    treatment: str
    control: str
    bhr_treatment: float | None
    bhr_control: float | None
    relative_reduction: float | None
    p_bhr: float | None
    mastery_treatment: float | None
    mastery_control: float | None
    p_mastery: float | None
    sessions: tuple[int, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            key: (round(value, 4) if isinstance(value, float) else value)
            for key, value in asdict(self).items()
        }


def compare(
    sessions: Iterable[SessionRecord], treatment: str, control: str, *, seed: int = 0
) -> Comparison:
    chosen = grid_sessions(sessions)
    first = [s for s in chosen if s.config == treatment]
    second = [s for s in chosen if s.config == control]
    bhr_first = [v for v in (session_bhr(s) for s in first) if v is not None]
    bhr_second = [v for v in (session_bhr(s) for s in second) if v is not None]
    summary_first, summary_second = summarize(first), summarize(second)
    p_bhr = permutation_test(bhr_first, bhr_second, seed=seed) if bhr_first and bhr_second else None
    mastered_first = sum(s.mastery_reached for s in first)
    mastered_second = sum(s.mastery_reached for s in second)
    p_mastery = (
        fisher_exact(
            [
                [mastered_first, len(first) - mastered_first],
                [mastered_second, len(second) - mastered_second],
            ]
        )
        if first and second
        else None
    )
    reduction = None
    if summary_first.bhr is not None and summary_second.bhr:
        reduction = (summary_second.bhr - summary_first.bhr) / summary_second.bhr
    return Comparison(
        treatment=treatment,
        control=control,
        bhr_treatment=summary_first.bhr,
        bhr_control=summary_second.bhr,
        relative_reduction=reduction,
        p_bhr=p_bhr,
        mastery_treatment=summary_first.mastery_rate,
        mastery_control=summary_second.mastery_rate,
        p_mastery=p_mastery,
        sessions=(len(first), len(second)),
    )


def comparisons(
    sessions: Sequence[SessionRecord], configs: Sequence[str], *, seed: int = 0
) -> list[Comparison]:
    """Every later configuration against every earlier one (``pedrag`` vs ``baseline``,
    ``pedrag`` vs ``prompt_only``, ``prompt_only`` vs ``baseline`` for the default order)."""
    present = [name for name in configs if any(s.config == name for s in sessions)]
    return [
        compare(sessions, treatment, control, seed=seed)
        for later, treatment in enumerate(present)
        for control in reversed(present[:later])
    ][::-1]
