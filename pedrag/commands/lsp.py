"""`pedrag lsp`: run the language server (`pedrag.lsp`) over stdin/stdout."""

from __future__ import annotations

import argparse
import sys

NAME = "lsp"
ORDER = 95
HELP = "run the language server (stdio) for editors: diagnostics, hover, completion, definitions"
DESCRIPTION = """\
Run pedrag's language server over stdin/stdout. Editors start it themselves:

  VS Code (any generic LSP client extension), command: pedrag lsp, languages: yaml
  Neovim:  vim.lsp.start({name = "pedrag", cmd = {"pedrag", "lsp"},
                          root_dir = vim.fs.root(0, {"pyproject.toml", ".git"})})

It reports every check `pedrag check` runs (z3 included, after a 0.4 s pause in typing),
hover for metrics, actions and rungs, completion inside conditions, go to definition, find
references, document symbols (metrics, actions, rules, ceiling steps), rename of a metric or
an action across the theory set (the pedrag files in the document's folder and below), and
quick fixes for did-you-mean suggestions, coverage gaps and the proved guard of a conflict or
invariant violation. Editors hand it every YAML file: only pedrag files (a top-level
`pedrag:` key, or a match in [tool.pedrag] files) get diagnostics, the others are left
alone. Each diagnostic links to its check's page on the documentation site ([tool.pedrag]
docs-url).

A file with a front-end error (syntax, unknown name, type) gets what `pedrag check` gives it:
those errors, and none of the compiler's findings. While you type through such an error, the
findings of the last version that compiled stay shown, marked "(stale: ...)" as notes with no
quick fix, until the file compiles again and is checked afresh.
"""
EPILOG = """\
examples:
  pedrag lsp
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="neither read nor write the on-disk check cache (by default a document's first "
        "check in the server reads the answers earlier `pedrag check` runs and servers kept)",
    )


def run(args: argparse.Namespace) -> int:
    from pedrag.lsp import checking

    checking.DISK_CACHE = not getattr(args, "no_cache", False)
    try:
        from pedrag.lsp.server import create_server

        server = create_server()
    except ImportError as exc:  # pragma: no cover - pygls is a dependency
        print(f"pedrag lsp: {exc}", file=sys.stderr)
        return 2
    server.start_io()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(run(argparse.Namespace()))
