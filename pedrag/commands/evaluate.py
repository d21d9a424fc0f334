"""`pedrag evaluate`: tutor configurations x personas x exercises x repetitions -> BHR,
fidelity, mastery, significance, gates G1-G4 and the over-help ladder."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from pedrag.commands._output import write_output
from pedrag.commands.chat import TUTOR_ROLES, EndpointDown, ModelWatch, check_endpoint

NAME = "evaluate"
ORDER = 40
HELP = "simulate sessions across tutor configurations: BHR, fidelity, mastery, gates G1-G4"
DESCRIPTION = """\
Run simulated tutoring sessions — tutor configurations x student personas x exercises x
repetitions — and report the behavioural hallucination rate (BHR), fidelity to the theory's
principles, mastery rate, critical violations, per-persona and per-topic tables,
simulation-level significance tests, seed 2's acceptance gates G1-G4 and the over-help
ladder (every rejection counted by cause).

configurations: baseline (plain helpful prompt, no theory, no supervisor), prompt_only (the
theory in the prompt, no supervisor), pedrag (the full supervised runtime).
personas: earnest-but-stuck, answer-seeker, gate-evader, injector, struggling-sarah,
curious-carlos, anxious-alex.

Offline by default: deterministic, no network, a few seconds for the default grid; the same
--seed gives the same report. With OPENAI_BASE_URL / OPENAI_API_KEY set (or --model) the
tutors, the student and the evaluator call the endpoint (see docs/evaluation.md).

The endpoint is checked before the first session (GET /models and a one-token request).

exit status: 0 done, 1 a gate failed for the pedrag configuration (with --gates), the
endpoint failed its health check, or every model call failed, 2 usage problem
"""
EPILOG = """\
examples:
  pedrag evaluate
  pedrag evaluate --configs baseline,pedrag --personas answer-seeker,injector --reps 3
  pedrag evaluate --topics arithmetic,python_loops --turns 10 --format json -o report.json
  pedrag evaluate --gates            # exit 1 when a gate fails (CI)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--configs",
        default="baseline,prompt_only,pedrag",
        help="comma-separated configurations (default: baseline,prompt_only,pedrag)",
    )
    parser.add_argument("--personas", help="comma-separated personas (default: all seven)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--exercises", help="comma-separated exercise ids from the curriculum")
    which.add_argument(
        "--topics",
        help="comma-separated topics; the first exercise of each (default: every topic)",
    )
    parser.add_argument("--reps", type=int, default=2, help="repetitions per cell (default: 2)")
    parser.add_argument(
        "--turns", type=int, default=20, help="turn limit per session (default: 20)"
    )
    parser.add_argument("--seed", type=int, default=0, help="grid seed (default: 0)")
    parser.add_argument(
        "--theory", default="socratic", help="theory the tutors follow (default: socratic)"
    )
    parser.add_argument("--theories", metavar="DIR", help="load the theory set from this folder")
    parser.add_argument("--curriculum", metavar="FILE", help="curriculum file (default: shipped)")
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="stdout format (default: text)"
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="also write the JSON report here")
    parser.add_argument(
        "--gates",
        action="store_true",
        help="exit 1 when a gate (G1-G4) fails or was not measured for the pedrag configuration",
    )
    parser.add_argument(
        "--transcripts", action="store_true", help="include every turn in the JSON report"
    )
    parser.add_argument(
        "--plot", metavar="FILE", help="write a bar chart (needs matplotlib, not a dependency)"
    )
    parser.add_argument(
        "--no-exam-probe", action="store_true", help="skip the exam sessions (G4 not measured)"
    )
    parser.add_argument("--offline", action="store_true", help="force the offline backend")
    parser.add_argument("--model", help="model name for every role on the configured endpoint")
    parser.add_argument(
        "--student",
        choices=("auto", "scripted", "llm"),
        default="auto",
        help="simulated student: scripted personas or the LLM student role (default: llm "
        "with an endpoint, else scripted)",
    )
    parser.add_argument(
        "--evaluator",
        choices=("auto", "rubric", "llm"),
        default="auto",
        help="turn evaluator: deterministic rubric or the LLM evaluator role (default: llm "
        "with an endpoint, else rubric)",
    )


