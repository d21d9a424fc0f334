"""Extraction's entry point: corpus files -> a checked theory file.

Takes corpus paths, options and an LLM backend; runs the stages in order — read (`reader`),
chunk (`chunker`), one fragment per chunk (`fragments`), merge (`merge`, with
`embeddings`), check and repair (`repair`), write (`writer`) — and gives an
`ExtractionResult` saying what was produced and what remains. Progress is reported through
a `Reporter` (the CLI draws bars with rich; tests pass nothing). Failures a user can act on
raise `ExtractionError` with a one-line message — `ExtractionUsageError` when the corpus or
the output path is unusable, found before any model call; otherwise every finished chunk is
cached by then, so a rerun resumes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.extract.cache import AnswerCache
from pedrag.extract.chunker import Chunk, Tokenizer, chunk_pages, default_tokenizer
from pedrag.extract.embeddings import Embedder, EndpointEmbedder, LexicalEmbedder
from pedrag.extract.fragments import FragmentOutcome, extract_fragment, fragment_cache_key
from pedrag.extract.merge import DEFAULT_MERGE_THRESHOLD, Draft, MergeReport, merge_fragments
from pedrag.extract.provenance import SourceRegistry
from pedrag.extract.reader import Page, ReadError, corpus_files, read_document
from pedrag.extract.repair import RepairResult, RepairRound, item_label, repair
from pedrag.extract.writer import render_theory
from pedrag.kernel.errors import PedragError
from pedrag.runtime.llm.interface import LLMBackend, LLMError, Usage

EmbeddingChoice = Literal["auto", "endpoint", "lexical"]


class ExtractionError(PedragError):
    """Extraction cannot go on; the message says why and what to do."""


class ExtractionUsageError(ExtractionError):
    """The corpus or the output path is unusable; found before anything was sent to the model."""


class Reporter(Protocol):
    def start(self, stage: str, total: int | None = None) -> None: ...
    def advance(self, stage: str, amount: int = 1) -> None: ...
    def finish(self, stage: str) -> None: ...
    def note(self, message: str) -> None: ...


class SilentReporter:
    def start(self, stage: str, total: int | None = None) -> None:
        pass

    def advance(self, stage: str, amount: int = 1) -> None:
        pass

    def finish(self, stage: str) -> None:
        pass

    def note(self, message: str) -> None:
        pass


@dataclass(frozen=True)
class ExtractOptions:
    output: Path
    theory_id: str
    theory_name: str | None = None
    chunk_tokens: int = 4000
    overlap: int = 200
    rounds: int = 3
    merge_threshold: float = DEFAULT_MERGE_THRESHOLD
    cache_dir: Path | None = Path(".pedrag/extract-cache")
    embeddings: EmbeddingChoice = "auto"


@dataclass
class ExtractionResult:
    output: Path
    text: str
    chunks: list[Chunk]
    outcomes: list[FragmentOutcome]
    merge: MergeReport
    repair: RepairResult
    tokenizer: str
    embedder: str
    cache_hits: int
    cache_misses: int
    usage: Usage | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def skipped(self) -> list[FragmentOutcome]:
        return [outcome for outcome in self.outcomes if outcome.skipped]

    @property
    def remaining(self) -> list[Diagnostic]:
        return self.repair.diagnostics

    @property
    def clean(self) -> bool:
        return not self.repair.errors


def extract(
    corpus: Sequence[str | Path],
    options: ExtractOptions,
    backend: LLMBackend,
    reporter: Reporter | None = None,
    tokenizer: Tokenizer | None = None,
) -> ExtractionResult:
    reporter = reporter or SilentReporter()
    model = _model_name(backend)
    cache = AnswerCache(options.cache_dir)
    _check_output(options.output)
    pages = _read(corpus, reporter)

    tokenizer = tokenizer or default_tokenizer()
    chunks = chunk_pages(pages, options.chunk_tokens, options.overlap, tokenizer)
    registry = SourceRegistry()
    for chunk in chunks:  # ids in corpus order, whichever chunk is reported first
        registry.source_for(chunk)

    cached = sum(cache.contains(fragment_cache_key(chunk, model)) for chunk in chunks)
    if cached:
        earlier = "all" if cached == len(chunks) else f"resuming: {cached} of"
        reporter.note(
            f"{earlier} {len(chunks)} chunks were answered by an earlier run "
            f"(cached in {options.cache_dir})"
        )
    reporter.start("extract", len(chunks))
    outcomes: list[FragmentOutcome] = []
    for chunk in chunks:
        try:
            outcomes.append(extract_fragment(chunk, backend, cache, model))
        except LLMError as exc:
            where = _stopped_at(len(outcomes), len(chunks), options.cache_dir)
            raise ExtractionError(f"{exc} ({where})") from None
        except KeyboardInterrupt:
            reporter.note(
                f"interrupted {_stopped_at(len(outcomes), len(chunks), options.cache_dir)}"
            )
            raise
        reporter.advance("extract")
    reporter.finish("extract")
    for outcome in outcomes:
        if outcome.skipped:
            source = registry.source_for(outcome.chunk)
            reporter.note(
                f"skipped chunk {source.id} ({source.title}, {source.locator}): "
                f"invalid fragment after {outcome.attempts} attempts: "
                f"{outcome.errors[0] if outcome.errors else 'no detail'}"
            )

    fragments = [
        (o.fragment, registry.source_for(o.chunk).id) for o in outcomes if o.fragment is not None
    ]
    reporter.start("merge", None)
    notes: list[str] = []
    embedder = _embedder(backend, options.embeddings, notes)
    try:
        draft, merge_report = merge_fragments(fragments, embedder, options.merge_threshold)
    except LLMError as exc:
        notes.append(f"the embedding endpoint failed ({exc}); used lexical embeddings")
        embedder = LexicalEmbedder()
        draft, merge_report = merge_fragments(fragments, embedder, options.merge_threshold)
    reporter.finish("merge")

    name = options.theory_name or options.theory_id.replace("_", " ").title()
    description = f"Extracted from {', '.join(_document_names(chunks))} by pedrag extract."

    def render(candidate: Draft, header: Sequence[str] = ()) -> str:
        sources = registry.cited(candidate.cited_sources())
        return render_theory(candidate, options.theory_id, name, sources, header, description)

    reporter.start("repair", options.rounds)

    def on_round(record: RepairRound) -> None:
        reporter.advance("repair")
        if record.problem:
            reporter.note(f"repair round {record.number}: {record.problem}")

    try:
        repaired = repair(
            draft, render, str(options.output), backend, cache, model, options.rounds, on_round
        )
    except LLMError as exc:
        raise ExtractionError(
            f"{exc} (during repair; finished chunks are cached: rerun to resume)"
        ) from None
    reporter.finish("repair")

    result = ExtractionResult(
        output=options.output,
        text="",
        chunks=chunks,
        outcomes=outcomes,
        merge=merge_report,
        repair=repaired,
        tokenizer=tokenizer.name,
        embedder=embedder.name,
        cache_hits=cache.hits,
        cache_misses=cache.misses,
        usage=getattr(backend, "usage", None),
        notes=notes,
    )
    result.text = render(repaired.draft, _header(result, model, registry))
    try:
        options.output.parent.mkdir(parents=True, exist_ok=True)
        options.output.write_text(result.text, encoding="utf-8")
    except OSError as exc:
        rerun = (
            " (the model's answers are cached: rerun with another -o)" if options.cache_dir else ""
        )
        raise ExtractionError(
            f"cannot write {options.output}: {exc.strerror or exc}{rerun}"
        ) from None
    return result


def _check_output(output: Path) -> None:
    """Refuse an output path that cannot be written before any model call is paid for."""
    if output.is_dir():
        raise ExtractionUsageError(
            f"output {output} is a folder; give the file to write, e.g. {output / 'NAME.yaml'}"
        )
    folder = output.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise ExtractionUsageError(f"cannot write {output}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ExtractionUsageError(f"cannot write {output}: no permission to write in {folder}")


def _read(corpus: Sequence[str | Path], reporter: Reporter) -> list[Page]:
    """Every page of the corpus; files without text are noted, a corpus without any is an
    `ExtractionUsageError` naming them."""
    try:
        files = corpus_files(list(corpus))
        reporter.start("read", len(files))
        pages: list[Page] = []
        empty: list[Path] = []
        for path in files:
            document = read_document(path)
            if not document:
                empty.append(path)
            pages.extend(document)
            reporter.advance("read")
    except ReadError as exc:
        raise ExtractionUsageError(str(exc)) from None
    reporter.finish("read")
    ocr = (
        " (a PDF of scanned pages has no text layer: run OCR first)"
        if any(path.suffix.lower() == ".pdf" for path in empty)
        else ""
    )
    if not pages:
        names = ", ".join(map(str, empty))
        raise ExtractionUsageError(f"no text to extract from: {names} holds none{ocr}")
    for path in empty:
        reporter.note(f"{path}: no text, skipped{ocr if path.suffix.lower() == '.pdf' else ''}")
    return pages


def _stopped_at(done: int, total: int, cache_dir: Path | None) -> str:
    where = f"at chunk {done + 1} of {total}"
    if done == 0:
        return f"{where}; nothing was extracted yet"
    if cache_dir is None:
        return f"{where}; --no-cache was given, so a rerun starts over"
    return f"{where}; the {done} chunks before it are cached in {cache_dir}: rerun to resume"


def _model_name(backend: LLMBackend) -> str:
    model_for = getattr(backend, "model_for", None)
    return str(model_for("extractor")) if callable(model_for) else type(backend).__name__


def _embedder(backend: LLMBackend, choice: EmbeddingChoice, notes: list[str]) -> Embedder:
    can_embed = callable(getattr(backend, "embed", None))
    if choice == "lexical" or (choice == "auto" and not can_embed):
        return LexicalEmbedder()
    if not can_embed:
        notes.append("this backend has no embeddings; used lexical embeddings")
        return LexicalEmbedder()
    return EndpointEmbedder(backend)  # type: ignore[arg-type]


def _document_names(chunks: Sequence[Chunk]) -> list[str]:
    return list(dict.fromkeys(Path(chunk.document).name for chunk in chunks))


def _header(result: ExtractionResult, model: str, registry: SourceRegistry) -> list[str]:
    rounds = len(result.repair.rounds)
    documents = ", ".join(_document_names(result.chunks))
    lines = [
        f"Extracted by `pedrag extract` from {documents}: {len(result.chunks)} chunks, "
        f"model {model}, tokenizer {result.tokenizer}, embeddings {result.embedder}.",
        "A model wrote this from the text: review it. Items cite their passages in `source:`.",
    ]
    errors = result.repair.errors
    warnings = [d for d in result.remaining if d.severity is Severity.WARNING]
    after = f" after {rounds} repair round{'s' if rounds != 1 else ''}"
    if errors:
        lines.append(
            f"NOT CLEAN: {len(errors)} error(s) remain{after}; run `pedrag check` "
            "on this file for their lines:"
        )
    else:
        lines.append(f"Checks clean{after}: 0 errors, {len(warnings)} warning(s).")
    for diagnostic in [*errors, *warnings]:
        lines.append(f"  {_describe(diagnostic)}")
    for outcome in result.skipped:
        source = registry.source_for(outcome.chunk)
        first = outcome.errors[0] if outcome.errors else "no detail"
        lines.append(
            f"Skipped chunk {source.id} ({source.title}, {source.locator}): invalid "
            f"fragment twice ({first})."
        )
    for conflict in result.merge.metric_conflicts:
        lines.append(f"Metric conflict: {conflict}.")
    for merged in result.merge.merged_actions:
        lines.append(
            f"Merged action `{merged.duplicate}` into `{merged.survivor}` "
            f"(cosine {merged.similarity:.2f})."
        )
    if result.merge.dropped_rules:
        counts = {
            rule: result.merge.dropped_rules.count(rule) for rule in result.merge.dropped_rules
        }
        shown = [rule if count == 1 else f"{rule} (x{count})" for rule, count in counts.items()]
        lines.append(f"Dropped duplicate rules: {', '.join(shown)}.")
    lines.extend(result.notes)
    return lines


def _describe(diagnostic: Diagnostic) -> str:
    where = ", ".join(item_label(item) for item in diagnostic.items)
    return (
        f"{diagnostic.severity.value} {diagnostic.check}"
        f"{' on ' + where if where else ''}: {diagnostic.message}"
    )
