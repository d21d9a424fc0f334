"""Options several commands share, spelled once: where the session database is, and the
choice between text and JSON output, and whose (a tenant's) sessions a command reaches.

The database default is written out here rather than read from `pedrag.runtime.store.session_store` (its
`ENV_DB`, `DEFAULT_DB_PATH`): building the parser must not import SQLAlchemy, or `--help`
would pay for it. `tests/test_cli_startup.py` checks that the two agree.
"""

from __future__ import annotations

import argparse

DB_DEFAULT = "$PEDRAG_DB or ./.pedrag/sessions.db"


def add_db_option(parser: argparse.ArgumentParser, holds: str = "session database") -> None:
    parser.add_argument("--db", metavar="PATH", help=f"{holds} (default: {DB_DEFAULT})")


def add_format_option(parser: argparse.ArgumentParser, what: str = "output") -> None:
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help=f"{what} format (default: text)"
    )


def add_tenant_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tenant",
        default="default",
        metavar="ID",
        help="the tenant whose sessions to reach (a `pedrag serve` tenant; default: default, "
        "the CLI's own sessions)",
    )
