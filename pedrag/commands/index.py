"""`pedrag index MATERIALS... --course ID`: index a course's materials for grounded answers."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from typing import Any

from pedrag.commands._options import add_db_option, add_format_option

NAME = "index"
ORDER = 35
HELP = "index a course's materials (PDF/Markdown/text/HTML) so the tutor can cite them"
DESCRIPTION = """\
Index a course's materials — slides, notes, textbook chapters, assignments as PDF, Markdown,
plain text or HTML — into the session database, so the tutor answers concept questions from
them and cites them (`[slides 4, p. 2]`). Files are cut into passages of a few sentences that
keep their position (file, page, heading) and are searched with full-text BM25 (SQLite FTS5;
PostgreSQL's full-text search when --db is a PostgreSQL URL). Nothing to install, no network.

MATERIALS are files or folders (searched recursively). A document is named by its path
inside the folder given (or its file name), and cited by that name without its suffix. Run it
again after editing: unchanged files are skipped, a changed file's passages are replaced.

With an endpoint (--endpoint URL, or OPENAI_BASE_URL / OPENAI_API_KEY as for `pedrag chat`),
every passage is also embedded through the endpoint's /v1/embeddings (model: --embedding-model,
default $PEDRAG_EMBEDDING_MODEL or text-embedding-3-small) and stored with the database's vector
extension: sqlite-vec on SQLite, pgvector on PostgreSQL (`pip install 'pedrag[vectors]'` adds
sqlite-vec). The tutor, given the same endpoint and model, then fuses the nearest passages with
BM25 by reciprocal rank fusion, so a question worded unlike the materials still finds them.
Only passages without a vector of the model are embedded: an unchanged file costs nothing. If
the endpoint fails, the full-text index is still written and kept; the command says so and
exits 1, and running it again embeds what is missing. --offline indexes for BM25 only.

A curriculum names the course its exercises belong to (`course: ID` at the top level); the
tutor grounds a session in that course's materials. Use --search to try a question.

exit status: 0 indexed, 1 a file could not be read or the passages could not be embedded (the
full-text index is kept), 2 usage problem
"""
EPILOG = """\
examples:
  pedrag index course/biology --course biology_101
  pedrag index slides/ notes.md handbook.html --course biology_101 --prune
  pedrag index --course biology_101 --list
  pedrag index --course biology_101 --search "what does chlorophyll absorb?"
  pedrag index course/biology --course biology_101 \\
      --endpoint http://127.0.0.1:8080/v1 --embedding-model nomic-embed-text
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("materials", nargs="*", metavar="MATERIALS", help="files or folders")
    parser.add_argument(
        "--course", required=True, metavar="ID", help="the course id a curriculum names"
    )
    add_db_option(parser)
    parser.add_argument(
        "--prune",
        action="store_true",
        help="also remove the course's documents that are not among MATERIALS",
    )
    parser.add_argument("--list", action="store_true", help="list the course's documents")
    parser.add_argument(
        "--search", metavar="QUESTION", help="print the passages a question would retrieve"
    )
    parser.add_argument(
        "--endpoint",
        metavar="URL",
        help="an OpenAI-compatible base URL whose /v1/embeddings embeds the passages (e.g. "
        "http://127.0.0.1:8080/v1); the key, if the server needs one, comes from "
        "OPENAI_API_KEY (default: OPENAI_BASE_URL; none: BM25 only)",
    )
    parser.add_argument(
        "--embedding-model",
        metavar="MODEL",
        help="the embedding model (default: $PEDRAG_EMBEDDING_MODEL or text-embedding-3-small); "
        "the tutor searches the vectors when its PEDRAG_EMBEDDING_MODEL is the same",
    )
    parser.add_argument(
        "--offline",
        action="store_true",
        help="no endpoint even if one is configured: full-text BM25 only",
    )
    add_format_option(parser)


class _Usage(Exception):
    """A usage problem: the message is printed, the exit status is 2."""


def _embeddings(args: argparse.Namespace) -> Any:
    """The endpoint's embeddings the options ask for, or None (BM25 only)."""
    if args.offline:
        if args.endpoint or args.embedding_model:
            raise _Usage("--offline contradicts --endpoint / --embedding-model; give one")
        return None
    from pedrag.runtime.course.vectors import EndpointEmbeddings
    from pedrag.runtime.llm.openai_backend import OpenAIBackend, backend_from_env

    env = dict(os.environ)
    if args.endpoint:
        env["OPENAI_BASE_URL"] = args.endpoint
        env.pop("PEDRAG_LLM", None)  # an explicit --endpoint wins over PEDRAG_LLM=offline
    try:
        backend = backend_from_env(env)
    except ValueError as error:  # an unusable PEDRAG_* setting, named by the message
        raise _Usage(str(error)) from error
    if backend is None:
        if args.embedding_model:
            raise _Usage(
                "--embedding-model needs an endpoint: give --endpoint URL or set "
                "OPENAI_BASE_URL (and OPENAI_API_KEY if required)"
            )
        return None
    if args.embedding_model:
        settings = replace(backend.settings, embedding_model=args.embedding_model)
        backend = OpenAIBackend(settings)
    return EndpointEmbeddings(backend)