class UsageProblem(Exception):
    pass


EVALUATE_ROLES = (*TUTOR_ROLES, "student", "evaluator")


def _names(raw: str | None) -> list[str]:
    return [item.strip() for item in (raw or "").split(",") if item.strip()]


def _check_known(kind: str, names: list[str], known: list[str]) -> None:
    """A usage problem naming the first unknown name, with the closest known one."""
    unknown = [name for name in names if name not in known]
    if not unknown and names:
        return
    name = unknown[0] if unknown else "(none)"
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise UsageProblem(f"unknown {kind} {name!r}{hint} (known: {', '.join(known)})")


def _check_writable(option: str, raw: str | None) -> None:
    """Refuse an output path that cannot be written before the grid runs, not after."""
    if not raw:
        return
    path = Path(raw)
    if path.is_dir():
        raise UsageProblem(f"{option} {raw} is a folder; give the file to write")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise UsageProblem(f"{option} {raw}: {folder} is not a folder")


def _load(args: argparse.Namespace) -> tuple[Any, Any]:
    from pedrag.runtime.theory_set import TheoryLoadError, TheorySet

    try:
        if args.theories:
            theories = TheorySet.from_paths([args.theories], strict=False)
        else:
            theories = TheorySet.shipped()
        if args.curriculum:
            if not Path(args.curriculum).is_file():
                raise UsageProblem(f"curriculum file not found: {args.curriculum}")
            curriculum = theories.add_curriculum(args.curriculum).model
        elif theories.curricula:
            curriculum = next(iter(theories.curricula.values())).model
        else:
            raise UsageProblem("no curriculum found: pass --curriculum FILE")
    except TheoryLoadError as error:
        raise UsageProblem(str(error)) from error
    if args.theory not in theories:
        raise UsageProblem(f"unknown theory {args.theory!r} (loaded: {', '.join(theories.ids)})")
    return theories, curriculum


