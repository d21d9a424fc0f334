"""Detector and stream-guard time on long and hostile replies, against a plain regex baseline.

Inputs (built here, no data files): tutoring prose of growing length (1 KB .. the reply budget,
then 1 MB, past it), an 80 KB and a 1 MB run with no spaces (what made the old url-run regex
quadratic), a long run of space-separated hex pairs, and a reply streamed in 7-character chunks
through the tutor's guard (whole-prefix checking). For each: the detector's median time over
``--repeat`` runs and the baseline's — ``re.search`` for the answer's digits as a whole token,
the strongest simple detector (it reads one spelling) — on the same text, and their ratio.
Figures, not assertions: performance is never a timed test.

    python benchmarks/reveal_speed.py [--repeat 5] [--format json]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from collections.abc import Callable

from pedrag.runtime.detect.detector import MAX_REPLY_CHARS, AnswerKey, CodeMode, Detector
from pedrag.runtime.turn.streaming import StreamGuard

KEY = AnswerKey("56", accept=("fifty-six",), prompt="What is 7 times 8?")
PROSE = (
    "Think about how many groups of eight there are, and what each group adds. "
    "What do you notice when you count by eights? Try writing the first few multiples. "
)
BASELINE = re.compile(r"(?<!\d)56(?!\d)")


def prose(size: int) -> str:
    return (PROSE * (size // len(PROSE) + 1))[:size]


def median_ms(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def stream(text: str) -> str:
    guard = StreamGuard(Detector(CodeMode.LENIENT, KEY), whole_prefix=True)
    out = "".join(guard.feed(text[i : i + 7]) for i in range(0, len(text), 7))
    return out + guard.finish()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--format", choices=["text", "json"], default="text")
    args = parser.parse_args()
    detector = Detector(CodeMode.LENIENT, KEY)
    cases: list[tuple[str, str, Callable[[str], object]]] = [
        *((f"prose {size // 1000} KB", prose(size), detector.check) for size in (1_000, 4_000)),
        (f"prose {MAX_REPLY_CHARS // 1000} KB (budget)", prose(MAX_REPLY_CHARS), detector.check),
        ("prose 1 MB (past budget)", prose(1_000_000), detector.check),
        ("no spaces 8 KB", "ab" * 4_000, detector.check),
        ("no spaces 80 KB", "ab" * 40_000, detector.check),
        ("no spaces 1 MB", "ab" * 500_000, detector.check),
        ("hex pairs 12 KB", "ab " * 4_000 + "z", detector.check),
        ("stream 4 KB", prose(4_000), stream),
        ("stream 15 KB", prose(15_000), stream),
        ("stream 48 KB (past budget)", prose(48_000), stream),
    ]
    rows = []
    for label, text, run in cases:
        detector_ms = median_ms(lambda: run(text), args.repeat)  # noqa: B023
        baseline_ms = median_ms(lambda: BASELINE.search(text), args.repeat)  # noqa: B023
        rows.append(
            {
                "input": label,
                "chars": len(text),
                "detector_ms": round(detector_ms, 3),
                "baseline_ms": round(baseline_ms, 3),
                "ratio": round(detector_ms / baseline_ms, 1) if baseline_ms else None,
                "us_per_char": round(detector_ms * 1000 / len(text), 3),
            }
        )
    if args.format == "json":
        print(json.dumps({"repeat": args.repeat, "rows": rows}, indent=2))
        return
    print(f"detector vs re.search baseline (median of {args.repeat}):")
    for row in rows:
        print(
            f"  {row['input']:<28} {row['chars']:>9,} chars  detector {row['detector_ms']:>9.2f} ms"
            f"  baseline {row['baseline_ms']:>7.3f} ms  x{row['ratio']}"
            f"  ({row['us_per_char']} us/char)"
        )


if __name__ == "__main__":
    main()
