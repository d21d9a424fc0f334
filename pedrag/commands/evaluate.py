"""`pedrag evaluate`: tutor configurations x personas x exercises x repetitions -> BHR,
fidelity, post-test mastery, paired statistics, the learner model's sensitivity table, the
rubric's MRBench agreement, gates G1-G4 and the over-help ladder; offline, or against any
OpenAI-compatible endpoint, resumable."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from pedrag.commands._options import add_format_option
from pedrag.commands._output import write_output
from pedrag.commands.chat import TUTOR_ROLES, EndpointDown, ModelWatch, check_endpoint
from pedrag.compiler.cache_folder import RELATIVE
from pedrag.kernel.errors import PedragError
from pedrag.kernel.suggest import did_you_mean

NAME = "evaluate"
ORDER = 40
HELP = "simulate sessions across tutor configurations: BHR, post-test mastery, gates G1-G4"
DESCRIPTION = """\
Run simulated tutoring sessions — tutor configurations x learner personas x exercises x
repetitions (seed 1's grid) — and report the behavioural hallucination rate (BHR), fidelity to
the theory's principles, post-test mastery, critical violations, per-persona and per-topic
tables, comparisons between the arms, seed 2's acceptance gates G1-G4 and the over-help ladder
(every rejection counted by cause).

configurations: baseline (plain helpful prompt, no theory, no supervisor), prompt_only (the
theory's written principles in the prompt, no supervisor), pedrag (pedrag.Tutor, the tutor
users run, through the public API: offline exactly as `pedrag chat` runs it).
personas: earnest-but-stuck, answer-seeker, gate-evader, injector, struggling-sarah,
curious-carlos, anxious-alex.

What is measured, and by whom: the evaluator shares no code with the tutor. It judges each
reply against the theory's written principles (the text the prompt-only arm is given), with
its own answer check, rung reading and distress reading. Each simulated learner has a hidden
knowledge state whose learning rule is a stated assumption (--sensitivity varies each), may
give up, and after the session answers a held-out exercise of the same goal; mastery is that
answer graded by the evaluator's answer check. Every arm ends a session under the same rule:
mastery reached, give-up or the turn limit. The unit of the statistics is one session (paired
comparisons: one learner met by both arms); p-values and 95% bootstrap intervals are given
only when the repetitions are independent (different learner seeds), and the report states n
and the unit. --mrbench FILE adds the rubric's agreement with MRBench's human labels.

Offline by default: no network, about a minute for the default grid; the same --seed gives the same
report. With --endpoint URL (or OPENAI_BASE_URL / OPENAI_API_KEY) the tutors, the learner's
voice and the evaluator call any OpenAI-compatible server: the endpoint is checked first, an
estimate of calls, tokens and cost is printed before the first session, a progress bar shows
the sessions, and every finished session is appended to the --results file, so running the
same command again resumes where it stopped. The offline figures rest on the simulation's
assumptions (docs/evaluation.md): they test the machinery; an endpoint measures a model.

exit status: 0 done, 1 a gate failed for the pedrag configuration (with --gates), the
endpoint failed its health check, or every model call failed, 2 usage problem
"""
EPILOG = """\
examples:
  pedrag evaluate                                  # offline, the default grid
  pedrag evaluate --reps 4 --plot report.png       # figures with 95% intervals
  pedrag evaluate --configs baseline,pedrag --personas answer-seeker,injector --reps 3
  pedrag evaluate --topics arithmetic,python_loops --turns 10 --format json -o report.json
  pedrag evaluate --gates                          # exit 1 when a gate fails (CI)
  pedrag evaluate --deterministic --reps 3         # a replication check: no p-values
  pedrag evaluate --sensitivity --mrbench ../shared/data/mrbench/dev.json --figures
  pedrag evaluate --endpoint http://127.0.0.1:8080/v1 --model gemma-3-270m \\
      --personas answer-seeker,curious-carlos --topics arithmetic --reps 1 --turns 3 \\
      --max-tokens 48 --results smoke.jsonl --plot smoke.png
  pedrag evaluate --endpoint URL --model M --evaluator-model J   # a separate evaluator model
  pedrag evaluate --endpoint URL --model M --estimate   # print the estimate and stop
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
        help="comma-separated topics; per topic, the first exercise with a second one of its "
        "goal for the post-test (default: every topic)",
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
    add_format_option(parser, "stdout")
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
        "--plot",
        metavar="FILE",
        help="write the figures (BHR and post-test mastery per configuration, persona and "
        "topic) as one image; needs matplotlib: pip install 'pedrag[evaluate]'",
    )
    parser.add_argument(
        "--deterministic",
        action="store_true",
        help="reuse one learner seed for every repetition: the repetitions are then copies, "
        "reported as a deterministic replication without p-values",
    )
    parser.add_argument(
        "--no-exam-probe", action="store_true", help="skip the exam sessions (G4 not measured)"
    )
    parser.add_argument(
        "--sensitivity",
        action="store_true",
        help="also run the grid under three settings of each learner-model assumption "
        "(teaches, answer_reception, persistence) and report the sensitivity table "
        "(six more runs of the grid)",
    )
    parser.add_argument(
        "--mrbench",
        metavar="FILE",
        help="MRBench's dev.json (shared/data/mrbench/): report the rubric's precision, recall "
        "and F1 against its human labels",
    )
    parser.add_argument(
        "--figures",
        action="store_true",
        help="print the figures as Markdown tables (what docs/evaluation.md shows) instead of "
        "the full report",
    )
    parser.add_argument("--offline", action="store_true", help="force the offline backend")
    parser.add_argument(
        "--endpoint",
        metavar="URL",
        help="an OpenAI-compatible base URL (e.g. http://127.0.0.1:8080/v1); the key, if the "
        "server needs one, comes from OPENAI_API_KEY (default: OPENAI_BASE_URL)",
    )
    parser.add_argument("--model", help="model name for every role on the endpoint")
    parser.add_argument(
        "--evaluator-model",
        metavar="M",
        help="another model for the evaluator role than the tutor's (seed 1: the evaluator is "
        "a separate model; same as PEDRAG_MODEL_EVALUATOR)",
    )
    parser.add_argument(
        "--student-model",
        metavar="M",
        help="another model for the simulated learner's voice (same as PEDRAG_MODEL_STUDENT)",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help="cap every model reply at N tokens (small for slow local models)",
    )
    parser.add_argument(
        "--results",
        metavar="FILE",
        help="append each finished session to this JSON Lines file and skip the sessions it "
        "already holds, so a rerun resumes (default with an endpoint: a file named after the "
        "grid and the models in $PEDRAG_CACHE_DIR or the platform's cache folder, so the "
        f"same command resumes; offline: none; {RELATIVE})",
    )
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="print the estimate of model calls, tokens and cost, and stop",
    )
    parser.add_argument(
        "--student",
        choices=("auto", "simulated", "llm"),
        default="auto",
        help="the learner's messages: templated from its hidden state, or voiced by the LLM "
        "student role from the same state (default: llm with an endpoint, else simulated)",
    )
    parser.add_argument(
        "--evaluator",
        choices=("auto", "rubric", "llm"),
        default="auto",
        help="turn evaluator: deterministic rubric or the LLM evaluator role (default: llm "
        "with an endpoint, else rubric)",
    )