def _embed(index: Any, course: str, embedder: Any, health: str | None) -> tuple[Any, str | None]:
    """Embed the course's passages that have no vector of the model: the report, or why not."""
    from pedrag.runtime.course.index import CourseIndexError
    from pedrag.runtime.llm.interface import LLMError

    if health is not None:
        return None, health
    try:
        return index.embed_missing(course, embedder), None
    except (LLMError, CourseIndexError) as error:
        return None, str(error)


def run(args: argparse.Namespace) -> int:
    from pedrag.extract.materials import index_materials
    from pedrag.extract.reader import ReadError
    from pedrag.runtime.course.index import CourseIndex, CourseIndexError, require_course_id
    from pedrag.runtime.store.session_store import SessionStore, StoreError

    if not args.materials and not args.list and args.search is None:
        print(
            "pedrag index: give MATERIALS to index (files or folders), --list or --search",
            file=sys.stderr,
        )
        return 2
    try:
        require_course_id(args.course)
        embedder = _embeddings(args)
        store = SessionStore(args.db)
    except (StoreError, CourseIndexError, _Usage) as error:
        print(f"pedrag index: {error}", file=sys.stderr)
        return 2
    output: dict[str, object] = {"course": args.course}
    failed: str | None = None
    with store:
        index = CourseIndex(store, embedder)
        try:
            if args.materials:
                health = _health(embedder) if embedder is not None else None
                results, removed = index_materials(
                    index, args.course, args.materials, prune=args.prune
                )
                output["files"] = [
                    {"document": r.document, "outcome": r.outcome, "chunks": r.chunks}
                    for r in results
                ]
                output["removed"] = removed
                if args.format == "text":
                    for r in results:
                        print(f"{r.outcome:9s}  {r.document}  ({r.chunks} passages)")
                    for document in removed:
                        print(f"{'removed':9s}  {document}")
                    changed = sum(r.outcome != "unchanged" for r in results)
                    print(
                        f"course {args.course}: {len(results)} files, {changed} (re)indexed, "
                        f"{len(removed)} removed, in {store.url}"
                    )
                if embedder is not None:
                    report, failed = _embed(index, args.course, embedder, health)
                    if report is not None:
                        output["vectors"] = {
                            "model": report.model,
                            "embedded": report.embedded,
                            "missing": report.missing,
                        }
                        if args.format == "text":
                            print(
                                f"vectors: {report.embedded} passages embedded with "
                                f"{report.model} at {embedder.backend.url}, "
                                f"{report.missing} without"
                            )
            if args.list:
                documents = index.documents(args.course)
                counts = index.vector_counts(args.course)
                output["documents"] = documents
                output["vector_counts"] = counts
                if args.format == "text":
                    if not documents:
                        print(f"course {args.course}: no documents indexed in {store.url}")
                    for item in documents:
                        print(
                            f"{item['document']}  {item['chunks']} passages  {item['indexed_at']}"
                        )
                    total = sum(item["chunks"] for item in documents)
                    for count in counts:
                        print(
                            f"vectors: {count['passages']} of {total} passages embedded with "
                            f"{count['model']} ({count['dimension']} numbers each)"
                        )
            if args.search is not None:
                passages = index.search(args.course, args.search, limit=5)
                output["passages"] = [
                    p.to_dict() | {"supports": p.supports, "found_by": p.found_by} for p in passages
                ]
                if args.format == "text":
                    if not passages:
                        print("no passage matches that question")
                    for p in passages:
                        mark = "supports" if p.supports else "weak"
                        # BM25 scores are tiny (zero for a word in half the passages of a
                        # small course): three significant digits, never a bare 0.0000.
                        print(
                            f"{p.citation}  score {p.score:.3g}  covers "
                            f"{p.coverage:.0%} ({mark})  found by {p.found_by}"
                        )
                        print(f"    {p.text[:300]}")
        except ReadError as error:
            print(f"pedrag index: {error}", file=sys.stderr)
            return 1
        except StoreError as error:
            print(f"pedrag index: {error}", file=sys.stderr)
            return 1
    if failed is not None:
        output["vectors_error"] = failed
    if args.format == "json":
        print(json.dumps(output, indent=2, ensure_ascii=False))
    if failed is not None:
        print(
            f"pedrag index: the passages were not embedded: {failed}\n"
            f"pedrag index: the full-text (BM25) index of course {args.course} is complete and "
            "kept; run the command again to add the missing vectors",
            file=sys.stderr,
        )
        return 1
    return 0


def _health(embedder: Any) -> str | None:
    """Why the embedding endpoint is not usable (checked before indexing), or None."""
    from pedrag.runtime.llm.interface import LLMError

    try:
        embedder.backend.check_embeddings()
    except LLMError as error:
        return str(error)
    return None