def _backend(args: argparse.Namespace) -> Any:
    if args.offline:
        return None
    from pedrag.runtime.llm_openai import OpenAIBackend, OpenAISettings, backend_from_env

    if args.model:
        if not (os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_KEY")):
            raise UsageProblem(
                "--model needs an endpoint: set OPENAI_BASE_URL (and OPENAI_API_KEY if required)"
            )
        try:
            return OpenAIBackend(replace(OpenAISettings.from_env(), default_model=args.model))
        except ValueError as error:
            raise UsageProblem(str(error)) from error
    try:
        return backend_from_env()
    except ValueError as error:  # an unusable PEDRAG_* setting, named by the message
        raise UsageProblem(str(error)) from error


def _grid(args: argparse.Namespace, exercises: dict[str, Any]) -> Any:
    from pedrag.evaluate.configs import CONFIG_NAMES
    from pedrag.evaluate.run import (
        Grid,
        default_exercises,
        exercises_for_topics,
        first_by_topic,
    )
    from pedrag.runtime.personas import PERSONAS

    configs = _names(args.configs)
    _check_known("configuration", configs, list(CONFIG_NAMES))
    personas = _names(args.personas) or list(PERSONAS)
    _check_known("persona", personas, list(PERSONAS))
    if args.exercises:
        chosen = _names(args.exercises)
        _check_known("exercise", chosen, list(exercises))
    elif args.topics:
        topics = _names(args.topics)
        _check_known("topic", topics, list(first_by_topic(exercises)))
        chosen = list(exercises_for_topics(exercises, topics))
    else:
        chosen = list(default_exercises(exercises))
    if args.reps < 1 or args.turns < 1:
        raise UsageProblem("--reps and --turns must be at least 1")
    if args.gates and "pedrag" not in configs:
        raise UsageProblem("--gates checks the pedrag configuration: add it to --configs")
    return Grid(
        configs=tuple(configs),
        personas=tuple(personas),
        exercises=tuple(chosen),
        reps=args.reps,
        turns=args.turns,
        seed=args.seed,
        theory=args.theory,
        exam_probe=not args.no_exam_probe,
    )


def _roles(args: argparse.Namespace, backend: Any) -> tuple[Any, Any]:
    if backend is None and "llm" in (args.student, args.evaluator):
        raise UsageProblem(
            "--student llm / --evaluator llm need an endpoint: set OPENAI_BASE_URL or use --model"
        )
    student = backend if args.student == "llm" or (args.student == "auto" and backend) else None
    evaluator = (
        backend if args.evaluator == "llm" or (args.evaluator == "auto" and backend) else None
    )
    return student, evaluator


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from pedrag.evaluate import gates as gates_module
    from pedrag.evaluate.records import ExerciseCase
    from pedrag.evaluate.report import build_report, render_text, write_plot
    from pedrag.evaluate.run import run_grid

    try:
        theories, curriculum = _load(args)
        grid = _grid(args, ExerciseCase.from_curriculum(curriculum))
        backend = _backend(args)
        student_backend, evaluator_backend = _roles(args, backend)
        _check_writable("-o", args.output)
        _check_writable("--plot", args.plot)
    except UsageProblem as error:
        print(f"pedrag evaluate: {error}", file=sys.stderr)
        return 2
    try:
        check_endpoint(backend, EVALUATE_ROLES)
    except EndpointDown as error:
        print(f"pedrag evaluate: {error}", file=sys.stderr)
        return error.exit_code
    watch = ModelWatch(backend, "evaluate", every_turn=False)

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=not sys.stderr.isatty(),
    )
    with progress:
        task = progress.add_task("sessions", total=None)

        def advance(done: int, total: int, label: str) -> None:
            progress.update(task, completed=done, total=total, description=label)
            watch.after_turn(label)

        result = run_grid(
            grid,
            theories,
            curriculum,
            backend=backend,
            student_backend=student_backend,
            evaluator_backend=evaluator_backend,
            progress=advance,
        )
    checked = ["pedrag"] if args.gates else []
    report = build_report(result, transcripts=args.transcripts, gate_configs=checked)
    if backend is not None:
        _warn_about_model_failures(result.sessions)
    all_failed = watch.finish()
    if args.output:
        problem = write_output(args.output, (json.dumps(report, indent=2) + "\n").encode("utf-8"))
        if problem:
            print(f"pedrag evaluate: {problem}", file=sys.stderr)
            return 1
    if args.format == "json":
        print(json.dumps(report, indent=2))
    else:
        render_text(report, Console(highlight=False, width=max(120, Console().width)))
    if args.plot:
        Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
        problem = write_plot(report, args.plot)
        if problem:
            print(f"pedrag evaluate: {problem}", file=sys.stderr)
    if args.gates:
        results = gates_module.evaluate_gates(result.sessions, "pedrag", result.exercises)
        if not gates_module.gates_pass(results):
            failed = ", ".join(f"{g.id} {g.status}" for g in results if not g.passed)
            print(f"pedrag evaluate: gates failed for pedrag: {failed}", file=sys.stderr)
            return 1
    return all_failed


def _warn_about_model_failures(sessions: Any) -> None:
    """Say on stderr when the endpoint failed: the runtime fails closed, so a wrong key or
    URL would otherwise show only as unevaluated turns and fallback replies."""
    turns = [turn for session in sessions for turn in session.turns]
    failures = {
        "the evaluator": [t.unevaluated_reason for t in turns if t.unevaluated_reason],
        "the student": [t.student_failure for t in turns if t.student_failure],
        "the tutor": [t.tutor.failures[0] for t in turns if t.tutor.failures],
    }
    for who, reasons in failures.items():
        if reasons:
            print(
                f"pedrag evaluate: warning: {who} model failed on {len(reasons)} of "
                f"{len(turns)} turns; first: {reasons[0]}",
                file=sys.stderr,
            )
