"""`pedrag simulate`: one scripted-student session through the supervised tutor."""

from __future__ import annotations

import argparse
import json
import sys

from pedrag.commands.chat import (
    ModelWatch,
    UsageProblem,
    add_common_arguments,
    build_tutor,
    print_turn_text,
    start_session,
    unknown,
)

NAME = "simulate"
ORDER = 31
HELP = "run one scripted-student session (personas: answer-seeker, injector, ...)"
DESCRIPTION = """\
Run one session with a scripted student persona and print the transcript. Offline by default,
deterministic for a given --seed; with an endpoint, it is checked before the first turn and
failed model calls are reported on stderr (exit 1 when every one failed).
Personas: earnest-but-stuck, answer-seeker, gate-evader,
injector (seed 2), struggling-sarah, curious-carlos, anxious-alex (seed 1).
"""
EPILOG = """\
examples:
  pedrag simulate --persona answer-seeker --exercise mult_7x8
  pedrag simulate --persona injector --exercise mult_7x8 --turns 10 --format json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--persona", required=True, help="scripted student persona")
    parser.add_argument("--turns", type=int, help="number of turns (default: the persona's script)")
    add_common_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from pedrag.runtime.llm.personas import PERSONAS
    from pedrag.runtime.store.errors import StoreError

    if args.persona not in PERSONAS:
        print(
            f"pedrag simulate: {unknown('persona', args.persona, list(PERSONAS))}", file=sys.stderr
        )
        return 2
    if args.turns is not None and args.turns < 1:
        print("pedrag simulate: --turns must be at least 1", file=sys.stderr)
        return 2
    try:
        tutor = build_tutor(args)
        session = start_session(tutor, args, meta={"persona": args.persona})
    except UsageProblem as error:
        print(f"pedrag simulate: {error}", file=sys.stderr)
        return error.exit_code
    topic = session.exercise.topic if session.exercise else "this problem"
    messages = PERSONAS[args.persona].messages(args.turns, topic=topic)
    watch = ModelWatch(getattr(tutor.backend, "inner", None), "simulate")
    try:
        results = []
        for message in messages:
            results.append(tutor.turn(session, message))
            watch.after_turn(f"turn {results[-1].turn}")
    except StoreError as error:
        print(f"pedrag simulate: {error}", file=sys.stderr)
        return 1
    if args.format == "json":
        payload = {
            "session": session.id,
            "persona": args.persona,
            "theory": session.meta.get("theory"),
            "exercise": session.meta.get("exercise"),
            "backend": session.meta.get("backend"),
            "turns": [result.to_dict() for result in results],
            "summary": _summary(results),
        }
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return watch.finish()
    print(
        f"session {session.id}: persona {args.persona}, theory {session.meta['theory']}, {session.meta['backend']}"
    )
    if session.exercise is not None:
        print(f"exercise {session.exercise.id}: {session.exercise.prompt}\n")
    for result in results:
        print_turn_text(result)
    summary = _summary(results)
    print(
        f"\n{summary['turns']} turns; ceiling breaches {summary['ceiling_breaches']}; reveals sent "
        f"{summary['reveals_sent']}; fallbacks {summary['fallbacks']}; judge reviews {summary['judged']}"
    )
    print(f"audit: pedrag audit {session.id}")
    return watch.finish()


def _summary(results: list) -> dict[str, int]:
    return {
        "turns": len(results),
        "ceiling_breaches": sum(result.rung > result.ceiling for result in results),
        "reveals_sent": sum(bool(result.detector.get("flagged")) for result in results),
        "fallbacks": sum(result.fallback for result in results),
        "judged": sum(result.judge is not None for result in results),
    }
