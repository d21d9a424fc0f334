"""`pedrag schema`: the JSON Schema of the theory (or curriculum) format, for editors."""

from __future__ import annotations

import argparse
import json

from pedrag.dsl.schema import curriculum_schema, theory_schema

NAME = "schema"
ORDER = 90
HELP = "print the JSON Schema of theory files (or curricula) for editor autocompletion"
EPILOG = """\
Point your editor at it with a modeline on a theory file's first line:
  # yaml-language-server: $schema=theory.schema.json

examples:
  pedrag schema > theory.schema.json
  pedrag schema --kind curriculum > curriculum.schema.json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kind",
        choices=("theory", "curriculum"),
        default="theory",
        help="which format (default: theory)",
    )


def run(args: argparse.Namespace) -> int:
    schema = theory_schema() if args.kind == "theory" else curriculum_schema()
    print(json.dumps(schema, indent=2))
    return 0
