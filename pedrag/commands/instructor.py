"""`pedrag instructor`: an instructor's toggles on a stored session, and a learner's exam
sittings and retakes.

It acts on the database directly (``--db``, ``--tenant``), as `pedrag serve`'s key commands do:
whoever runs it holds the database, so it needs no key; over the network, an instructor key
calls the service's routes. Both go through the same store functions
(:meth:`ExamRecords.grant_retake`, :meth:`ExamRecords.exam_sittings`) and the same list of
served exams (:attr:`TheorySet.exams`), so "who may retake" has one implementation.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pedrag.commands._options import add_db_option, add_format_option, add_tenant_option

NAME = "instructor"
ORDER = 33
HELP = (
    "an instructor's toggles on a session (explain mode, exam lockdown, lift a conduct "
    "restriction); a learner's exam sittings and retakes"
)
DESCRIPTION = """\
Change a stored session the way an instructor does through the service's instructor endpoint:
set a trusted toggle the session's theory lets an instructor set (`writer: instructor`, by
default `explain_mode` and `exam_active`), or lift a conduct restriction (which also resets the
count of hostile turns behind it, so it returns only after new hostile turns). The change is
committed with a compare-and-set on the session's turn: it never overwrites a turn taken at the
same time. An exam session's lockdown cannot be switched off; --end-exam ends the exam instead
(the learner's next message gets the one result line, the latest submission as the score).

With --learner ID instead of a session: --exams lists the learner's exam sittings (exam,
sitting number, session, start) and the retakes granted them (who, when, used or not);
--retake EXAM grants one more sitting of an exam the learner has sat, as the service's
POST /v1/learners/{id}/exams/{exam}/retake does (the grant is recorded as by `cli`). A grant
allows exactly the next sitting, once; granting again before it is used is refused. EXAM
must be an exam of the curricula the service serves: pass the same --theories as `pedrag
serve` (the shipped set has no exams).
"""
EPILOG = """\
examples:
  pedrag instructor 3f2a9c1b7d4e --lift-conduct
  pedrag instructor 3f2a9c1b7d4e --set explain_mode=on
  pedrag instructor 3f2a9c1b7d4e --set explain_mode=off --format json
  pedrag instructor --learner ana --exams --db sessions.db --tenant school
  pedrag instructor --learner ana --retake times_exam --theories course/ --tenant school

exit status: 0 done; 1 refused: no such session, learner or served exam, a toggle the theory
does not allow; 3 no retake due (the learner has not sat the exam, or holds a retake not used
yet; nothing written); 2 usage problem (bad option, unreadable theories or database)
"""
_ON = {"on": True, "true": True, "yes": True, "1": True}
_OFF = {"off": False, "false": False, "no": False, "0": False}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "session", nargs="?", help="session id (see `pedrag audit --list`); or give --learner"
    )
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
        action="append",
        metavar="PATH",
        help="load theories and curricula from PATH instead of the shipped set, as `pedrag serve "
        "--theories` does (repeatable; the session's theory, or --retake's exam, must be there)",
    )
    learner = parser.add_argument_group("a learner's exams (instead of a session)")
    learner.add_argument("--learner", metavar="ID", help="the learner (of --tenant) to act on")
    learner.add_argument(
        "--exams", action="store_true", help="list the learner's exam sittings and retakes"
    )
    learner.add_argument(
        "--retake",
        metavar="EXAM",
        help="grant the learner one more sitting of EXAM (an exam they have sat)",
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


def _usage(args: argparse.Namespace) -> str | None:
    """What is wrong with the combination of options given, if anything: a session's changes
    and a learner's exams are two separate actions, each with its own options."""
    for_learner = args.exams or args.retake is not None
    if args.learner is None:
        if for_learner:
            return "--exams and --retake need --learner ID"
        if args.session is None:
            return "give a session id, or --learner ID with --exams or --retake EXAM"
        return None
    if args.session is not None:
        return "give a session id or --learner, not both"
    if args.set or args.lift_conduct or args.end_exam:
        return "--set, --lift-conduct and --end-exam change a session: give its id, not --learner"
    if not for_learner:
        return "with --learner, give --exams (list sittings and retakes) or --retake EXAM"
    return None


def run(args: argparse.Namespace) -> int:
    problem = _usage(args)
    if problem is not None:
        print(f"pedrag instructor: {problem}", file=sys.stderr)
        return 2
    if args.learner is not None:
        return _learner_exams(args)
    return _session_change(args)


