"""`pedrag grade --exercise ID MESSAGE`: what the grader makes of one learner message.

Takes a curriculum (the shipped one by default), an exercise id and a message; gives the
verdict (`correct`, `wrong`, `none`, `error`), the answer the message commits to and why. It
calls the function the tutor calls (`pedrag.runtime.learning.grader.grade_exercise`), so a
designer can test an exercise's `accept:` spellings, `tolerance:` and `units:` before a learner
meets them.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pedrag.commands._options import add_format_option

NAME = "grade"
ORDER = 34
HELP = "grade one learner message against an exercise, as the tutor would (verdict and why)"
DESCRIPTION = """\
Grade one learner message against a curriculum exercise exactly as the tutor grades it:
the verdict (correct, wrong, none: the message commits to no answer, error: code that could
not be run), the answer the message commits to, as the learner wrote it, and the reason.

A message commits to its final stated result ("28 doubled is 56" commits to 56); a negation
("not 56"), a question about the term ("what is a chloroplast?") or a list of candidates
("54, 55 or 56") commits to nothing. See docs/runtime.md, "Grading".

exit status: 0 graded (whatever the verdict), 2 usage problem (no such file or exercise, a
curriculum with errors)
"""
EPILOG = """\
examples:
  pedrag grade --exercise mult_7x8 "28 doubled is 56"
  pedrag grade --curriculum my_course.yaml --exercise capital "canbera" --format json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message", metavar="MESSAGE", help="the learner's message")
    parser.add_argument(
        "--curriculum",
        metavar="FILE",
        help="curriculum file with the exercise (default: the shipped curriculum)",
    )
    parser.add_argument(
        "--exercise", metavar="ID", required=True, help="exercise id from the curriculum"
    )
    parser.add_argument(
        "--intent",
        metavar="LABEL",
        help="the pre-classifier's intent label, if known (a wrong answer under `question`, "
        "`solution_demand`, ... is not graded)",
    )
    add_format_option(parser)


def _exercises(path: str | None) -> list[Any]:
    from pedrag.runtime.policy.theory_set import TheoryLoadError, TheorySet

    if path is None:
        curricula = [c.model for c in TheorySet.shipped().curricula.values()]
    else:
        try:
            curricula = [TheorySet().add_curriculum(path).model]
        except (TheoryLoadError, OSError) as error:
            raise ValueError(str(error)) from error
    return [exercise for curriculum in curricula for exercise in curriculum.exercises]


def report(message: str, exercise: Any, intent: str | None = None) -> dict[str, Any]:
    """The grade of ``message`` on ``exercise`` as plain data (what `--format json` prints)."""
    from pedrag.runtime.learning.grader import grade_exercise

    result = grade_exercise(message, exercise, intent=intent)
    return {
        "exercise": exercise.id,
        "verdict": result.verdict,
        "committed": result.candidate,
        "reason": result.reason,
        "tentative": result.tentative,
        "shows_work": result.work,
        "facts": list(result.facts),
    }


def run(args: argparse.Namespace) -> int:
    try:
        exercises = _exercises(args.curriculum)
    except ValueError as error:
        print(f"pedrag grade: {error}", file=sys.stderr)
        return 2
    found = [e for e in exercises if e.id == args.exercise]
    if not found:
        known = ", ".join(e.id for e in exercises) or "none"
        print(f"pedrag grade: unknown exercise {args.exercise!r} (known: {known})", file=sys.stderr)
        return 2
    data = report(args.message, found[0], args.intent)
    if args.format == "json":
        print(json.dumps(data, indent=2, sort_keys=True))
        return 0
    print(f"verdict:   {data['verdict']}")
    print(f"committed: {data['committed'] if data['committed'] is not None else '(nothing)'}")
    print(f"reason:    {data['reason']}")
    if data["tentative"]:
        print("tentative: yes (an attempt, graded as one)")
    print(f"work:      {'checkable and consistent' if data['shows_work'] else 'none shown'}")
    return 0
