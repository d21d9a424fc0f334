"""Regenerate docs/cli.md from the CLI's own --help texts, so the reference cannot drift.

python docs/gen_cli.py          # rewrite docs/cli.md
python docs/gen_cli.py --check  # exit 1 if docs/cli.md is out of date (a test runs this)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = HERE / "cli.md"

INTRO = """\
# The `pedrag` command line

Generated from the commands' own `--help` by `docs/gen_cli.py`; do not edit by hand.

Every command exits 0 on success, 1 when it found errors (or a session failed), 2 on usage
problems (a bad path, option or state string); `pedrag instructor --retake` exits 3 when no
retake is due. Output is coloured only on a terminal
(`NO_COLOR` turns it off). No command needs the network unless an endpoint is configured
(`OPENAI_BASE_URL`, `OPENAI_API_KEY`; see [llm.md](llm.md)); without one, the tutor runs on the
deterministic offline backend.
"""


def render() -> str:
    os.environ["COLUMNS"] = "100"
    from pedrag.cli import build_parser

    parser = build_parser()
    parts = [INTRO, "## pedrag\n", "```text\n" + parser.format_help().rstrip() + "\n```\n"]
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in subparsers.choices.items():
        parts.append(f"## pedrag {name}\n")
        parts.append("```text\n" + sub.format_help().rstrip() + "\n```\n")
    return "\n".join(parts)


def main() -> int:
    text = render()
    if "--check" in sys.argv:
        current = TARGET.read_text("utf-8") if TARGET.exists() else ""
        if current != text:
            print("docs/cli.md is out of date: run python docs/gen_cli.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
