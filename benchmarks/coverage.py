"""The exact coverage measure and the gap search, against the formula expansion they replaced.

On generated theories (`benchmarks/theory_gen.py`: no catch-all, so coverage is a real
question), per size:

- coverage: `Measure.exact_share` of "some rule is eligible" through its box form
  (`compiler/box_measure.py`), against the Shannon expansion over formulas that computed it
  before (`Measure._exact`, still the path for linear atoms), in the same run; both answers
  are exact rationals and must be equal;
- gaps: `gap_regions` with the box form, against the same search with the box form switched
  off (the first uncovered cell found by substituting into formulas, z3 for the rest); the
  regions are equal wherever the formula search found the first uncovered state within its
  budget; where it handed over to z3, z3's model starts the region instead, so those regions
  may differ (the box form has no budget: its regions are always the first cells').

The baseline is skipped at a size once one of its runs takes longer than `--budget` seconds
(it grows steeply: a 200-rule theory's coverage took 41 s before).

    python benchmarks/coverage.py
    python benchmarks/coverage.py --sizes 50 200 --seeds 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from theory_gen import generate  # noqa: E402

from pedrag.compiler import regions  # noqa: E402
from pedrag.compiler.analysis import Analysis  # noqa: E402
from pedrag.compiler.measure import Measure  # noqa: E402
from pedrag.dsl.loader import load_text  # noqa: E402


def _analysis(rules: int, seed: int) -> Analysis:
    loaded = load_text(generate(rules, seed, "weighted"), f"gen_{rules}_{seed}.yaml")
    assert loaded.theory is not None
    return Analysis(loaded.theory)


def _timed(fn, *args):  # type: ignore[no-untyped-def]
    started = time.process_time()
    value = fn(*args)
    return value, time.process_time() - started


def _boxes_share(analysis: Analysis):  # type: ignore[no-untyped-def]
    return Measure(analysis.domains, [analysis.any_eligible]).exact_share(analysis.any_eligible)


def _expanded_share(analysis: Analysis):  # type: ignore[no-untyped-def]
    return Measure(analysis.domains, [analysis.any_eligible])._exact(analysis.any_eligible)


def _ratio(base: list[float], ours: list[float]) -> str:
    if not base:
        return "      -"
    return f"{statistics.median(base) / max(statistics.median(ours), 1e-9):6.0f}x"


def _regions(analysis: Analysis, boxes: bool) -> list[tuple[str, float, dict]]:  # type: ignore[type-arg]
    saved = regions.cell_boxes
    if not boxes:
        regions.cell_boxes = lambda *args: None  # type: ignore[assignment]
    try:
        found = regions.gap_regions(analysis)
    finally:
        regions.cell_boxes = saved
    return [(r.condition, r.share, r.witness) for r in found]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[12, 50, 200, 500, 5000])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=60.0, help="baseline seconds per run")
    args = parser.parse_args(argv)
    print("CPU seconds, median over seeds; baseline = the formula expansion / formula search")
    print(
        f"{'rules':>6} {'coverage':>9} {'boxes':>8} {'baseline':>9} {'ratio':>7} "
        f"{'gaps':>5} {'boxes':>8} {'baseline':>9} {'ratio':>7} share regions"
    )
    for size in args.sizes:
        ours_cov, base_cov, ours_gap, base_gap, shares, counts = [], [], [], [], [], []
        same_share, same_regions = True, 0
        baseline = True
        for seed in range(args.seeds):
            analysis = _analysis(size, seed)
            share, took = _timed(_boxes_share, analysis)
            ours_cov.append(took)
            shares.append(float(share[0]))
            found, took = _timed(_regions, analysis, True)
            ours_gap.append(took)
            counts.append(len(found))
            if baseline:
                fresh = _analysis(size, seed)
                expected, took = _timed(_expanded_share, fresh)
                base_cov.append(took)
                searched, took_gap = _timed(_regions, fresh, False)
                base_gap.append(took_gap)
                same_share = same_share and expected == share
                same_regions += searched == found
                baseline = max(took, took_gap) <= args.budget
        med = statistics.median
        print(
            f"{size:>6} {med(shares):>9.4f} {med(ours_cov):>8.4f} "
            f"{(f'{med(base_cov):.3f}' if base_cov else '-'):>9} {_ratio(base_cov, ours_cov)} "
            f"{med(counts):>5.0f} {med(ours_gap):>8.4f} "
            f"{(f'{med(base_gap):.3f}' if base_gap else '-'):>9} {_ratio(base_gap, ours_gap)} "
            f"{('yes' if same_share else 'NO') if base_cov else '-':>5} "
            f"{f'{same_regions}/{len(base_gap)}' if base_gap else '-':>7}"
            + ("" if len(base_cov) == args.seeds else f" (baseline on {len(base_cov)} seeds)")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
