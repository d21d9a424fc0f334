"""The evaluation report: one plain dict, rendered as JSON, as rich text tables, or as a plot.

Evaluation, output. Takes an :class:`~pedrag.evaluate.run.EvaluationResult`; gives
:func:`build_report` (the JSON-ready dict, the single source both renderings read, so they
cannot disagree), :func:`render_text` (rich tables: what the statistics' unit and n are,
summary per configuration, comparisons with differences, confidence intervals, effect sizes
and — for independent sessions only — p-values, per-persona and per-topic tables, the gates and
the over-help ladder) and :func:`write_plot` (the figures, with matplotlib, the optional
``evaluate`` extra: ``pip install 'pedrag[evaluate]'``).

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


OFFLINE_STATEMENT = (
    "Offline, these figures measure the machinery under a stated learner model, not learning: "
    "the learners are simulated ({model}), the chat arms' model is a caricature, and the "
    "evaluator is a deterministic rubric against the theory's written principles."
)
ENDPOINT_STATEMENT = (
    "With an endpoint, the tutors are the endpoint's model; the learners' knowledge and moves "
    "are still simulated ({model})."
)


def build_report(
    result: EvaluationResult,
    *,
    transcripts: bool = False,
    gate_configs: Sequence[str] = (),
    sensitivity: Sequence[Any] = (),
    agreement: Sequence[Any] = (),
) -> dict[str, Any]:
    """Everything the run measured, as plain JSON-ready data."""
    sessions = result.sessions
    configs = [name for name in result.grid.configs]
    per_persona = metrics.table(sessions, lambda session: session.persona)
    per_topic = metrics.table(sessions, lambda session: session.topic)
    kind = metrics.replication(sessions, stochastic=result.grid.stochastic)
    return {
        "version": REPORT_VERSION,
        "grid": result.grid.to_dict(),
        "backend": {
            "tutor": result.backend,
            "student": result.student,
            "evaluator": result.evaluator,
        },
        "measures": (
            OFFLINE_STATEMENT if result.backend == "offline" else ENDPOINT_STATEMENT
        ).format(model=result.model.label()),
        "learner_model": result.model.to_dict(),
        "statistics": _statistics(result, kind),
        "configs": {
            name: {
                **summary.to_dict(),
                "turns_per_session": _round(
                    metrics.turns_per_session([s for s in sessions if s.config == name])
                ),
            }
            for name, summary in metrics.by_config(sessions).items()
        },
        "paired": [
            item.to_dict()
            for item in metrics.paired_comparisons(
                sessions, configs, seed=result.grid.seed, tested=kind == "independent"
            )
        ],
        "claims": metrics.claim_check(sessions),
        "sensitivity": [row.to_dict() for row in sensitivity],
        "mrbench": [row.to_dict() for row in agreement],
        "intervals": _intervals(sessions, configs, kind, result.grid.seed),
        "comparisons": [
            item.to_dict()
            for item in metrics.comparisons(sessions, configs, seed=result.grid.seed, kind=kind)
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


def _statistics(result: EvaluationResult, kind: str) -> dict[str, Any]:
    """The unit, n and kind of replication, and the sentence the report opens with."""
    grid = result.grid
    chosen = metrics.grid_sessions(result.sessions)
    per_config = {name: sum(s.config == name for s in chosen) for name in grid.configs}
    distinct = metrics.distinct_sessions(chosen)
    n = ", ".join(f"{name} {count}" for name, count in per_config.items())
    if kind == "deterministic":
        statement = (
            f"unit: one session; n = {n} sessions, but the run is a deterministic "
            f"replication ({distinct} distinct sessions in all: every repetition of a cell is "
            "a copy), so no p-value or confidence interval is given"
        )
    else:
        statement = (
            f"unit: one session; n = {n} sessions ({grid.reps} repetition"
            f"{'s' if grid.reps != 1 else ''} per cell, each drawing its learner from a "
            "different seed); p-values and 95% bootstrap intervals treat sessions as "
            "independent units"
        )
    return {
        "unit": metrics.UNIT,
        "replication": kind,
        "n": per_config,
        "distinct_sessions": distinct,
        "statement": statement,
    }


def _intervals(
    sessions: Sequence[Any], configs: Sequence[str], kind: str, seed: int
) -> dict[str, Any]:
    """Per configuration, 95% bootstrap intervals (sessions resampled) of the pooled BHR, the
    critical-violation rate, session fidelity and post-test mastery (independent runs only)."""
    if kind != "independent":
        return {}
    chosen = metrics.grid_sessions(sessions)
    found: dict[str, Any] = {}
    for name in configs:
        mine = [s for s in chosen if s.config == name]
        counts = [
            (sum(e.violation for e in s.evaluated), len(s.evaluated)) for s in mine if s.evaluated
        ]
        mastery = [float(s.mastery_reached) for s in mine if s.post_tested]
        critical = [
            (sum(e.critical for e in s.evaluated), len(s.evaluated)) for s in mine if s.evaluated
        ]
        fidelity = [
            (sum(e.fidelity for e in s.evaluated), len(s.evaluated)) for s in mine if s.evaluated
        ]
        found[name] = {
            "bhr": _pair(metrics.bootstrap_ratio(counts, seed=seed)),
            "mastery": _pair(metrics.bootstrap_mean(mastery, seed=seed)),
            "critical": _pair(metrics.bootstrap_ratio(critical, seed=seed)),
            "fidelity": _pair(metrics.bootstrap_ratio(fidelity, seed=seed)),
        }
    return found


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _pair(value: tuple[float, float] | None) -> list[float] | None:
    return None if value is None else [round(value[0], 4), round(value[1], 4)]


def _tables(rows: Mapping[str, Mapping[str, metrics.Summary]]) -> dict[str, Any]:
    return {
        row: {config: summary.to_dict() for config, summary in configs.items()}
        for row, configs in rows.items()
    }


def _percent(value: Any) -> str:
    return "-" if value is None else f"{100 * float(value):.1f}%"


def _points(value: Any) -> str:
    """A difference of two proportions, in percentage points."""
    return "-" if value is None else f"{100 * float(value):+.1f} pt"


def _interval(bounds: Any, *, points: bool = False) -> str:
    if not bounds:
        return ""
    low, high = (100 * float(bounds[0]), 100 * float(bounds[1]))
    unit = "" if points else "%"
    return f" [{low:+.1f}, {high:+.1f}]" if points else f" [{low:.1f}, {high:.1f}]{unit}"


def _number(value: Any) -> str:
    return "-" if value is None else f"{float(value):+.2f}"


def _p(value: Any) -> str:
    if value is None:
        return "-"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def render_text(report: Mapping[str, Any], console: Console) -> None:
    grid = report["grid"]
    backend = report["backend"]
    configs = list(report["configs"])
    console.print(report["measures"])
    console.print(
        f"pedrag evaluate: {len(grid['configs'])} configurations x {len(grid['personas'])} "
        f"personas x {len(grid['exercises'])} exercises x {grid['reps']} reps, "
        f"<= {grid['turns']} turns, seed {grid['seed']}, theory {grid['theory']}"
    )
    console.print(
        f"tutor {backend['tutor']}, student {backend['student']}, evaluator {backend['evaluator']}"
    )
    console.print(report["statistics"]["statement"] + "\n")
    intervals = report.get("intervals") or {}

    summary = Table(title="Summary per configuration (exam probe excluded)")
    for column in (
        "config",
        "sessions",
        "turns",
        "uneval.",
        "BHR [95% CI]",
        "critical",
        "fidelity (SD)",
        "post-test mastery [95% CI]",
        "practice",
        "gave up",
    ):
        summary.add_column(column, justify="left" if column == "config" else "right")
    for name, item in report["configs"].items():
        fidelity = _percent(item["fidelity"])
        if item["fidelity_sd"] is not None:
            fidelity += f" ({100 * item['fidelity_sd']:.1f})"
        bounds = intervals.get(name, {})
        summary.add_row(
            name,
            str(item["sessions"]),
            str(item["evaluated"]),
            str(item["unevaluated"]),
            _percent(item["bhr"]) + _interval(bounds.get("bhr")),
            _percent(item["critical_rate"]),
            fidelity,
            f"{_percent(item['mastery_rate'])} ({item['mastered']}/{item['post_tested']})"
            + _interval(bounds.get("mastery")),
            _percent(item["practice_rate"]),
            _percent(item["give_up_rate"]),
        )
    console.print(summary)

    if report["comparisons"]:
        independent = report["statistics"]["replication"] == "independent"
        title = (
            "Comparisons, sessions as the unit: mean session BHR and post-test mastery "
            "(difference = treatment - control, in points; d, h: effect sizes)"
        )
        table = Table(title=title)
        columns = ["treatment vs control", "n", "session BHR", "difference [95% CI]", "d"]
        if independent:
            columns.append("p (permutation)")
        columns += ["mastery", "difference [95% CI]", "h"]
        if independent:
            columns.append("p (Fisher)")
        for column in columns:
            table.add_column(column, justify="left" if column.startswith("treat") else "right")
        for item in report["comparisons"]:
            row = [
                f"{item['treatment']} vs {item['control']}",
                f"{item['sessions'][0]} vs {item['sessions'][1]}",
                f"{_percent(item['session_bhr_treatment'])} vs "
                f"{_percent(item['session_bhr_control'])}",
                _points(item["bhr_difference"]) + _interval(item["bhr_ci"], points=True),
                _number(item["bhr_effect_d"]),
            ]
            if independent:
                row.append(_p(item["p_bhr"]))
            row += [
                f"{_percent(item['mastery_treatment'])} vs {_percent(item['mastery_control'])}",
                _points(item["mastery_difference"]) + _interval(item["mastery_ci"], points=True),
                _number(item["mastery_effect_h"]),
            ]
            if independent:
                row.append(_p(item["p_mastery"]))
            table.add_row(*row)
        console.print(table)
        if not independent:
            console.print(
                "No significance test: the repetitions are copies of one deterministic run, "
                "not independent samples (pseudo-replication)."
            )

    for name, counts in (report.get("claims") or {}).items():
        console.print(
            f"{name}: of {counts['replies']} replies with a claimed rung, the rubric reads "
            f"{counts['below']} below the claim, {counts['at']} at it, {counts['above']} above"
        )
    console.print(figures_markdown(report, tables=("paired", "sensitivity", "mrbench")))

    for title, key in (("Per persona", "per_persona"), ("Per topic", "per_topic")):
        table = Table(title=f"{title}: BHR / post-test mastery (sessions)")
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
                    else f"{_percent(item['bhr'])} / {_percent(item['mastery_rate'])} "
                    f"({item['sessions']})"
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


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def figures_markdown(
    report: Mapping[str, Any],
    tables: Sequence[str] = ("arms", "paired", "sensitivity", "mrbench"),
) -> str:
    """The figures as Markdown tables: what ``docs/evaluation.md`` shows, generated here so
    the doc cannot drift from the command (a test compares them)."""
    lines: list[str] = []
    intervals = report.get("intervals") or {}
    if "arms" in tables:
        lines += [report["measures"], "", report["statistics"]["statement"], ""]
        rows = []
        for name, item in report["configs"].items():
            bounds = intervals.get(name, {})
            rows.append(
                [
                    name,
                    str(item["sessions"]),
                    "-"
                    if item["turns_per_session"] is None
                    else f"{item['turns_per_session']:.1f}",
                    _percent(item["give_up_rate"]),
                    f"{_percent(item['mastery_rate'])} ({item['mastered']}/{item['post_tested']})"
                    + _interval(bounds.get("mastery")),
                    _percent(item["bhr"]) + _interval(bounds.get("bhr")),
                    _percent(item["critical_rate"]) + _interval(bounds.get("critical")),
                    _percent(item["fidelity"]) + _interval(bounds.get("fidelity")),
                ]
            )
        lines += _md_table(
            (
                "arm",
                "sessions",
                "turns / session",
                "gave up",
                "post-test mastery [95% CI]",
                "BHR [95% CI]",
                "critical [95% CI]",
                "fidelity [95% CI]",
            ),
            rows,
        )
        lines.append("")
    if "paired" in tables and report.get("paired"):
        first = report["paired"][0]
        lines.append(
            f"Paired comparisons (treatment - control). Unit: one {first['unit']}; n = pairs. "
            "Wilcoxon signed-rank on session BHR, exact McNemar on mastery; 95% bootstrap "
            "intervals of the mean paired difference."
        )
        lines.append("")
        rows = [
            [
                f"{item['treatment']} vs {item['control']}",
                str(item["pairs"]),
                _points(item["mastery_difference"])
                + _interval(item["mastery_ci"], points=True)
                + f", p {_p(item['p_mastery'])} (discordant {item['discordant'][0]}"
                f"/{item['discordant'][1]})",
                _points(item["bhr_difference"])
                + _interval(item["bhr_ci"], points=True)
                + f", p {_p(item['p_bhr'])}",
                "-" if item["turns_difference"] is None else f"{item['turns_difference']:+.1f}",
            ]
            for item in report["paired"]
        ]
        lines += _md_table(
            ("treatment vs control", "n (pairs)", "mastery", "session BHR", "turns"), rows
        )
        lines.append("")
    if "sensitivity" in tables and report.get("sensitivity"):
        lines.append(
            "Sensitivity: one learner-model assumption varied at a time, the others at their "
            "defaults (teaches=ladder, answer_reception=0.2, persistence=1). Mastery / gave up "
            "/ turns per session / BHR."
        )
        lines.append("")
        configs = list(dict.fromkeys(row["config"] for row in report["sensitivity"]))
        grouped: dict[tuple[str, str], dict[str, Any]] = {}
        for row in report["sensitivity"]:
            grouped.setdefault((row["assumption"], row["setting"]), {})[row["config"]] = row
        rows = []
        for (assumption, setting), by_config in grouped.items():
            cells = []
            for config in configs:
                row = by_config.get(config)
                cells.append(
                    "-"
                    if row is None
                    else f"{_percent(row['mastery_rate'])} / {_percent(row['give_up_rate'])} / "
                    f"{row['turns_per_session'] or 0:.1f} / {_percent(row['bhr'])}"
                )
            rows.append([assumption, setting, *cells])
        lines += _md_table(("assumption", "setting", *configs), rows)
        lines.append("")
    if "mrbench" in tables and report.get("mrbench"):
        lines.append(
            "The rubric against MRBench's human labels (development half): precision, recall, F1."
        )
        lines.append("")
        rows = [
            [
                row["reading"],
                row["label"],
                f"{row['replies']} ({row['positives']} positive)",
                _percent(row["precision"]),
                _percent(row["recall"]),
                _percent(row["f1"]),
            ]
            for row in report["mrbench"]
        ]
        lines += _md_table(
            ("rubric reading", "human label", "replies", "precision", "recall", "F1"), rows
        )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


PLOT_MEASURES = (("BHR", "bhr"), ("post-test mastery", "mastery_rate"))


def write_plot(report: Mapping[str, Any], path: str | Path) -> str | None:
    """The report's figures in one image: per configuration, per persona and per topic, BHR
    and post-test mastery as grouped bars (with 95% bootstrap intervals per configuration for
    an independent run). Returns ``None`` on success, or why no plot was written."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return (
            "matplotlib is not installed, so no plot was written (pip install 'pedrag[evaluate]')"
        )
    configs = list(report["configs"])
    intervals = report.get("intervals") or {}
    rows = (
        ("per configuration", {"all": report["configs"]}),
        ("per persona", _by_row(report["per_persona"])),
        ("per topic", _by_row(report["per_topic"])),
    )
    figure, axes = plt.subplots(3, 2, figsize=(12, 11))
    width = 0.8 / max(1, len(configs))
    for row_index, (label, groups) in enumerate(rows):
        names = list(groups)
        for column, (measure, key) in enumerate(PLOT_MEASURES):
            axis = axes[row_index][column]
            for offset, config in enumerate(configs):
                values = [
                    100 * float((groups[name].get(config) or {}).get(key) or 0) for name in names
                ]
                positions = [index + offset * width for index in range(len(names))]
                errors = None
                bounds = (intervals.get(config) or {}).get("bhr" if key == "bhr" else "mastery")
                if row_index == 0 and bounds:
                    errors = [
                        [max(0.0, values[0] - 100 * bounds[0])],
                        [max(0.0, 100 * bounds[1] - values[0])],
                    ]
                axis.bar(positions, values, width, label=config, yerr=errors, capsize=4)
            axis.set_xticks([index + width * (len(configs) - 1) / 2 for index in range(len(names))])
            axis.set_xticklabels(
                [name.replace("_", " ") for name in names],
                rotation=20 if len(names) > 4 else 0,
                ha="right" if len(names) > 4 else "center",
                fontsize=8,
            )
            axis.set_ylim(0, 100)
            axis.set_ylabel("%")
            axis.set_title(f"{measure}, {label}", fontsize=10)
    axes[0][0].legend(fontsize=8)
    statement = report["statistics"]["statement"]
    figure.suptitle(_wrap(statement, 140), fontsize=8)
    figure.tight_layout(rect=(0, 0, 1, 0.95))
    figure.savefig(path)
    plt.close(figure)
    return None


def _by_row(table: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {row: configs for row, configs in table.items()}


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))
