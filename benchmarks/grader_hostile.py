"""CPU time of grading one learner message built to be slow, against an ordinary message of
the same length, in the same run.

A learner chooses every character the grader reads, so its worst case is theirs to pick. A
reader that searches a pattern from every position of a message can be quadratic in it: a
hedge pattern ended the text ("... I mean") and was tried from each of 4,000 characters, 2 s of
CPU for one message of "I mean I mean ..." (fixed: searched near the end only); a run of
", , , ..." cost 0.8 s in the retraction rule before it looked at the message's tail only.

Inputs (built here): each hostile unit repeated up to the message cap that the grader reads
(`answer_reader.MAX_MESSAGE_CHARS`), on one exercise of each kind (number, text, code trace,
code, division with worked steps); the baseline is an ordinary message of the same length (a
learner's working in sentences, with numbers and words, no repetition). For each: CPU seconds
of one `grade_exercise` (``time.process_time``, best of ``--repeat``), and the worst unit's
ratio to the baseline. Figures, not assertions: performance is never a timed test.

    python benchmarks/grader_hostile.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pedrag.runtime.learning.answer_reader import MAX_MESSAGE_CHARS  # noqa: E402
from pedrag.runtime.learning.grader import grade_exercise  # noqa: E402
from pedrag.runtime.store.memory import MemoryStore  # noqa: E402
from pedrag.runtime.turn.tutor import Tutor  # noqa: E402

EXERCISES = ("mult_7x8", "photo_gas_in", "while_countdown", "sum_list_loop", "div_144_8")
UNITS = (
    "I mean ", "no ", ", ", "56 ", "x is 5 ", "the hint says ", "no wait ", "? ", "carbon ",
    "i is 2 then ", "- ", "(", "56? no ", "seven times four is ", "is it ", "- 5\n", "haha ",
    "obviously ", "I'd go with ", "as far as I know ", "I think ", "maybe ", "not sure, ",
    "if I remember rightly ", "or ", "because ", "so ", "I got 5 ", "x = 5\n", ".", "5.",
)  # fmt: skip
ORDINARY = (
    "First I wrote down what the question gives me and what it asks for. Then I tried a "
    "smaller case, {n} and {m}, to see the pattern, and checked it by counting on. After that "
    "I went back to the real numbers, worked each part out on paper, and compared the result "
    "with my estimate, which was close but not the same, so I looked for the step I missed. "
)


def ordinary(length: int) -> str:
    """A learner's working in sentences, no sentence repeated, ``length`` characters."""
    parts, index = [], 0
    while sum(map(len, parts)) < length:
        parts.append(ORDINARY.format(n=index, m=index * 3 + 1))
        index += 1
    return "".join(parts)[:length]


def cpu(message: str, exercise: object, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        grade_exercise(message, exercise)
        best = min(best, time.process_time() - started)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    exercises = {e.id: e for e in Tutor(store=MemoryStore()).curriculum.exercises}
    length = MAX_MESSAGE_CHARS
    print(f"one message of {length:,} characters, CPU seconds (best of {args.repeat})")
    print(f"{'exercise':<16} {'ordinary':>9} {'worst hostile':>14} {'ratio':>7}  worst unit")
    for name in EXERCISES:
        exercise = exercises[name]
        base = cpu(ordinary(length), exercise, args.repeat)
        worst, unit = max(
            (cpu((u * (length // len(u) + 1))[:length], exercise, args.repeat), u) for u in UNITS
        )
        print(f"{name:<16} {base:>9.4f} {worst:>14.4f} {worst / base:>6.1f}x  {unit!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
