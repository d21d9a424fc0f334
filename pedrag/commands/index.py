"""`pedrag index MATERIALS... --course ID`: index a course's materials for grounded answers."""

from __future__ import annotations

import argparse
import json
import sys

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

A curriculum names the course its exercises belong to (`course: ID` at the top level); the
tutor grounds a session in that course's materials. Use --search to try a question.

exit status: 0 indexed, 1 a file could not be read, 2 usage problem
"""
EPILOG = """\
examples:
  pedrag index course/biology --course biology_101
  pedrag index slides/ notes.md handbook.html --course biology_101 --prune
  pedrag index --course biology_101 --list
  pedrag index --course biology_101 --search "what does chlorophyll absorb?"
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("materials", nargs="*", metavar="MATERIALS", help="files or folders")
    parser.add_argument(
        "--course", required=True, metavar="ID", help="the course id a curriculum names"
    )
    parser.add_argument(
        "--db",
        metavar="PATH",
        help="session database (default: $PEDRAG_DB or ./.pedrag/sessions.db)",
    )
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
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )


def run(args: argparse.Namespace) -> int:
    from pedrag.extract.materials import index_materials
    from pedrag.extract.reader import ReadError
    from pedrag.runtime.course_index import CourseIndex, CourseIndexError, require_course_id
    from pedrag.runtime.store import SessionStore, StoreError

    if not args.materials and not args.list and args.search is None:
        print(
            "pedrag index: give MATERIALS to index (files or folders), --list or --search",
            file=sys.stderr,
        )
        return 2
    try:
        require_course_id(args.course)
        store = SessionStore(args.db)
    except (StoreError, CourseIndexError) as error:
        print(f"pedrag index: {error}", file=sys.stderr)
        return 2
    output: dict[str, object] = {"course": args.course}
    with store:
        index = CourseIndex(store)
        try:
            if args.materials:
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
            if args.list:
                documents = index.documents(args.course)
                output["documents"] = documents
                if args.format == "text":
                    if not documents:
                        print(f"course {args.course}: no documents indexed in {store.url}")
                    for item in documents:
                        print(
                            f"{item['document']}  {item['chunks']} passages  {item['indexed_at']}"
                        )
            if args.search is not None:
                passages = index.search(args.course, args.search, limit=5)
                output["passages"] = [p.to_dict() | {"supports": p.supports} for p in passages]
                if args.format == "text":
                    if not passages:
                        print("no passage matches that question")
                    for p in passages:
                        mark = "supports" if p.supports else "weak"
                        print(
                            f"{p.citation}  score {p.score:.3f}  covers {p.coverage:.0%} ({mark})"
                        )
                        print(f"    {p.text[:300]}")
        except ReadError as error:
            print(f"pedrag index: {error}", file=sys.stderr)
            return 1
        except StoreError as error:
            print(f"pedrag index: {error}", file=sys.stderr)
            return 1
    if args.format == "json":
        print(json.dumps(output, indent=2, ensure_ascii=False))
    return 0
