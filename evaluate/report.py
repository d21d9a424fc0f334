"""The evaluation report: one plain dict, rendered as JSON, as rich text tables, or as a plot.

Evaluation, output. Takes an :class:`~pedrag.evaluate.run.EvaluationResult`; gives
:func:`build_report` (the JSON-ready dict, the single source both renderings read, so they
cannot disagree), :func:`render_text` (rich tables: summary per configuration, comparisons
with p-values, per-persona and per-topic tables, the gates and the over-help ladder) and
:func:`write_plot` (a bar chart, only when matplotlib happens to be importable — it is not a
dependency).

The report holds no timings and no session ids, so the same grid and seed give the same report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from pedrag.evaluate import gates as gates_module
from pedrag.evaluate import metrics
from pedrag.evaluate.run import EvaluationResult

REPORT_VERSION = 1


def build_report(
    result: EvaluationResult, *, transcripts: bool = False, gate_configs: Sequence[str] = ()
) -> dict[str, Any]:
    """Everything the run measured, as plain JSON-ready data."""
    sessions = result.sessions
    configs = [name for name in result.grid.configs]
    per_persona = metrics.table(sessions, lambda session: session.persona)
    per_topic = metrics.table(sessions, lambda session: session.topic)
    return {
        "version": REPORT_VERSION,
        "grid": result.grid.to_dict(),
        "backend": {
            "tutor": result.backend,
            "student": result.student,
            "evaluator": result.evaluator,
        },
        "configs": {
            name: summary.to_dict() for name, summary in metrics.by_config(sessions).items()
        },
        "comparisons": [
            item.to_dict() for item in metrics.comparisons(sessions, configs, seed=result.grid.seed)
        ],
        "per_persona": _tables(per_persona),
        "per_topic": _tables(per_topic),
        "gates": {
            name: [
                gate.to_dict()
                for gate in gates_module.evaluate_gates(sessions, name, result.exercises)
            ]
            for name in configs
        },
        "gates_checked": list(gate_configs),
        "ladder": [row.to_dict() for row in gates_module.overhelp_ladder(sessions)],
        "sessions": [session.to_dict(transcript=transcripts) for session in sessions],
    }


def _tables(rows: Mapping[str, Mapping[str, metrics.Summary]]) -> dict[str, Any]:
    return {
        row: {config: summary.to_dict() for config, summary in configs.items()}
        for row, configs in rows.items()
    }


def _percent(value: Any) -> str:
    return "-" if value is None else f"{100 * float(value):.1f}%"


def _p(value: Any) -> str:
    if value is None:
        return "-"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def render_text(report: Mapping[str, Any], console: Console) -> None:
    grid = report["grid"]
    backend = report["backend"]
    configs = list(report["configs"])
    console.print(
        f"pedrag evaluate: {len(grid['configs'])} configurations x {len(grid['personas'])} "
        f"personas x {len(grid['exercises'])} exercises x {grid['reps']} reps, "
        f"<= {grid['turns']} turns, seed {grid['seed']}, theory {grid['theory']}"
    )
    console.print(
        f"tutor {backend['tutor']}, student {backend['student']}, "
        f"evaluator {backend['evaluator']}\n"
    )

    summary = Table(title="Summary per configuration (exam probe excluded)")
    for column in (
        "config",
        "sessions",
        "evaluated turns",
        "unevaluated",
        "BHR",
        "critical",
        "fidelity (SD)",
        "mastery",
    ):
        summary.add_column(column, justify="left" if column == "config" else "right")
    for name, item in report["configs"].items():
        fidelity = _percent(item["fidelity"])
        if item["fidelity_sd"] is not None:
            fidelity += f" ({100 * item['fidelity_sd']:.1f})"
        summary.add_row(
            name,
            str(item["sessions"]),
            str(item["evaluated"]),
            str(item["unevaluated"]),
            _percent(item["bhr"]),
            _percent(item["critical_rate"]),
            fidelity,
            _percent(item["mastery_rate"]),
        )
    console.print(summary)

    if report["comparisons"]:
        table = Table(title="Simulation-level comparisons")
        for column in (
            "treatment vs control",
            "BHR",
            "relative reduction",
            "p (permutation)",
            "mastery",
            "p (Fisher)",
        ):
            table.add_column(column, justify="left" if column.startswith("treat") else "right")
        for item in report["comparisons"]:
            table.add_row(
                f"{item['treatment']} vs {item['control']}",
                f"{_percent(item['bhr_treatment'])} vs {_percent(item['bhr_control'])}",
                _percent(item["relative_reduction"]),
                _p(item["p_bhr"]),
                f"{_percent(item['mastery_treatment'])} vs {_percent(item['mastery_control'])}",
                _p(item["p_mastery"]),
            )
        console.print(table)

    for title, key in (("Per persona", "per_persona"), ("Per topic", "per_topic")):
        table = Table(title=f"{title}: BHR / mastery")
        table.add_column(title.split()[-1])
        for name in configs:
            table.add_column(name, justify="right")
        for row, by_config in report[key].items():
            cells = []
            for name in configs:
                item = by_config.get(name)
                cells.append(
                    "-"
                    if item is None
                    else f"{_percent(item['bhr'])} / {_percent(item['mastery_rate'])}"
                )
            table.add_row(row, *cells)
        console.print(table)

    table = Table(title="Acceptance gates (seed 2)")
    table.add_column("config")
    table.add_column("gate")
    table.add_column("measured", justify="right")
    table.add_column("threshold")
    table.add_column("status")
    table.add_column("detail")
    for name, results in report["gates"].items():
        for gate in results:
            value = gate["value"]
            if value is None:
                shown = "-"
            elif gate["id"] in {"G2", "G3"}:
                shown = _percent(value)
            else:
                shown = str(int(value))
            status = gate["status"]
            style = {"pass": "green", "fail": "red"}.get(status, "yellow")
            table.add_row(
                name,
                f"{gate['id']} {gate['name']}",
                shown,
                gate["threshold"],
                f"[{style}]{status}[/{style}]",
                gate["detail"],
            )
    console.print(table)

    if report["ladder"]:
        table = Table(title="Over-help ladder: rejections by cause")
        table.add_column("kind")
        table.add_column("source")
        table.add_column("cause")
        for name in configs:
            table.add_column(name, justify="right")
        for row in report["ladder"]:
            table.add_row(
                row["kind"],
                row["source"],
                row["cause"],
                *(str(row["counts"].get(name, 0)) for name in configs),
            )
        console.print(table)


def write_plot(report: Mapping[str, Any], path: str | Path) -> str | None:
    """BHR, critical rate, fidelity and mastery per configuration as a grouped bar chart.
    Returns ``None`` on success, or why no plot was written (matplotlib missing)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed, so no plot was written (pip install matplotlib)"
    configs = list(report["configs"])
    measures = (
        ("BHR", "bhr"),
        ("critical", "critical_rate"),
        ("fidelity", "fidelity"),
        ("mastery", "mastery_rate"),
    )
    figure, axis = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(1, len(configs))
    for offset, name in enumerate(configs):
        values = [100 * float(report["configs"][name][key] or 0) for _, key in measures]
        positions = [index + offset * width for index in range(len(measures))]
        axis.bar(positions, values, width, label=name)
    axis.set_xticks([index + width * (len(configs) - 1) / 2 for index in range(len(measures))])
    axis.set_xticklabels([label for label, _ in measures])
    axis.set_ylabel("%")
    axis.set_ylim(0, 100)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return None
