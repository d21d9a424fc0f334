"""How fast `pedrag diff` answers realistic edits of the shipped socratic theory.

Makes three edits of `theories/socratic.yaml` (22 metrics, 41 actions, 58 rules, weighted
selection) programmatically and times the diff of each against the original:

- threshold: the `frustration < 0.8` that 41 rules share becomes `frustration < 0.75`;
- action:    `curious_prediction` chooses `analogy` instead of `request_prediction`;
- add:       a new rule `bored_switch` (bored, low engagement -> switch_representation).

Per edit: seconds (best of `--repeat`; each run builds the diff from scratch, except that
interned formulas persist in the process), the exact changed share, the number of regions
listed (the 10 largest, as `pedrag diff` prints by default) and whether the answer is exact.
`--all` also times listing every region. `--priority` runs the same edits with the theory
switched to priority selection. `--baseline` also times the method this replaced (a
whole-space split that decided every rule at every leaf, 20 s budget), loaded from the git
commit that last had it, in the same run.

    python benchmarks/diff_speed.py
    python benchmarks/diff_speed.py --baseline --all
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

from pedrag.compiler.diffing import diff
from pedrag.dsl.ir import ResolvedTheory
from pedrag.dsl.loader import load_text

ROOT = Path(__file__).resolve().parents[1]
SOCRATIC = ROOT / "theories" / "socratic.yaml"
BASELINE_COMMIT = "8747d33"  # the last commit with the whole-space diff

NEW_RULE = """\
  - id: bored_switch
    when: "affect == bored and engagement < 0.4 and frustration < 0.8"
    then: switch_representation
    weight: 2

"""


def edits(text: str) -> dict[str, str]:
    out = {
        "threshold": text.replace("frustration < 0.8", "frustration < 0.75"),
        "action": text.replace(
            "then: request_prediction\n    source: graesser_2005",
            "then: analogy\n    source: graesser_2005",
        ),
        "add": text.replace("\nceiling:\n", "\n" + NEW_RULE + "ceiling:\n", 1),
    }
    for name, edited in out.items():
        if edited == text:
            sys.exit(f"edit {name!r} no longer applies to {SOCRATIC}")
    return out


def load(text: str) -> ResolvedTheory:
    loaded = load_text(text, "socratic.yaml")
    assert loaded.ok and loaded.theory is not None, [d.message for d in loaded.diagnostics]
    return loaded.theory


def baseline_module() -> types.ModuleType | None:
    try:
        source = subprocess.run(
            ["git", "show", f"{BASELINE_COMMIT}:compiler/diffing.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"(no baseline: {exc})")
        return None
    module = types.ModuleType("baseline_diffing")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, "baseline_diffing.py", "exec"), module.__dict__)
    return module


def timed(function: Any, repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--all", action="store_true", help="also time listing every region")
    parser.add_argument("--priority", action="store_true", help="priority selection instead")
    parser.add_argument("--baseline", action="store_true", help="also time the old method")
    args = parser.parse_args()

    text = SOCRATIC.read_text()
    if args.priority:
        text = text.replace("selection: weighted", "selection: priority")
    old = load(text)
    baseline = baseline_module() if args.baseline else None
    print(
        f"socratic: {len(old.metrics)} metrics, {len(old.actions)} actions, {len(old.rules)} rules, {old.selection} selection"
    )
    header = f"{'edit':<10} {'seconds':>8} {'changed':>9} {'regions':>8} {'exact':>6}"
    if args.all:
        header += f" {'--all s':>8} {'all':>5}"
    if baseline:
        header += f" {'old s':>7} {'old exact':>9} {'speed-up':>9}"
    print(header)
    for name, edited in edits(text).items():
        new = load(edited)
        seconds, result = timed(lambda new=new: diff(old, new, limit=10), args.repeat)
        line = (
            f"{name:<10} {seconds:>8.3f} {float(result.changed_share):>9.4%}"
            f" {len(result.regions):>8} {str(result.exact):>6}"
        )
        if args.all:
            all_seconds, everything = timed(lambda new=new: diff(old, new), 1)
            line += f" {all_seconds:>8.2f} {len(everything.regions):>5}"
        if baseline:
            old_seconds, old_result = timed(lambda new=new: baseline.diff(old, new), 1)
            line += (
                f" {old_seconds:>7.2f} {str(old_result.complete):>9} {old_seconds / seconds:>8.0f}x"
            )
        print(line)


if __name__ == "__main__":
    main()
