"""`pedrag extract CORPUS... -o theories/NAME.yaml --theory-id NAME`: corpus -> theory file."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pedrag.commands.chat import EndpointDown, ModelWatch, check_endpoint
from pedrag.extract.merge import DEFAULT_MERGE_THRESHOLD
from pedrag.extract.pipeline import (
    ExtractionError,
    ExtractionResult,
    ExtractionUsageError,
    ExtractOptions,
    extract,
)
from pedrag.runtime.llm.openai_backend import backend_from_env

if TYPE_CHECKING:
    from rich.progress import TaskID

NAME = "extract"
ORDER = 40
HELP = "extract a theory file from a pedagogical corpus (PDF/TXT/Markdown) with an LLM"
DESCRIPTION = """\
Extract a theory file from a pedagogical corpus with an LLM (seed 1, Layer 1).

The corpus (PDF, TXT or Markdown files, or folders of them) is read with its page numbers
and cut into token chunks; the model answers each chunk with a fragment in the theory
format; fragments are merged (same-name metrics reconciled, near-duplicate actions united,
duplicate rules dropped), keeping which passage each item came from; then the compiler's
checks run and their findings go back to the model for repair, up to --rounds times. The
file is written either way, with a header comment saying what remains.

Needs an OpenAI-compatible endpoint: OPENAI_BASE_URL (and OPENAI_API_KEY if it wants one);
the model is PEDRAG_MODEL_EXTRACTOR or PEDRAG_MODEL. Answers are cached per chunk under
--cache-dir, so rerunning after a failure resumes where it stopped.

exit status: 0 written and checks clean, 1 written with errors remaining (or the endpoint
failed: nothing written), 2 usage problem (no endpoint, bad option, a corpus file that is
missing, unreadable or holds no text, an output path that cannot be written)
"""
EPILOG = """\
examples:
  pedrag extract texts/meno.pdf texts/republic.txt -o theories/socratic_meno.yaml --theory-id socratic_meno
  pedrag extract corpus/ -o theories/x.yaml --theory-id x --chunk-tokens 2000 --rounds 5
