"""`pedrag diff OLD NEW`: where the chosen action changes between two versions of a theory."""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from typing import Any

from pedrag.commands._options import add_format_option
from pedrag.compiler.diffing import FALLBACK, TIME_BUDGET_S, DiffError, DiffResult, Region, diff
from pedrag.dsl.loader import load_file

NAME = "diff"
ORDER = 20
HELP = "regions of state space where the chosen action changes between two theory versions"
DESCRIPTION = """\
Compare two versions of a theory file and report the regions of the state space where the
action the runtime would choose (its distribution, under weighted selection) differs: each
region a box in the theory's own terms, with its exact share of the state space, the old and
new choice at a witness state, and the rules that stop or start being eligible throughout it.
Rules are matched by id; added, removed, renamed and edited rules are listed first, then
what the runtime does differently with the same choice, which no region can show: actions
added or removed, an action's tags (declared, or derived from its wording), conflicts and
wording, a metric added or removed, its default, writer or history function.
For code review in CI.

A change in the choice probabilities (weighted selection) is a behaviour change: the region
shows each action's probability before and after. The grid is exact (every constant, linear
atoms solved at each value of their small ints) unless an atom couples two reals or wide ints;
then those variables are sliced, the report says "approximate", and "no behaviour change" is
printed only when it is proved.

exit status: 0 (or, with --exit-code, 0 no change, proved / 1 behaviour changed, a change of
what the runtime does with a choice, or a change not ruled out: approximate grid or time budget
run out), 2 usage problem
"""
EPILOG = """\
examples:
  pedrag diff old/socratic.yaml theories/socratic.yaml
  git show HEAD~1:theories/socratic.yaml > /tmp/old.yaml && pedrag diff /tmp/old.yaml theories/socratic.yaml --format json --exit-code
"""

LIMIT = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", metavar="OLD", help="the earlier theory file")
    parser.add_argument("new", metavar="NEW", help="the later theory file")
    add_format_option(parser)
    parser.add_argument(
        "--all",
        action="store_true",
        help=f"list every region (default: the {LIMIT} largest, then the share left)",
    )
    parser.add_argument(
        "--exit-code",
        action="store_true",
        help="exit 1 unless no behaviour change is proved",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=TIME_BUDGET_S,
        metavar="SECONDS",
        help=f"time budget; past it the answer is marked incomplete (default: {TIME_BUDGET_S:g})",
    )


def _percent(share: Fraction) -> str:
    if share and share < Fraction(1, 10**4):
        return f"{float(share):.2e}"
    return f"{float(share):.2%}"


def _choice(outcome: dict[str, Fraction]) -> str:
    ((action, _),) = outcome.items()
    return action


def change_text(old: dict[str, Fraction], new: dict[str, Fraction]) -> str:
    """`a  ->  b` for single choices, else each action whose probability changes."""
    if len(old) == 1 and len(new) == 1:
        return f"{_choice(old)}  ->  {_choice(new)}"
    actions = sorted(
        {a for a in (*old, *new) if old.get(a, 0) != new.get(a, 0)},
        key=lambda a: (-abs(new.get(a, 0) - old.get(a, 0)), a),
    )
    parts = [
        f"{a} {probability_text(old.get(a))} -> {probability_text(new.get(a))}" for a in actions[:4]
    ]
    if len(actions) > 4:
        parts.append(f"(+{len(actions) - 4} more)")
    return ", ".join(parts)


def probability_text(value: Fraction | float | None) -> str:
    """0.5834 as `58.34%`; an exact 0 or 1 as `0%` / `100%`."""
    if not value:
        return "0%"
    return "100%" if value == 1 else f"{float(value):.2%}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _witness_text(region: Region) -> str:
    constrained = [f"{k}={v}" for k, v in region.witness.items() if k in region.box]
    return ", ".join(constrained) + (" (others at their defaults)" if constrained else "")


def _rules_text(result: DiffResult) -> list[str]:
    groups: dict[str, list[str]] = {}
    for change in result.rules:
        if change.kind == "changed":
            groups.setdefault("edited", []).append(f"{change.rule} ({', '.join(change.details)})")
        elif change.kind == "renamed":
            groups.setdefault("renamed", []).append(f"{change.details[0]} -> {change.rule}")
        else:
            groups.setdefault(change.kind, []).append(change.rule)
    lines = []
    for kind in ("edited", "added", "removed", "renamed"):
        items = groups.get(kind)
        if items:
            shown = items if len(items) <= 6 else [*items[:6], f"and {len(items) - 6} more"]
            lines.append(f"rules {kind}: {', '.join(shown)}")
    return lines + result.other_changes + result.runtime


