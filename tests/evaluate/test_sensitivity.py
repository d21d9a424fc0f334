"""The sensitivity table: outcomes under other settings of the learner model's assumptions."""

from __future__ import annotations

from typing import Any

from pedrag.evaluate.run import Grid, run_grid
from pedrag.evaluate.sensitivity import sensitivity
from pedrag.runtime.policy.theory_set import TheorySet


def test_each_setting_is_a_run_of_the_grid_and_the_default_is_not_run_twice(
    theories: TheorySet, curriculum: Any
) -> None:
    grid = Grid(
        configs=("baseline", "pedrag"),
        personas=("struggling-sarah",),
        exercises=("add_38_47",),
        reps=3,
        turns=8,
        exam_probe=False,
    )
    main = run_grid(grid, theories, curriculum)
    calls: list[Any] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["model"])
        return run_grid(*args, **kwargs)

    rows = sensitivity(
        grid,
        theories,
        curriculum,
        default_sessions=main.sessions,
        settings={"persistence": (0.5, 1.0, 3.0)},
        run=counting,
    )
    assert [model.persistence for model in calls] == [0.5, 3.0]  # 1.0 is the main run
    assert [(r.setting, r.config) for r in rows] == [
        ("0.5", "baseline"),
        ("0.5", "pedrag"),
        ("1", "baseline"),
        ("1", "pedrag"),
        ("3", "baseline"),
        ("3", "pedrag"),
    ]
    by = {(r.setting, r.config): r for r in rows}
    for config in ("baseline", "pedrag"):
        impatient, patient = by[("0.5", config)], by[("3", config)]
        assert impatient.give_up_rate is not None and patient.give_up_rate is not None
        assert impatient.give_up_rate >= patient.give_up_rate
        assert impatient.turns_per_session is not None and patient.turns_per_session is not None
        assert impatient.turns_per_session <= patient.turns_per_session
