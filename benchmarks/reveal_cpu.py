"""CPU time of the detector per reply at 200, 2,000 and 16,000 characters, against an earlier
detector measured in the same run.

Inputs (built here, no data files): tutoring prose with numbers in it (givens, multiples), for
a numeric answer ("56", with a word spelling and a prompt) and a text answer ("chloroplast"),
at 200, 2,000 and 15,990 characters (just under the 16,000-character reply budget). Every
reply is new to the detector (a unique suffix), so no per-text cache helps; the per-exercise
caches (the answer's generated spellings) are warm, as in a session. For each case: the
median CPU time (``time.process_time``) of one ``Detector.check``.

The earlier detector is the tree at ``--baseline`` (a git ref; default ``93ea572``, the
detector before issue 26), exported with ``git archive`` into a temporary folder and measured
by this same script in a child process; the current one is measured in another child. The
two alternate ``--rounds`` times and the best median of each is kept, so load on the machine
affects both alike. Figures, not assertions: performance is never a timed test.

    python benchmarks/reveal_cpu.py [--baseline REF] [--rounds 3] [--format json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = (200, 2_000, 15_990)
PROSE = (
    "Think about how many groups of eight there are, and what each group adds. "
    "What do you notice when you count by 8s? Try writing the first 3 multiples, like 8, 16 "
    "and 24. Which part of the plant cell would you look at first, and why? "
)


def _suffix(index: int) -> str:
    return " " + "".join(chr(97 + int(digit)) for digit in str(index))


def measure() -> dict[str, float]:
    """Median CPU milliseconds per check, by case, for the detector importable here."""
    from pedrag.runtime.detect.detector import AnswerKey, CodeMode, Detector

    keys = {
        "number": AnswerKey("56", accept=("fifty-six",), prompt="What is 7 times 8?"),
        "text": AnswerKey("chloroplast", prompt="Which organelle carries out photosynthesis?"),
    }
    results = {}
    for name, key in keys.items():
        detector = Detector(CodeMode.STRICT, key)
        detector.check("warm the per-exercise caches: 1 2 3 fifty")
        for size in SIZES:
            text = (PROSE * (size // len(PROSE) + 1))[:size]
            runs = max(5, 40_000 // size)
            times = []
            for index in range(runs):
                reply = text[: size - 8] + _suffix(index)
                started = time.process_time()
                detector.check(reply)
                times.append((time.process_time() - started) * 1000)
            results[f"{name} {size}"] = statistics.median(times)
    return results


def _child(path: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(path)}
    output = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--measure-only"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=path,
    ).stdout
    measured: dict[str, float] = json.loads(output)
    return measured


def _export(ref: str, into: Path) -> None:
    archive = into / "tree.tar"
    with archive.open("wb") as handle:
        subprocess.run(["git", "archive", ref], check=True, stdout=handle, cwd=ROOT)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="fully_trusted")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--baseline", default="93ea572")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure_only:
        print(json.dumps(measure()))
        return 0
    with tempfile.TemporaryDirectory() as folder:
        _export(args.baseline, Path(folder))
        baseline_tree = Path(folder) / "tree"
        current: list[dict[str, float]] = []
        baseline: list[dict[str, float]] = []
        for _ in range(args.rounds):
            current.append(_child(ROOT))
            baseline.append(_child(baseline_tree))
    report = {
        case: {
            "current_ms": round(min(run[case] for run in current), 3),
            "baseline_ms": round(min(run[case] for run in baseline), 3),
        }
        for case in current[0]
    }
    if args.format == "json":
        print(json.dumps({"baseline": args.baseline, "cases": report}, indent=2))
        return 0
    print(f"detector CPU time per reply (median, best of {args.rounds}); baseline {args.baseline}")
    print(f"{'case':<16}{'current ms':>12}{'baseline ms':>13}{'ratio':>8}")
    for case, figures in report.items():
        ratio = figures["current_ms"] / figures["baseline_ms"] if figures["baseline_ms"] else 0.0
        print(
            f"{case:<16}{figures['current_ms']:>12.2f}{figures['baseline_ms']:>13.2f}{ratio:>8.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