class UsageProblem(PedragError):
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
    hint = did_you_mean(name, known, quote="repr", lead="; ")
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
    from pedrag.runtime.policy.theory_set import TheoryLoadError, TheorySet

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
        if args.endpoint:
            raise UsageProblem("--offline and --endpoint contradict each other; give one")
        return None
    from pedrag.runtime.llm.openai_backend import OpenAIBackend, OpenAISettings, backend_from_env

    if args.max_tokens is not None and args.max_tokens < 1:
        raise UsageProblem("--max-tokens must be at least 1")
    env = dict(os.environ)
    if args.endpoint:
        env["OPENAI_BASE_URL"] = args.endpoint
    if args.max_tokens is not None:
        env["PEDRAG_MAX_TOKENS"] = str(args.max_tokens)
    for option, role in ((args.evaluator_model, "EVALUATOR"), (args.student_model, "STUDENT")):
        if option:
            env[f"PEDRAG_MODEL_{role}"] = option
    if (args.evaluator_model or args.student_model) and not (
        args.model or args.endpoint or env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_KEY")
    ):
        raise UsageProblem("--evaluator-model / --student-model need an endpoint: give --endpoint")
    if args.model or args.endpoint:
        if not (env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_KEY")):
            raise UsageProblem(
                "--model needs an endpoint: give --endpoint URL or set OPENAI_BASE_URL "
                "(and OPENAI_API_KEY if required)"
            )
        try:
            settings = OpenAISettings.from_env(env)
        except ValueError as error:
            raise UsageProblem(str(error)) from error
        if args.model:
            settings = replace(settings, default_model=args.model)
        return OpenAIBackend(settings)
    try:
        return backend_from_env(env)
    except ValueError as error:  # an unusable PEDRAG_* setting, named by the message
        raise UsageProblem(str(error)) from error


def _grid(args: argparse.Namespace, exercises: dict[str, Any]) -> Any:
    from pedrag.evaluate.configs import CONFIG_NAMES
    from pedrag.evaluate.learners import PERSONA_NAMES
    from pedrag.evaluate.run import (
        Grid,
        default_exercises,
        exercises_for_topics,
        first_by_topic,
    )

    configs = _names(args.configs)
    _check_known("configuration", configs, list(CONFIG_NAMES))
    personas = _names(args.personas) or list(PERSONA_NAMES)
    _check_known("persona", personas, list(PERSONA_NAMES))
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
    from pedrag.evaluate.run import held_out

    untestable = [name for name in chosen if held_out(exercises[name], exercises) is None]
    if untestable:
        print(
            f"pedrag evaluate: warning: {', '.join(untestable)} has no other exercise of its "
            "goal to post-test the learner on, so its sessions measure no mastery (--topics "
            "picks exercises that have one)",
            file=sys.stderr,
        )
    return Grid(
        configs=tuple(configs),
        personas=tuple(personas),
        exercises=tuple(chosen),
        reps=args.reps,
        turns=args.turns,
        seed=args.seed,
        theory=args.theory,
        exam_probe=not args.no_exam_probe,
        stochastic=not args.deterministic,
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
        if args.sensitivity and backend is not None:
            raise UsageProblem(
                "--sensitivity reruns the grid six times offline (the learner model is "
                "simulated); run it without an endpoint (--offline)"
            )
        student_backend, evaluator_backend = _roles(args, backend)
        _check_writable("-o", args.output)
        _check_writable("--plot", args.plot)
    except UsageProblem as error:
        print(f"pedrag evaluate: {error}", file=sys.stderr)
        return 2
    from pedrag.evaluate.estimate import estimate_grid

    if backend is not None or args.estimate:
        estimate = estimate_grid(
            grid,
            theories,
            curriculum,
            student_llm=student_backend is not None,
            evaluator_llm=evaluator_backend is not None,
            prices=getattr(getattr(backend, "settings", None), "prices", None),
            model=_model_name(backend),
            student_max_tokens=args.max_tokens or 120,
            completion_cap=args.max_tokens,
        )
        for line in estimate.lines():
            print(f"pedrag evaluate: {line}", file=sys.stderr)
        if args.estimate:
            return 0
    try:
        check_endpoint(backend, EVALUATE_ROLES)
    except EndpointDown as error:
        print(f"pedrag evaluate: {error}", file=sys.stderr)
        return error.exit_code
    try:
        results = _results(args, grid, backend, student_backend, evaluator_backend)
    except UsageProblem as error:
        print(f"pedrag evaluate: {error}", file=sys.stderr)
        return 2
    watch = ModelWatch(backend, "evaluate", every_turn=False)

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=not sys.stderr.isatty(),
    )
    log_lines = backend is not None and not sys.stderr.isatty()
    with progress:
        task = progress.add_task("sessions", total=None)

        def advance(done: int, total: int, label: str) -> None:
            progress.update(task, completed=done, total=total, description=label)
            if log_lines:  # no terminal for the bar: one line per session instead
                print(f"pedrag evaluate: session {done}/{total}: {label}", file=sys.stderr)
            watch.after_turn(label)

        result = run_grid(
            grid,
            theories,
            curriculum,
            backend=backend,
            student_backend=student_backend,
            evaluator_backend=evaluator_backend,
            progress=advance,
            results=results,
            student_max_tokens=args.max_tokens or 120,
        )
    checked = ["pedrag"] if args.gates else []
    rows: list[Any] = []
    if args.sensitivity:
        from pedrag.evaluate.sensitivity import sensitivity

        rows = sensitivity(grid, theories, curriculum, default_sessions=result.sessions)
    agreement: list[Any] = []
    if args.mrbench:
        from pedrag.evaluate.mrbench import MRBenchError, rubric_agreement

        try:
            agreement = rubric_agreement(args.mrbench)
        except MRBenchError as error:
            print(f"pedrag evaluate: {error}", file=sys.stderr)
            return 2
    report = build_report(
        result,
        transcripts=args.transcripts,
        gate_configs=checked,
        sensitivity=rows,
        agreement=agreement,
    )
    if backend is not None:
        _warn_about_model_failures(result.sessions)
    all_failed = watch.finish()
    if args.output:
        problem = write_output(args.output, (json.dumps(report, indent=2) + "\n").encode("utf-8"))
        if problem:
            print(f"pedrag evaluate: {problem}", file=sys.stderr)
            return 1
    if args.figures:
        from pedrag.evaluate.report import figures_markdown

        print(figures_markdown(report), end="")
    elif args.format == "json":
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


def _default_results(fingerprint: dict[str, Any], grid: Any) -> Path:
    """One file per run: the same grid against the same models lands in the same file."""
    import hashlib

    from pedrag.compiler.check_cache import default_folder

    run = json.dumps({**fingerprint, **grid.to_dict()}, sort_keys=True)
    name = hashlib.sha256(run.encode("utf-8")).hexdigest()[:16]
    return default_folder() / "evaluate" / f"{name}.jsonl"


def _model_name(backend: Any) -> str:
    settings = getattr(backend, "settings", None)
    return str(getattr(settings, "default_model", "")) if settings is not None else ""


def _results(
    args: argparse.Namespace,
    grid: Any,
    backend: Any,
    student_backend: Any,
    evaluator_backend: Any,
) -> Any:
    """The results file sessions are appended to (and resumed from), or ``None``."""
    from pedrag.evaluate.results import ResultsFile, ResultsMismatch

    if args.results is None and backend is None:
        return None
    settings = getattr(backend, "settings", None)
    fingerprint = {
        "seed": grid.seed,
        "turns": grid.turns,
        "theory": grid.theory,
        "stochastic": grid.stochastic,
        "endpoint": getattr(settings, "base_url", None) if settings else None,
        "model": _model_name(backend) or None,
        "evaluator_model": settings.model_for("evaluator") if settings else None,
        "student_model": settings.model_for("student") if settings else None,
        "max_tokens": args.max_tokens,
        "student": "llm" if student_backend is not None else "simulated",
        "evaluator": "llm" if evaluator_backend is not None else "rubric",
    }
    path = args.results or str(_default_results(fingerprint, grid))
    _check_writable("--results", path)
    try:
        results = ResultsFile(path, fingerprint)
    except ResultsMismatch as error:
        raise UsageProblem(str(error)) from error
    saved = len(results.done)
    print(
        f"pedrag evaluate: results are appended to {path}"
        + (f" ({saved} sessions already there are reused)" if saved else "")
        + "; run the same command again to resume",
        file=sys.stderr,
    )
    return results


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