"""

_IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]*$")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "corpus", nargs="+", metavar="CORPUS", help="PDF/TXT/Markdown files or folders"
    )
    parser.add_argument("-o", "--output", required=True, type=Path, help="theory file to write")
    parser.add_argument("--theory-id", required=True, help="the theory's id (lower_snake_case)")
    parser.add_argument("--theory-name", help="the theory's display name (default: from the id)")
    parser.add_argument(
        "--chunk-tokens", type=int, default=4000, help="tokens per chunk (default: 4000)"
    )
    parser.add_argument(
        "--overlap",
        type=int,
        default=200,
        help="tokens shared by neighbouring chunks (default: 200)",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="check-and-repair rounds (default: 3)"
    )
    parser.add_argument(
        "--merge-threshold",
        type=float,
        default=DEFAULT_MERGE_THRESHOLD,
        help="cosine similarity at which actions are merged (default: 0.85)",
    )
    parser.add_argument(
        "--embeddings",
        choices=("auto", "endpoint", "lexical"),
        default="auto",
        help="endpoint /v1/embeddings or offline lexical vectors (default: auto)",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=Path(".pedrag/extract-cache"),
        help="per-chunk answer cache (default: .pedrag/extract-cache)",
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def _usage_problem(args: argparse.Namespace) -> str | None:
    if not _IDENTIFIER.match(args.theory_id):
        return f"--theory-id `{args.theory_id}` must be lower_snake_case ([a-z][a-z0-9_]*)"
    if args.chunk_tokens <= 0:
        return "--chunk-tokens must be positive"
    if not 0 <= args.overlap < args.chunk_tokens:
        return "--overlap must be at least 0 and smaller than --chunk-tokens"
    if args.rounds < 0:
        return "--rounds must be 0 or more"
    if not 0 < args.merge_threshold <= 1:
        return "--merge-threshold must be in (0, 1]"
    return None


class _RichReporter:
    """Progress bars per stage on stderr, so stdout stays clean; drawn only on a terminal
    (off one, rich would print each bar's last frame into the log)."""

    _LABELS = {
        "read": "reading",
        "extract": "extracting",
        "merge": "merging",
        "repair": "repairing",
    }

    def __init__(self, quiet: bool) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.console = Console(stderr=True)
        self.progress = Progress(
            TextColumn("{task.description:<11}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
            disable=quiet or not self.console.is_terminal,
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> _RichReporter:
        self.progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.progress.stop()

    def start(self, stage: str, total: int | None = None) -> None:
        self.tasks[stage] = self.progress.add_task(self._LABELS.get(stage, stage), total=total)

    def advance(self, stage: str, amount: int = 1) -> None:
        self.progress.advance(self.tasks[stage], amount)

    def finish(self, stage: str) -> None:
        # A stage may end early (repair stops at the first clean round): show what ran,
        # not the planned total ("0/0" when no repair round was needed). A stage without
        # steps (merge) shows as one.
        task = self.progress.tasks[self.tasks[stage]]
        total = int(task.completed) if task.total is not None else 1
        self.progress.update(self.tasks[stage], total=total, completed=total)

    def note(self, message: str) -> None:
        # soft_wrap: a note is one line however narrow the terminal (or a log file) is.
        self.progress.console.print(
            f"[yellow]note:[/] {message}", highlight=False, markup=True, soft_wrap=True
        )


def run(args: argparse.Namespace) -> int:
    problem = _usage_problem(args)
    if problem:
        print(f"pedrag extract: {problem}", file=sys.stderr)
        return 2
    try:
        backend = backend_from_env(os.environ)
    except ValueError as exc:
        print(f"pedrag extract: {exc}", file=sys.stderr)
        return 2
    if backend is None:
        print(
            "pedrag extract: needs an OpenAI-compatible endpoint; set OPENAI_BASE_URL (and "
            "OPENAI_API_KEY if it needs one). Extraction has no offline mode.",
            file=sys.stderr,
        )
        return 2
    missing = [path for path in args.corpus if not Path(path).exists()]
    if missing:
        print(f"pedrag extract: no such file or directory: {missing[0]}", file=sys.stderr)
        return 2
    try:
        check_endpoint(backend, ("extractor",))
    except EndpointDown as error:
        print(f"pedrag extract: {error}", file=sys.stderr)
        return error.exit_code
    watch = ModelWatch(backend, "extract")
    options = ExtractOptions(
        output=args.output,
        theory_id=args.theory_id,
        theory_name=args.theory_name,
        chunk_tokens=args.chunk_tokens,
        overlap=args.overlap,
        rounds=args.rounds,
        merge_threshold=args.merge_threshold,
        embeddings=args.embeddings,
        cache_dir=None if args.no_cache else args.cache_dir,
    )
    with _RichReporter(args.quiet) as reporter:
        try:
            result = extract(args.corpus, options, backend, reporter)
        except ExtractionError as exc:
            reporter.progress.stop()
            print(f"pedrag extract: {exc}", file=sys.stderr)
            _print_cost(backend.usage, None)
            watch.finish()
            return 2 if isinstance(exc, ExtractionUsageError) else 1
    _print_summary(result)
    all_failed = watch.finish()
    return 0 if result.clean and not all_failed else 1


def _print_summary(result: ExtractionResult) -> None:
    draft = result.repair.draft
    errors = len(result.repair.errors)
    warnings = len(result.remaining) - errors
    print(
        f"wrote {result.output}: {len(draft.metrics)} metrics, {len(draft.actions)} actions, "
        f"{len(draft.rules)} rules, {len(draft.principles)} principles from "
        f"{len(result.chunks)} chunks"
    )
    print(
        f"merged {len(result.merge.merged_actions)} near-duplicate actions, dropped "
        f"{len(result.merge.dropped_rules)} duplicate rules; skipped "
        f"{len(result.skipped)} chunks with invalid fragments"
    )
    rounds = len(result.repair.rounds)
    state = "checks clean" if not errors else f"{errors} errors remain"
    print(
        f"{state} after {rounds} repair rounds ({warnings} warnings); "
        f"see `pedrag check {result.output}`"
    )
    _print_cost(result.usage, result)


def _print_cost(usage: object, result: ExtractionResult | None) -> None:
    if usage is None:
        return
    calls = getattr(usage, "calls", 0)
    if result is None and not calls:
        return  # failed before any model call: nothing was spent
    tokens = (
        f"({getattr(usage, 'prompt_tokens', 0)} prompt + "
        f"{getattr(usage, 'completion_tokens', 0)} completion tokens)"
    )
    if getattr(usage, "cost_known", True):
        line = f"cost: ${getattr(usage, 'cost_usd', 0.0):.4f} for {calls} model calls {tokens}"
    else:
        # No price is known for the model: a dollar figure would be made up.
        line = (
            f"cost: not known (no price for the model; see PEDRAG_PRICES in docs/llm.md) for "
            f"{calls} model calls {tokens}"
        )
    if result is not None:
        line += f"; cache: {result.cache_hits} hits, {result.cache_misses} misses"
    print(line)
