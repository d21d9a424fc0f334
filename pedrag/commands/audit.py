"""`pedrag audit SESSION`: a readable per-turn trace of a saved tutoring session."""

from __future__ import annotations

import argparse
import json
import sys

from pedrag.commands._options import add_db_option, add_format_option, add_tenant_option

NAME = "audit"
ORDER = 32
HELP = "print a session's per-turn audit trace (contract, rules, action, verdicts)"
DESCRIPTION = """\
Print a saved session's audit records: per turn the classified and inferred metrics, trusted
state, the contract and which ceiling step set it, matched and eligible rules, the chosen
action and why, detector and judge verdicts with reasons, fallbacks, failures and cost.
"""
EPILOG = """\
examples:
  pedrag audit 3f2a9c1b7d4e
  pedrag audit --list
  pedrag audit 3f2a9c1b7d4e --format json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", nargs="?", help="session id")
    parser.add_argument("--list", action="store_true", help="list recent sessions")
    add_tenant_option(parser)
    add_db_option(parser)
    add_format_option(parser)


def run(args: argparse.Namespace) -> int:
    from pedrag.runtime.store.session_store import SessionNotFound, SessionStore, StoreError
    from pedrag.runtime.turn.audit import format_trace

    try:
        store = SessionStore(args.db, tenant=args.tenant)
    except StoreError as error:
        print(f"pedrag audit: {error}", file=sys.stderr)
        return 2
    with store:
        if args.list or not args.session:
            if not args.list:
                print("pedrag audit: give a SESSION id or --list", file=sys.stderr)
                return 2
            for item in store.list_sessions():
                meta = item["meta"]
                print(
                    f"{item['id']}  {item['updated_at']:%Y-%m-%d %H:%M}  {item['turns']:3d} turns  "
                    f"{meta.get('theory')}  {meta.get('exercise') or '-'}  {meta.get('persona') or ''}"
                )
            return 0
        try:
            meta, state, turns = store.load_session(args.session)
            records = store.audit_records(args.session)
        except SessionNotFound:
            print(f"pedrag audit: no session {args.session!r} in {store.url}", file=sys.stderr)
            return 1
    if args.format == "json":
        print(
            json.dumps(
                {
                    "session": args.session,
                    "meta": meta,
                    "turns": turns,
                    "state": state,
                    "records": records,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    header = (
        f"{args.session}: theory {meta.get('theory')}, exercise {meta.get('exercise')}, "
        f"seed {meta.get('seed')}, {meta.get('backend')}, {turns} turns"
    )
    print(format_trace(records, session=header), end="")
    return 0
