"""`pedrag schema`: the JSON Schema of the theory (or curriculum) format, for editors."""

from __future__ import annotations

import argparse
import sys

from pedrag.commands._output import write_output
from pedrag.dsl.schema import shipped, shipped_file

NAME = "schema"
ORDER = 90
HELP = "print the JSON Schema of theory files (or curricula) for editor autocompletion"
DESCRIPTION = """\
Print the JSON Schema of theory files (or curricula): every key described, rungs and metric
sources as enums, and the conditional requirements (a float metric needs `range`, an enum
metric `values`, a ceiling step one effect). yaml-language-server (VS Code's YAML extension,
Neovim, Helix, ...) uses it for completion, hover and validation.

The schema ships inside the package. Point a theory file at it with a modeline on its first
line; the path is relative to the YAML file:

  # yaml-language-server: $schema=../schemas/theory.schema.json

after writing it into your project once (and committing it, so it works for everyone):

  pedrag schema -o schemas/theory.schema.json
  pedrag schema --kind curriculum -o schemas/curriculum.schema.json

or, for your machine only, use the installed file itself: `pedrag schema --path` prints it.
The theories shipped with pedrag use `$schema=../dsl/schemas/theory.schema.json`, which
resolves both in a checkout and in the installed package.
"""
EPILOG = """\
examples:
  pedrag schema > theory.schema.json
  pedrag schema -o schemas/theory.schema.json
  pedrag schema --kind curriculum -o schemas/curriculum.schema.json
  pedrag schema --path
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kind",
        choices=("theory", "curriculum"),
        default="theory",
        help="which format (default: theory)",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="write the schema to FILE instead of stdout"
    )
    parser.add_argument(
        "--path",
        action="store_true",
        help="print where the installed schema file is (for an absolute modeline)",
    )


def run(args: argparse.Namespace) -> int:
    if args.path:
        print(shipped_file(args.kind))
        return 0
    text = shipped(args.kind)
    if args.output:
        problem = write_output(args.output, text.encode("utf-8"))
        if problem:
            print(f"pedrag schema: {problem}", file=sys.stderr)
            return 2
        return 0
    sys.stdout.write(text)
    return 0