def _outcome_json(outcome: dict[str, Fraction]) -> dict[str, float]:
    return {a: round(float(p), 6) for a, p in sorted(outcome.items())}


def to_json(result: DiffResult, old: str, new: str) -> dict[str, Any]:
    return {
        "old": old,
        "new": new,
        "changed": not result.same_behaviour,
        "choice_changed": not result.unchanged,
        "verdict": result.verdict,
        "changed_share": round(float(result.changed_share), 9),
        "changed_share_exact": str(result.changed_share),
        "complete": result.complete,
        "exact": result.exact,
        "all_regions_listed": result.listed_all,
        "approximate_variables": result.approximate,
        "unlisted_share": round(float(result.unlisted_share), 9),
        "rules": [
            {"kind": c.kind, "rule": c.rule, "details": list(c.details)} for c in result.rules
        ],
        "other_changes": result.other_changes,
        "runtime_changes": result.runtime,
        "regions": [
            {
                "condition": r.condition,
                "share": round(float(r.share), 9),
                "share_exact": str(r.share),
                "old": _outcome_json(r.old),
                "new": _outcome_json(r.new),
                "same_choice_throughout": r.uniform,
                "witness": r.witness,
                "no_longer_eligible": r.no_longer_eligible,
                "newly_eligible": r.newly_eligible,
                "edited_and_eligible": r.edited_eligible,
            }
            for r in result.regions
        ],
        "seconds": round(result.seconds, 3),
    }


def to_text(result: DiffResult) -> str:
    lines = _rules_text(result)
    sliced = ", ".join(result.approximate)
    if not result.changed:
        if result.unchanged and result.runtime:
            verdict = (
                "the same choice, with the same probabilities, in every state; but what the"
                f" runtime does with it changed ({_count(len(result.runtime), 'change')} above:"
                " tags, wording or writers), so replies or later states may differ"
            )
        elif result.unchanged:
            verdict = (
                "no behaviour change: the same choice, with the same probabilities, in every state"
            )
        elif not result.complete:
            verdict = (
                "a behaviour change is not ruled out: none found before the time budget ran out"
                " (incomplete)"
            )
        else:
            verdict = (
                "a behaviour change is not ruled out: none found on an approximate grid"
                f" ({sliced} sliced, being coupled in a linear atom)"
            )
        return "\n".join([*lines, verdict])
    qualifier = (
        ""
        if result.exact
        else f" (approximate: {sliced} sliced)"
        if result.complete
        else " (incomplete)"
    )
    lines.append(
        f"behaviour changes in {_percent(result.changed_share)} of the state space{qualifier}:"
    )
    for number, region in enumerate(result.regions, 1):
        lines.append(f"  {number}. {region.condition}   ({_percent(region.share)})")
        prefix = "" if region.uniform else "e.g. "
        lines.append(f"       {prefix}{change_text(region.old, region.new)}")
        for label, names in (
            ("no longer eligible", region.no_longer_eligible),
            ("newly eligible", region.newly_eligible),
            ("edited, eligible", region.edited_eligible),
        ):
            if names:
                shown = names if len(names) <= 5 else [*names[:5], f"+{len(names) - 5} more"]
                lines.append(f"       {label}: {', '.join(shown)}")
        lines.append(f"       witness: {_witness_text(region) or 'any state'}")
    if not result.listed_all and result.unlisted_share > 0:
        lines.append(
            f"  and more regions covering {_percent(result.unlisted_share)}"
            " of the state space (--all lists every region)"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    theories = []
    for path in (args.old, args.new):
        loaded = load_file(path)
        if loaded.theory is None or not loaded.ok:
            first = next((d for d in loaded.diagnostics), None)
            print(
                f"pedrag diff: {path} does not check cleanly"
                + (f": {first.message}" if first else ""),
                file=sys.stderr,
            )
            return 2
        theories.append(loaded.theory)
    try:
        result = diff(
            theories[0], theories[1], limit=None if args.all else LIMIT, budget_s=args.budget
        )
    except DiffError as exc:
        print(f"pedrag diff: {exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps(to_json(result, args.old, args.new), indent=2))
    else:
        print(to_text(result))
    return 1 if args.exit_code and not result.same_behaviour else 0


__all__ = ["FALLBACK", "add_arguments", "run"]
