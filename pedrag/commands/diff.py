"""`pedrag diff OLD NEW`: where the chosen action changes between two versions of a theory."""

from __future__ import annotations

import argparse
import json
import sys

from pedrag.compiler.diffing import DiffError, diff
from pedrag.dsl.loader import load_file

NAME = "diff"
ORDER = 20
HELP = "regions of state space where the chosen action changes between two theory versions"
DESCRIPTION = """\
Compare two versions of a theory file and report the regions of the state space where the
action the runtime would choose (its distribution, under weighted selection) differs, with
each region's share of the state space. For code review in CI.

exit status: 0 (or, with --exit-code, 0 no change / 1 behaviour changed), 2 usage problem
"""
EPILOG = """\
examples:
  pedrag diff old/socratic.yaml theories/socratic.yaml
  git show HEAD~1:theories/socratic.yaml > /tmp/old.yaml && pedrag diff /tmp/old.yaml theories/socratic.yaml --format json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("old", metavar="OLD", help="the earlier theory file")
    parser.add_argument("new", metavar="NEW", help="the later theory file")
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    parser.add_argument(
        "--exit-code", action="store_true", help="exit 1 when the behaviour changed"
    )


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
        result = diff(theories[0], theories[1])
    except DiffError as exc:
        print(f"pedrag diff: {exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(
            json.dumps(
                {
                    "old": args.old,
                    "new": args.new,
                    "changed_share": round(result.changed_share, 6),
                    "complete": result.complete,
                    "changes": [
                        {
                            "old": c.old,
                            "new": c.new,
                            "share": round(c.share, 6),
                            "examples": [
                                {"share": round(s, 6), "region": r} for s, r in c.examples
                            ],
                        }
                        for c in result.changes
                    ],
                },
                indent=2,
            )
        )
    else:
        if not result.changes:
            print("no behaviour change: the same action is chosen in every state")
        else:
            print(
                f"behaviour changes in {result.changed_share:.3g} of the state space"
                f" ({result.changed_share:.2%}){'' if result.complete else ' (approximate)'}:"
            )
            for change in result.changes:
                print(f"  {change.old}  ->  {change.new}   ({change.share:.2%})")
                for share, region in change.examples:
                    print(f"      e.g. {region}   ({share:.2%})")
    return 1 if args.exit_code and result.changes else 0
