"""How `pedrag check` scales with the number of rules, against the released algorithm.

Theories come from `benchmarks/theory_gen.py` (seeded: 12 metrics, a fixed 30 actions, random
conditions, no catch-all). Per size this measures:

- in process: the semantic checks of one `Analysis` (every check of the catalog plus the
  coverage facts), CPU seconds, for today's code and for the baseline;
- end to end: the `pedrag check FILE --format json` process (interpreter start, imports, front
  end, checks, report), CPU and wall seconds and peak memory, again for both, and whether the
  two JSON reports are identical;
- the re-check through the CLI after a one-rule edit (a fresh process, as an editor's save or
  a CI run has; it uses the on-disk check cache when there is one).

The baseline is the released algorithm of the same family (`tests/compiler/released_pairs.py`:
the pair search for redundant and shadowed rules and the rule status before the structural
search), run in the same process and machine, not a strawman. Its run at 5,000 rules takes
minutes; `--baseline-max` caps the sizes it is run at. The outside reference is a plain z3
encoding of the same questions, asked pairwise (`plain_z3`): every figure is CPU seconds.
Child processes keep compiled modules between them, as an installed pedrag does
(`benchmarks/compiled_modules.py`; `--compile-each-run`: each compiles pedrag from source where
the environment says `PYTHONDONTWRITEBYTECODE`).
Goals (issue 30): a cold check of 5,000 rules under 5 s of CPU, 20,000 under 30 s, and a
one-rule edit of 5,000 re-checked under 0.3 s.

    python benchmarks/check_scaling.py                    # 50, 500, 5000, 20000 rules
    python benchmarks/check_scaling.py --sizes 50 500     # smaller
    python benchmarks/check_scaling.py --selection priority --sizes 50 500
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from compiled_modules import add_flag, child_environment, kept_for_the_run, warm_up  # noqa: E402
from theory_gen import generate, one_rule_edit  # noqa: E402

from pedrag.compiler import analysis as analysis_module  # noqa: E402
from pedrag.compiler.checks import catalog  # noqa: E402
from pedrag.dsl.loader import load_text  # noqa: E402
from tests.compiler.released_pairs import ReleasedAnalysis  # noqa: E402

# The `pedrag` program (`pedrag.cli.console`, as the installed command runs it), and the same
# with the released pair search swapped in (the driver imports Analysis when it runs).
BASELINE_CLI = (
    "import sys; sys.path.insert(0, {root!r}); "
    "from pedrag.compiler import analysis; "
    "from tests.compiler.released_pairs import ReleasedAnalysis; "
    "analysis.Analysis = ReleasedAnalysis; "
    "from pedrag.cli import console; console()"
)
OURS_CLI = "from pedrag.cli import console; console()"


def _plain_term(node: Any, z3: Any, variables: dict[str, Any], metrics: dict[str, Any]) -> Any:
    """A resolved condition as a z3 term, written directly (no cells, boxes or caches): enums
    are integers indexing their values."""
    kind = type(node).__name__
    if kind == "And":
        return z3.And(*(_plain_term(o, z3, variables, metrics) for o in node.operands))
    if kind == "Or":
        return z3.Or(*(_plain_term(o, z3, variables, metrics) for o in node.operands))
    if kind == "Not":
        return z3.Not(_plain_term(node.operand, z3, variables, metrics))
    if kind == "MetricRef":
        return variables[node.name]
    if kind == "Bool":
        return z3.BoolVal(node.value)
    if kind == "Number":
        return z3.RealVal(str(node.value))
    if kind == "In":
        element = node.element
        values = metrics[element.name].values
        hits = [variables[element.name] == values.index(i.value) for i in node.container.items]
        found = z3.Or(*hits) if hits else z3.BoolVal(False)
        return z3.Not(found) if node.negated else found
    if kind == "Compare":
        ops = {
            "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b,
            ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b,
            "==": lambda a, b: a == b,
            "!=": lambda a, b: a != b,
        }
        parts = []
        operands = node.operands
        for index, op in enumerate(node.ops):
            left, right = operands[index], operands[index + 1]
            enum = next(
                (o.name for o in (left, right) if type(o).__name__ == "MetricRef"
                 and metrics[o.name].type == "enum"),
                None,
            )  # fmt: skip
            if enum is not None:
                values = metrics[enum].values
                left_term = (
                    values.index(left.value) if type(left).__name__ == "EnumConst"
                    else variables[enum]
                )  # fmt: skip
                right_term = (
                    values.index(right.value) if type(right).__name__ == "EnumConst"
                    else variables[enum]
                )  # fmt: skip
                parts.append(ops[op](left_term, right_term))
            else:
                parts.append(
                    ops[op](
                        _plain_term(left, z3, variables, metrics),
                        _plain_term(right, z3, variables, metrics),
                    )
                )
        return z3.And(*parts) if len(parts) > 1 else parts[0]
    raise ValueError(f"the plain encoding does not cover {kind}")


def plain_z3(text: str, name: str, budget: float) -> dict[str, Any]:
    """The outside reference: the same questions asked pairwise of z3 with a plain encoding of
    the rules' conditions (every rule: can it hold? every ordered pair of one action's rules:
    does one imply the other? every pair across two conflicting actions: can both hold?),
    one incremental solver, no structure first. Conditions only: the ceiling and selection,
    which `pedrag check` also weighs, are left out, so this is a lower bound on what a plain
    encoding of the whole question costs. Asked until `budget` CPU seconds are spent; the
    rest is extrapolated at the rate measured."""
    import z3

    loaded = load_text(text, name)
    assert loaded.theory is not None
    theory = loaded.theory
    metrics = dict(theory.metrics)
    variables: dict[str, Any] = {}
    solver = z3.Solver()
    for metric in metrics.values():
        if metric.type == "float":
            variables[metric.name] = v = z3.Real(metric.name)
            solver.add(v >= str(metric.low), v <= str(metric.high))
        elif metric.type == "int":
            variables[metric.name] = v = z3.Int(metric.name)
            solver.add(v >= int(metric.low), v <= int(metric.high))
        elif metric.type == "enum":
            variables[metric.name] = v = z3.Int(metric.name)
            solver.add(v >= 0, v < len(metric.values))
        else:
            variables[metric.name] = z3.Bool(metric.name)
    started = time.process_time()
    terms = {rule.id: _plain_term(rule.when.expr, z3, variables, metrics) for rule in theory.rules}
    by_action: dict[str, list[str]] = {}
    for rule in theory.rules:
        by_action.setdefault(rule.action, []).append(rule.id)
    questions: list[tuple[str, str, str]] = [("holds", r, r) for r in terms]
    for ids in by_action.values():
        questions += [("implies", a, b) for a in ids for b in ids if a != b]
    for action in theory.actions.values():
        for other in action.conflicts:
            if action.name < other:
                questions += [
                    ("meets", a, b)
                    for a in by_action.get(action.name, [])
                    for b in by_action.get(other, [])
                ]
    asked = 0
    for kind, a, b in questions:
        solver.push()
        if kind == "holds":
            solver.add(terms[a])
        elif kind == "implies":
            solver.add(terms[a], z3.Not(terms[b]))
        else:
            solver.add(terms[a], terms[b])
        solver.check()
        solver.pop()
        asked += 1
        if asked % 200 == 0 and time.process_time() - started > budget:
            break
    spent = time.process_time() - started
    return {
        "questions": len(questions),
        "asked": asked,
        "cpu": spent * len(questions) / asked,
        "extrapolated": asked < len(questions),
    }


def in_process(text: str, name: str, baseline: bool) -> tuple[float, int]:
    """CPU seconds of the semantic checks on a loaded theory, and the number of findings."""
    analysis_module._CACHE.clear()
    loaded = load_text(text, name)
    assert loaded.ok and loaded.theory is not None, [d.message for d in loaded.diagnostics][:3]
    started = time.process_time()
    kind = ReleasedAnalysis if baseline else analysis_module.Analysis
    analysis = kind(loaded.theory)
    found = 0
    for check in catalog().values():
        if check.info.stage == "semantic" and check.run is not None:
            found += len(list(check.run(analysis)))
    analysis.facts()
    return time.process_time() - started, found


# Runs the measured process and reports its own CPU, wall time and peak memory. A child keeps
# its parent's high-water memory mark across exec, so a `pedrag check` started straight from
# this script (which holds a 5,000-rule analysis in memory) reported this script's size, not
# its own. Started from this small launcher, it reports its own.
LAUNCHER = """
import os, sys, time
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, "-c", *sys.argv[1:]])
_, _, usage = os.wait4(pid, 0)
wall = time.perf_counter() - started
os.write(2, f"\\nMEASURED {usage.ru_utime + usage.ru_stime} {wall} {usage.ru_maxrss}\\n".encode())
"""


def run_cli(args: list[str], baseline: bool, env: dict[str, str]) -> dict[str, Any]:
    """One `pedrag check` process, measured by `LAUNCHER`: its CPU and wall seconds and its
    peak resident memory."""
    code = BASELINE_CLI.format(root=str(ROOT)) if baseline else OURS_CLI
    with tempfile.TemporaryFile() as sink, tempfile.TemporaryFile() as errors:
        subprocess.run(
            [sys.executable, "-c", LAUNCHER, code, *args], stdout=sink, stderr=errors, env=env
        )
        sink.seek(0)
        out = sink.read()
        errors.seek(0)
        measured = errors.read().decode("utf-8", "replace").rsplit("MEASURED ", 1)[-1].split()
    cpu, wall, rss_kib = float(measured[0]), float(measured[1]), int(measured[2])
    return {"wall": wall, "cpu": cpu, "rss_mib": rss_kib / 1024, "out": out}


def _findings(out: bytes) -> list[Any]:
    """The findings of a JSON report as compared between the two algorithms: everything but
    the witness (any state showing the finding will do, and z3's models depend on what the
    solver was asked before), what is computed from the witness (a conflict's proposed guard
    reads the witness's values, so its help text and `data.guard` follow it), and the cut of
    the uncovered space into gap regions (grown from such models); a gap's total uncovered
    share is compared."""
    try:
        diagnostics = json.loads(out)["diagnostics"]
    except (ValueError, KeyError):
        return [{"unreadable output": out[:200].decode("utf-8", "replace")}]
    kept: list[Any] = []
    for diagnostic in diagnostics:
        if diagnostic["check"] == "coverage-gap":
            kept.append(("coverage-gap", diagnostic.get("data", {}).get("uncovered")))
        else:
            finding = {k: v for k, v in diagnostic.items() if k not in ("witness", "help")}
            if "guard" in finding.get("data", {}):
                finding["data"] = {k: v for k, v in finding["data"].items() if k != "guard"}
            kept.append(finding)
    return kept


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 500, 5000, 20000])
    parser.add_argument("--selection", choices=["weighted", "priority"], default="weighted")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per measurement below 5,000 rules (median)"
    )
    parser.add_argument(
        "--baseline-max", type=int, default=5000, help="largest size the baseline is run at"
    )
    parser.add_argument(
        "--z3-budget", type=float, default=60.0,
        help="CPU seconds the plain z3 reference may spend per size before it extrapolates",
    )  # fmt: skip
    add_flag(parser)
    args = parser.parse_args(argv)
    with kept_for_the_run(args.compile_each_run):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="pedrag-bench-"))
    env = child_environment(PEDRAG_CACHE_DIR=str(workdir / "cache"))
    # The shipped theories, checked once untimed: the first timed process (the front end,
    # run once) would otherwise be the one compiling pedrag and z3's bindings.
    shipped = [sys.executable, "-m", "pedrag.cli", "check", str(ROOT / "theories"), "--no-cache"]
    warm_up(shipped, PEDRAG_CACHE_DIR=str(workdir / "cache"))
    rows = []
    for size in args.sizes:
        repeat = 1 if size >= 5000 else args.repeat
        text = generate(size, args.seed, args.selection)
        path = workdir / f"gen_{size}.yaml"
        path.write_text(text, "utf-8")
        with_baseline = size <= args.baseline_max
        ours_cpu = _median([in_process(text, path.name, False)[0] for _ in range(repeat)])
        base_cpu = (
            _median([in_process(text, path.name, True)[0] for _ in range(repeat)])
            if with_baseline
            else math.nan
        )
        reference = plain_z3(text, path.name, args.z3_budget)
        check = ["check", str(path), "--format", "json"]
        front = run_cli([*check, "--no-semantic", "--no-cache"], False, env)
        ours = [run_cli([*check, "--no-cache"], False, env) for _ in range(repeat)]
        base = [run_cli(check, True, env) for _ in range(repeat)] if with_baseline else []
        (workdir / f"ours_{size}.json").write_bytes(ours[0]["out"])
        if with_baseline:
            (workdir / f"baseline_{size}.json").write_bytes(base[0]["out"])
        same = _findings(ours[0]["out"]) == _findings(base[0]["out"]) if with_baseline else None
        # Re-check after a one-rule edit, through the CLI with its on-disk cache warm.
        run_cli(check, False, env)
        path.write_text(one_rule_edit(text), "utf-8")
        edit = run_cli(check, False, env)
        path.write_text(text, "utf-8")
        rows.append(
            {
                "size": size,
                "ours_cpu": ours_cpu,
                "base_cpu": base_cpu,
                "front_cpu": front["cpu"],
                "z3_cpu": reference["cpu"],
                "z3_questions": reference["questions"],
                "z3_extrapolated": reference["extrapolated"],
                "ours_wall": _median([r["wall"] for r in ours]),
                "ours_cli_cpu": _median([r["cpu"] for r in ours]),
                "ours_rss": max(r["rss_mib"] for r in ours),
                "base_wall": _median([r["wall"] for r in base]),
                "base_cli_cpu": _median([r["cpu"] for r in base]),
                "base_rss": max((r["rss_mib"] for r in base), default=math.nan),
                "same": same,
                "findings": len(_findings(ours[0]["out"])),
                "edit_wall": edit["wall"],
                "edit_cpu": edit["cpu"],
            }
        )
        # Each size as soon as it is measured (a 5,000-rule baseline takes many minutes).
        print(json.dumps({k: v for k, v in rows[-1].items()}), file=sys.stderr, flush=True)
    print(
        f"theories: benchmarks/theory_gen.py, seed {args.seed}, selection {args.selection}, "
        "12 metrics, 30 actions, no catch-all; every figure CPU seconds"
    )
    print("in process: semantic checks of one Analysis (median)")
    print(
        f"{'rules':>6} {'ours':>8} {'released':>9} {'speed-up':>9} {'growth':>7} "
        f"{'plain z3':>9} {'questions':>10}"
    )
    previous: dict[str, Any] | None = None
    for row in rows:
        growth = (
            f"{math.log(row['ours_cpu'] / previous['ours_cpu']) / math.log(row['size'] / previous['size']):.2f}"
            if previous
            else ""
        )
        z3_cpu = f"{row['z3_cpu']:.2f}{'*' if row['z3_extrapolated'] else ''}"
        print(
            f"{row['size']:>6} {row['ours_cpu']:>8.2f} {row['base_cpu']:>9.2f} "
            f"{row['base_cpu'] / row['ours_cpu']:>8.1f}x {growth:>7} {z3_cpu:>9} "
            f"{row['z3_questions']:>10}"
        )
        previous = row
    print(
        "plain z3 = the same questions asked pairwise of z3 (conditions only); "
        "* = extrapolated from the first --z3-budget seconds"
    )
    print("end to end: `pedrag check FILE --format json --no-cache` process (median CPU, peak RSS)")
    print(
        f"{'rules':>6} {'goal':>6} {'front end':>9} {'ours':>7} {'MiB':>5} {'released':>8} "
        f"{'MiB':>5} {'speed-up':>8} {'findings':>8} {'identical':>9} {'edit':>6} {'goal':>5}"
    )
    goals = {5000: "< 5", 20000: "< 30"}
    for row in rows:
        identical = {True: "yes", False: "NO", None: "-"}[row["same"]]
        print(
            f"{row['size']:>6} {goals.get(row['size'], '-'):>6} {row['front_cpu']:>9.2f} "
            f"{row['ours_cli_cpu']:>7.2f} {row['ours_rss']:>5.0f} {row['base_cli_cpu']:>8.2f} "
            f"{row['base_rss']:>5.0f} {row['base_cli_cpu'] / row['ours_cli_cpu']:>7.1f}x "
            f"{row['findings']:>8} {identical:>9} {row['edit_cpu']:>6.2f} "
            f"{'< 0.3' if row['size'] == 5000 else '-':>5}"
        )
    print(
        "front end = `--no-semantic`; released = the previous release's pair search in the same "
        "CLI (nan: not run at that size, --baseline-max); identical = same findings, witnesses "
        "and gap cuts aside; edit = the CLI re-check after narrowing one rule, on-disk cache warm"
    )
    print(f"reports kept in {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
