"""`pedrag chat`: the supervised tutor in the terminal, or over a script of student messages."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pedrag.commands._options import add_db_option, add_format_option
from pedrag.kernel.errors import PedragError
from pedrag.kernel.rungs import rung_name
from pedrag.kernel.suggest import did_you_mean

NAME = "chat"
ORDER = 30
HELP = "talk to the supervised tutor (offline by default; --model for an endpoint)"
DESCRIPTION = """\
Talk to the supervised tutor. Every turn runs the full pipeline: pre-classifier, context
analyzer, policy core (the help ceiling), rule engine, generator, deterministic detector,
judge on risky turns, monitors and an audit record saved to the session database.

Offline by default (deterministic, no network). With OPENAI_BASE_URL / OPENAI_API_KEY set,
or --model, the tutor calls an OpenAI-compatible endpoint (see docs/llm.md): it is checked
before the first turn (GET /models and a one-token request), and a failed model call is
reported on stderr (the turn itself fails closed to the action's template).
Sessions are saved to $PEDRAG_DB (default ./.pedrag/sessions.db); read one back with
`pedrag audit SESSION`, continue it with `pedrag chat --session SESSION`.

exit status: 0 done, 1 the endpoint failed its health check or every model call failed
(or a saved session is missing), 2 usage problem
"""
EPILOG = """\
examples:
  pedrag chat --exercise mult_7x8 --curriculum theories/curriculum.yaml
  pedrag chat --script messages.txt --exercise mult_7x8 --format json
  pedrag chat --session 3f2a9c1b7d4e --script more.txt
  OPENAI_BASE_URL=http://localhost:8000/v1 pedrag chat --model llama3 --exercise mult_7x8
"""


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--theory",
        help=f"theory id from the shipped set, or a theory file (default: {DEFAULT_THEORY})",
    )
    parser.add_argument(
        "--theories",
        metavar="DIR",
        help="load the theory set from this folder instead of the shipped one",
    )
    parser.add_argument(
        "--curriculum",
        metavar="FILE",
        help="curriculum file with the exercise (default: the shipped curriculum)",
    )
    parser.add_argument(
        "--exercise",
        metavar="ID",
        help="exercise id from the curriculum, or `next`: the learner's next open exercise",
    )
    parser.add_argument(
        "--learner",
        metavar="ID",
        help="learner id: per-goal mastery is read from and kept in the session database, "
        "and goals open only once their prerequisites are mastered",
    )
    parser.add_argument(
        "--seed", type=int, help="seed of the session's rule selection (default: 0)"
    )
    parser.add_argument("--model", help="model name for every role on the configured endpoint")
    parser.add_argument("--offline", action="store_true", help="force the offline backend")
    add_db_option(parser)
    parser.add_argument(
        "--explain-mode",
        action="store_true",
        help="instructor toggle: allow full solutions (never during an exam)",
    )
    add_format_option(parser)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_common_arguments(parser)
    parser.add_argument(
        "--session",
        metavar="ID",
        help="continue a saved session (its theory, exercise and seed) instead of starting one",
    )
    parser.add_argument(
        "--script",
        metavar="FILE",
        help="run non-interactively: one student message per line, a fenced code block "
        "(``` ... ```) one message ('-' for stdin)",
    )


class UsageProblem(PedragError):
    """A problem with the command line: the message is printed, the exit code is 2."""

    exit_code = 2


class SessionMissing(UsageProblem):
    """``--session`` names no saved session (exit code 1, as for ``pedrag audit``)."""

    exit_code = 1


class EndpointDown(UsageProblem):
    """The configured endpoint failed its health check before the first turn (exit code 1)."""

    exit_code = 1


TUTOR_ROLES = ("classifier", "analyzer", "actor", "judge", "selector")


def check_endpoint(backend: Any, roles: Sequence[str] = TUTOR_ROLES) -> None:
    """Stop before the first turn when the endpoint is unreachable or does not serve the
    configured models: the tutor fails closed per turn, so a wrong URL would otherwise show
    only as templated replies. Raises :class:`EndpointDown` naming the URL and the fix."""
    if backend is None or not hasattr(backend, "check"):
        return
    from pedrag.runtime.llm.interface import LLMError

    try:
        backend.check(roles)
    except LLMError as error:
        raise EndpointDown(f"the model endpoint is not usable: {error}") from error


class ModelWatch:
    """Says on stderr when model calls fail during a session — one line as they happen,
    a summary at the end — and gives the exit status: 1 when every model call failed
    (nothing the model said was used; the run measured templates)."""

    def __init__(self, backend: Any, command: str, *, every_turn: bool = True) -> None:
        self.backend = backend if hasattr(backend, "failures") else None
        self.command = command
        self.every_turn = every_turn
        self._seen = 0
        self._warned = False

    def after_turn(self, label: str) -> None:
        if self.backend is None:
            return
        failures = self.backend.failures[self._seen :]
        self._seen += len(failures)
        if not failures or (self._warned and not self.every_turn):
            return
        self._warned = True
        roles = ", ".join(sorted({role for role, _ in failures}))
        first = failures[0][1]
        more = "" if self.every_turn else " (further failures in the summary)"
        print(
            f"pedrag {self.command}: warning: {label}: {len(failures)} model call(s) failed "
            f"({roles}); failed closed. {_first_line(first)}{more}",
            file=sys.stderr,
        )

    def finish(self) -> int:
        if self.backend is None:
            return 0
        failures = list(self.backend.failures)
        if not failures:
            return 0
        succeeded = self.backend.usage.used_calls
        total = succeeded + len(failures)
        by_role: dict[str, int] = {}
        for role, _ in failures:
            by_role[role] = by_role.get(role, 0) + 1
        counts = ", ".join(f"{role} {count}" for role, count in sorted(by_role.items()))
        print(
            f"pedrag {self.command}: {len(failures)} of {total} model calls failed ({counts}) "
            f"at {self.backend.url}; first: {_first_line(failures[0][1])}",
            file=sys.stderr,
        )
        if succeeded == 0:
            print(
                f"pedrag {self.command}: every model call failed: the replies were templates",
                file=sys.stderr,
            )
            return 1
        return 0


def _first_line(text: str, limit: int = 240) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


DEFAULT_THEORY = "socratic"


def unknown(what: str, name: str, known: list[str] | tuple[str, ...]) -> str:
    """ "unknown exercise 'mult_7x9'; did you mean 'mult_7x8'? (known: ...)"."""
    hint = did_you_mean(name, known, quote="repr", lead="; ")
    return f"unknown {what} {name!r}{hint} (known: {', '.join(known) or 'none'})"


def build_tutor(args: argparse.Namespace) -> Any:
    """The tutor the options describe (shared with `pedrag simulate`)."""
    from pedrag.runtime.policy.theory_set import TheoryLoadError, TheorySet
    from pedrag.runtime.store.session_store import SessionStore, StoreError
    from pedrag.runtime.turn.tutor import Tutor

    try:
        if args.theories:
            theories = TheorySet.from_paths([args.theories], strict=False)
        else:
            theories = TheorySet.shipped()
        if args.theory is None:
            args.theory = DEFAULT_THEORY
        theory_path = Path(args.theory)
        if args.theory.endswith((".yaml", ".yml")) or theory_path.is_file():
            extra = TheorySet.from_paths([theory_path])
            theories.theories.update(extra.theories)
            theories.curricula.update(extra.curricula)
            args.theory = next(iter(extra.theories), args.theory)
        if args.theory not in theories:
            raise UsageProblem(unknown("theory", args.theory, theories.ids))
        curriculum = args.curriculum
        if curriculum is not None and not Path(curriculum).is_file():
            raise UsageProblem(f"curriculum file not found: {curriculum}")
    except TheoryLoadError as error:
        raise UsageProblem(str(error)) from error
    backend = _backend(args)
    check_endpoint(backend)
    try:
        store = SessionStore(args.db)
    except (StoreError, OSError) as error:  # a bad --db / $PEDRAG_DB is the caller's to fix
        raise UsageProblem(f"cannot open the session database: {error}") from error
    tutor = Tutor(theories, backend, curriculum, store)
    if args.exercise and tutor.curriculum is None:
        raise UsageProblem("--exercise needs a curriculum: pass --curriculum FILE")
    if (
        args.exercise
        and args.exercise != "next"
        and args.exercise not in (known := exercise_ids(tutor))
    ):
        raise UsageProblem(unknown("exercise", args.exercise, known))
    return tutor


def exercise_ids(tutor: Any) -> list[str]:
    return [item.id for item in tutor.curriculum.exercises] if tutor.curriculum else []


def _backend(args: argparse.Namespace) -> Any:
    if args.offline:
        return None
    from pedrag.runtime.llm.openai_backend import OpenAIBackend, OpenAISettings, backend_from_env

    try:
        if args.model:
            if not (os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_KEY")):
                raise UsageProblem(
                    "--model needs an endpoint: set OPENAI_BASE_URL (and OPENAI_API_KEY if "
                    "required)"
                )
            settings = replace(OpenAISettings.from_env(), default_model=args.model)
            return OpenAIBackend(settings)
        return backend_from_env()
    except ValueError as error:  # an unusable PEDRAG_* setting, named by the message
        raise UsageProblem(str(error)) from error


def start_session(tutor: Any, args: argparse.Namespace, meta: dict[str, Any] | None = None) -> Any:
    if getattr(args, "session", None):
        return resume_session(tutor, args)
    trusted = {"explain_mode": True} if args.explain_mode else None
    seed = args.seed if args.seed is not None else 0
    try:
        return tutor.start(
            theory=args.theory,
            exercise=args.exercise,
            seed=seed,
            trusted=trusted,
            meta=meta,
            learner=getattr(args, "learner", None),
        )
    except KeyError as error:
        raise UsageProblem(str(error.args[0])) from error
    except ValueError as error:  # a locked goal, an exam without a lockdown, a bad learner id
        raise UsageProblem(str(error)) from error


def resume_session(tutor: Any, args: argparse.Namespace) -> Any:
    """The saved session ``--session`` names, with its own theory, exercise and seed."""
    from pedrag.runtime.store.session_store import SessionNotFound

    fixed = [
        option
        for option, given in (
            ("--exercise", args.exercise),
            ("--seed", args.seed is not None),
            ("--explain-mode", args.explain_mode),
        )
        if given
    ]
    if fixed:
        raise UsageProblem(
            f"{', '.join(fixed)} cannot change a saved session; --session continues it as it "
            "was started"
        )
    try:
        return tutor.resume(args.session)
    except SessionNotFound as error:
        raise SessionMissing(f"no session {args.session!r} in {tutor.store.url}") from error
    except KeyError as error:
        raise UsageProblem(str(error.args[0])) from error


def transcript_json(session: Any, results: list[Any]) -> str:
    return json.dumps(
        {
            "session": session.id,
            "theory": session.meta.get("theory"),
            "exercise": session.meta.get("exercise"),
            "backend": session.meta.get("backend"),
            "turns": [result.to_dict() for result in results],
        },
        indent=2,
        ensure_ascii=False,
    )


def print_turn_text(result: Any) -> None:
    flags = []
    if result.fallback:
        flags.append("fallback")
    if result.revised:
        flags.append("revised")
    rung, ceiling = rung_name(result.rung), rung_name(result.ceiling)
    detail = (
        f"[{result.action} {rung} <= ceiling {ceiling}{'; ' + ', '.join(flags) if flags else ''}]"
    )
    print(f"student> {result.student}")
    print(f"tutor>   {result.tutor}")
    print(f"         {detail}")


def run(args: argparse.Namespace) -> int:
    from pedrag.runtime.store.errors import StoreError

    try:
        tutor = build_tutor(args)
        watch = ModelWatch(getattr(tutor.backend, "inner", None), "chat")
        if args.script:
            lines = _read_script(args.script)
            session = start_session(tutor, args)
            if args.format == "json":
                results = []
                for line in lines:
                    results.append(tutor.turn(session, line))
                    watch.after_turn(f"turn {results[-1].turn}")
                print(transcript_json(session, results))
                return watch.finish()
            print(session_line(session), flush=True)
            for line in lines:
                result = tutor.turn(session, line)
                print_turn_text(result)
                sys.stdout.flush()  # a transcript to follow (or pipe) as it is written
                watch.after_turn(f"turn {result.turn}")
            return watch.finish()
        return _interactive(tutor, args, watch)
    except UsageProblem as error:
        print(f"pedrag chat: {error}", file=sys.stderr)
        return error.exit_code
    except StoreError as error:
        # Every turn committed before this one is saved; this one is not.
        print(f"pedrag chat: {error}", file=sys.stderr)
        return 1


def session_line(session: Any) -> str:
    state = session.state
    resumed = f", resumed after turn {state.turn}" if state.turn else ""
    return f"session {session.id} ({state.theory_id}, {session.meta['backend']}{resumed})"


def _read_script(path: str) -> list[str]:
    try:
        raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
        text = raw.decode("utf-8-sig")
    except OSError as error:
        raise UsageProblem(f"cannot read script {path}: {error.strerror}") from error
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise UsageProblem(
            f"script {path} is not UTF-8 text (byte 0x{raw[error.start]:02x} on line {line})"
        ) from error
    return messages(text.splitlines())


FENCE = "```"


def messages(lines: list[str]) -> list[str]:
    """The student messages of a script: one per line, except a fenced code block (a line
    starting with ```, up to the line that closes it), which is one message with its lines and
    their indentation kept. Before, a learner could not hand in a function at all: each of its
    lines went as a message of its own, stripped of its indentation."""
    out: list[str] = []
    block: list[str] | None = None
    for line in lines:
        if block is not None:
            block.append(line.rstrip())
            if line.strip() == FENCE:
                out.append("\n".join(block))
                block = None
        elif line.strip().startswith(FENCE):
            block = [line.strip()]
        elif line.strip():
            out.append(line.strip())
    if block is not None:  # never closed: the block runs to the end of the script
        out.append("\n".join([*block, FENCE]))
    return out


def _read_block(first: str) -> str:
    """A fenced code block typed or pasted at the prompt, to its closing ``` (or Ctrl-D)."""
    block = [first]
    while True:
        try:
            line = input("...> ").rstrip()
        except EOFError:
            line = FENCE
        block.append(line)
        if line.strip() == FENCE:
            return "\n".join(block)


def _interactive(tutor: Any, args: argparse.Namespace, watch: ModelWatch) -> int:
    session = start_session(tutor, args)
    info = session.exercise
    print(f"pedrag tutor: {session_line(session)}")
    if info is not None:
        print(f"exercise: {info.prompt}")
    print(
        "type your message; code goes between ``` lines; an empty line or Ctrl-D ends the session"
    )
    results = []
    while True:
        try:
            line = input("you> ").strip()
        except EOFError:
            print()
            break
        except UnicodeDecodeError:
            print("(that line is not UTF-8 text; please type it again)")
            continue
        if not line:
            break
        if line.startswith(FENCE):
            line = _read_block(line)
        print("tutor> ", end="", flush=True)
        for piece in tutor.stream(session, line):
            print(piece, end="", flush=True)
        print()
        results.append(session.results[-1])
        watch.after_turn(f"turn {results[-1].turn}")
    if args.format == "json":
        print(transcript_json(session, results))
    print(f"session saved: pedrag audit {session.id}")
    return watch.finish()