def _session_change(args: argparse.Namespace) -> int:
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
            TheorySet.from_paths(args.theories, strict=False)
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


NO_RETAKE_DUE = 3
"""Exit status of a grant refused because no retake is due (the service's 409): a script
granting retakes to a class can tell "already granted" from a mistake."""


def _learner_exams(args: argparse.Namespace) -> int:
    """--exams and --retake: the service's two exam routes, on the database directly."""
    from pedrag.runtime.policy.theory_set import TheoryLoadError, TheorySet
    from pedrag.runtime.store.session_store import (
        LearnerNotFound,
        NoRetakeDue,
        SessionStore,
        StoreError,
    )

    try:
        exams: frozenset[str] = frozenset()
        if args.retake is not None:
            theories = (
                TheorySet.from_paths(args.theories, strict=False)
                if args.theories
                else TheorySet.shipped()
            )
            exams = theories.exams
        store = SessionStore(args.db, tenant=args.tenant)
    except (TheoryLoadError, StoreError, OSError) as error:
        print(f"pedrag instructor: {error}", file=sys.stderr)
        return 2
    out: dict[str, object] = {"learner_id": args.learner}
    with store:
        try:
            if args.retake is not None and args.retake not in exams:
                known = ", ".join(sorted(exams)) or "none"
                hint = (
                    ""
                    if args.theories
                    else "; pass the curricula `pedrag serve` serves with --theories"
                )
                print(
                    f"pedrag instructor: no exam {args.retake!r} in the loaded curricula "
                    f"(exams: {known}){hint}",
                    file=sys.stderr,
                )
                return 1
            store.load_learner(args.learner)
            if args.retake is not None:
                out["retake"] = _retake_dict(store.grant_retake(args.learner, args.retake, "cli"))
            if args.exams:
                sittings, retakes = store.exam_sittings(args.learner)
                out["sittings"] = [
                    {
                        "exam": item.exam_id,
                        "sitting": item.sitting,
                        "session_id": item.session_id,
                        "sat_at": item.sat_at.isoformat(),
                    }
                    for item in sittings
                ]
                out["retakes"] = [_retake_dict(item) for item in retakes]
        except LearnerNotFound:
            print(
                f"pedrag instructor: no learner {args.learner!r} in tenant {args.tenant!r}",
                file=sys.stderr,
            )
            return 1
        except NoRetakeDue as error:
            print(f"pedrag instructor: no retake due: {error}", file=sys.stderr)
            return NO_RETAKE_DUE
        except StoreError as error:
            print(f"pedrag instructor: {error}", file=sys.stderr)
            return 1
    if args.format == "json":
        print(json.dumps(out))
    else:
        print(_exams_text(out))
    return 0


def _retake_dict(item: Any) -> dict[str, object]:
    """A grant as the service's route returns it."""
    return {
        "learner_id": item.learner_id,
        "exam": item.exam_id,
        "sitting": item.sitting,
        "granted_by": item.granted_by,
        "granted_at": item.granted_at.isoformat(),
    }


def _exams_text(out: dict[str, Any]) -> str:
    """One line per grant made, then per sitting and grant; a grant says whether it was used,
    which is what an instructor asks next ("did she sit it again yet?")."""
    lines = []
    learner = out["learner_id"]
    if "retake" in out:
        granted = out["retake"]
        lines.append(
            f"learner {learner} may sit {granted['exam']} once more "
            f"(sitting {granted['sitting']}, granted by {granted['granted_by']} at "
            f"{granted['granted_at']})"
        )
    if "sittings" in out:
        sat = {(item["exam"], item["sitting"]): item for item in out["sittings"]}
        granted_for = {(item["exam"], item["sitting"]): item for item in out["retakes"]}
        lines.append(
            f"learner {learner}: {len(out['sittings'])} exam sitting(s), "
            f"{len(out['retakes'])} retake(s) granted"
        )
        for item in out["sittings"]:
            grant = granted_for.get((item["exam"], item["sitting"]))
            by = f", retake granted by {grant['granted_by']}" if grant else ""
            lines.append(
                f"  {item['exam']}  sitting {item['sitting']}  session {item['session_id']}  "
                f"started {item['sat_at']}{by}"
            )
        for key, grant in granted_for.items():
            if key not in sat:
                lines.append(
                    f"  {grant['exam']}  sitting {grant['sitting']}  not sat yet: retake granted "
                    f"by {grant['granted_by']} at {grant['granted_at']}"
                )
    return "\n".join(lines)
