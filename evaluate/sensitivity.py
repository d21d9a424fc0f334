"""The sensitivity table: each arm's outcomes under other settings of the learner model's
assumptions, one assumption varied at a time (issue 28, item 5).

Evaluation, robustness. Takes a grid, the theory set and curriculum, and the settings to try
(:data:`~pedrag.evaluate.learners.SENSITIVITY`: three settings of ``teaches``,
``answer_reception`` and ``persistence``); gives one :class:`SensitivityRow` per (assumption,
setting, arm): post-test mastery, give-up rate, turns per session and BHR, from a run of the
grid (exam probe off) with that assumption changed and the others at their defaults.

Why: offline, the learner is ours, so any outcome that moves when an assumption moves is a
property of the learner model, not of the tutor; a conclusion that holds under every setting
is the one a reader may carry to an endpoint run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pedrag.evaluate import metrics
from pedrag.evaluate.learners import DEFAULT_MODEL, SENSITIVITY, LearningModel
from pedrag.evaluate.records import SessionRecord


@dataclass(frozen=True)
class SensitivityRow:
    assumption: str
    setting: str
    config: str
    sessions: int
    mastery_rate: float | None
    give_up_rate: float | None
    turns_per_session: float | None
    bhr: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            key: round(value, 4) if isinstance(value, float) else value
            for key, value in vars(self).items()
        }


def rows_for(
    assumption: str, setting: Any, sessions: list[SessionRecord], configs: tuple[str, ...]
) -> list[SensitivityRow]:
    found = []
    for config in configs:
        mine = [s for s in metrics.grid_sessions(sessions) if s.config == config]
        summary = metrics.summarize(mine)
        found.append(
            SensitivityRow(
                assumption,
                f"{setting:g}" if isinstance(setting, float) else str(setting),
                config,
                summary.sessions,
                summary.mastery_rate,
                summary.give_up_rate,
                metrics.turns_per_session(mine),
                summary.bhr,
            )
        )
    return found


def sensitivity(
    grid: Any,
    theories: Any,
    curriculum: Any,
    *,
    default_sessions: list[SessionRecord] | None = None,
    settings: Mapping[str, tuple[Any, ...]] = SENSITIVITY,
    run: Callable[..., Any] | None = None,
) -> list[SensitivityRow]:
    """Every (assumption, setting, arm) row; ``default_sessions`` (the main run's) stand for
    the default setting so it is not run twice."""
    from pedrag.evaluate.run import run_grid

    runner = run or run_grid
    probe_off = replace(grid, exam_probe=False)
    rows: list[SensitivityRow] = []
    for assumption, values in settings.items():
        for value in values:
            model = replace(DEFAULT_MODEL, **{assumption: value})
            if model == DEFAULT_MODEL and default_sessions is not None:
                sessions = default_sessions
            else:
                sessions = runner(probe_off, theories, curriculum, model=model).sessions
            rows += rows_for(assumption, value, sessions, grid.configs)
    return rows


__all__ = ["LearningModel", "SensitivityRow", "sensitivity"]
