"""`pedrag instructor SESSION`: an instructor's toggles on a stored session."""

from __future__ import annotations

import argparse
import json
import sys

from pedrag.commands._options import add_db_option, add_format_option, add_tenant_option

NAME = "instructor"
ORDER = 33
HELP = (
    "an instructor's toggles on a session: explain mode, exam lockdown, lift a conduct restriction"
)
DESCRIPTION = """\
Change a stored session the way an instructor does through the service's instructor endpoint:
set a trusted toggle the session's theory lets an instructor set (`writer: instructor`, by
default `explain_mode` and `exam_active`), or lift a conduct restriction (which also resets the
count of hostile turns behind it, so it returns only after new hostile turns). The change is
committed with a compare-and-set on the session's turn: it never overwrites a turn taken at the
same time. An exam session's lockdown cannot be switched off; --end-exam ends the exam instead
(the learner's next message gets the one result line, the latest submission as the score).
"""
EPILOG = """\
examples:
  pedrag instructor 3f2a9c1b7d4e --lift-conduct
  pedrag instructor 3f2a9c1b7d4e --set explain_mode=on
  pedrag instructor 3f2a9c1b7d4e --set explain_mode=off --format json
"""
_ON = {"on": True, "true": True, "yes": True, "1": True}
_OFF = {"off": False, "false": False, "no": False, "0": False}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", help="session id (see `pedrag audit --list`)")
    parser.add_argument(
        "--lift-conduct", action="store_true", help="lift the session's conduct restriction"
    )
    parser.add_argument(
        "--end-exam",
        action="store_true",
        help="end the session's exam: the learner's next message gets the result, the latest "
        "submission as the score",
    )
    parser.add_argument(
        "--set",
        metavar="NAME=on|off",
        action="append",
        default=[],
        help="set an instructor toggle of the session's theory (repeatable)",
    )
    parser.add_argument(
        "--theories",
        metavar="DIR",
        help="load theories from DIR instead of the shipped set (the session's theory must be there)",
    )
    add_tenant_option(parser)
    add_db_option(parser)
    add_format_option(parser)


def _toggles(items: list[str]) -> dict[str, bool]:
    out: dict[str, bool] = {}
    for item in items:
        name, sep, value = item.partition("=")
        flag = {**_ON, **_OFF}.get(value.strip().lower()) if sep else None
        if not name.strip() or flag is None:
            raise ValueError(f"--set takes NAME=on or NAME=off, not {item!r}")
        out[name.strip()] = flag
    return out


def run(args: argparse.Namespace) -> int:
    from pedrag.runtime.policy.theory_set import TheoryLoadError, TheorySet
    from pedrag.runtime.store.session_store import SessionNotFound, SessionStore, StoreError
    from pedrag.runtime.turn.instructor import InstructorChange, InstructorError, apply_change
    from pedrag.runtime.turn.tutor import Tutor

    try:
        toggles = _toggles(args.set)
    except ValueError as error:
        print(f"pedrag instructor: {error}", file=sys.stderr)
        return 2
    if not toggles and not args.lift_conduct and not args.end_exam:
        print(
            "pedrag instructor: nothing to change: give --lift-conduct, --end-exam or "
            "--set NAME=on|off",
            file=sys.stderr,
        )
        return 2
    try:
        theories = (
            TheorySet.from_paths([args.theories], strict=False)
            if args.theories
            else TheorySet.shipped()
        )
        store = SessionStore(args.db, tenant=args.tenant)
    except (TheoryLoadError, StoreError, OSError) as error:
        print(f"pedrag instructor: {error}", file=sys.stderr)
        return 2
    with store:
        tutor = Tutor(theories, store=store)
        try:
            session = apply_change(
                tutor, args.session, InstructorChange(toggles, args.lift_conduct, args.end_exam)
            )
        except SessionNotFound:
            print(
                f"pedrag instructor: no session {args.session!r} in the database", file=sys.stderr
            )
            return 1
        except (InstructorError, KeyError, StoreError) as error:
            message = error.args[0] if isinstance(error, KeyError) and error.args else error
            print(f"pedrag instructor: {message}", file=sys.stderr)
            return 1
    trusted = {
        name: session.state.metrics[name]
        for name in (*toggles, *(["conduct_restricted"] if args.lift_conduct else []))
        if name in session.state.metrics
    }
    if args.format == "json":
        print(
            json.dumps(
                {
                    "session": session.id,
                    "theory": session.state.theory_id,
                    "trusted": trusted,
                    "exam_ending": args.end_exam,
                }
            )
        )
    else:
        changes = ", ".join(
            [f"{name} = {'on' if value else 'off'}" for name, value in trusted.items()]
            + (["the exam ends at the learner's next message"] if args.end_exam else [])
        )
        print(f"session {session.id} ({session.state.theory_id}): {changes}")
    return 0
