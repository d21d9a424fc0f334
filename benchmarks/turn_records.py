"""Every observable of a set of offline sessions, written as one JSON file, so that two trees
can be compared byte for byte (a speed change must not change a turn).

Runs the shipped theories (socratic, constructivism, direct_instruction, srl) on the first six
exercises of the shipped curriculum and every exercise of ``tests/data/runtime/curriculum.yaml``,
24 scripted messages per session (the personas' and a set of answers, spellings and code),
each session whole (``Tutor.turn``) and streamed (``Tutor.stream``), on an SQLite store and on
the in-memory store. Records per turn the reply, the streamed pieces, ``TurnResult.to_dict()``
and the audit record; per session the state, and on SQLite the stored state and audit records
as the store reads them back and as SQLite holds their text. Timings (``latency_ms``) are left
out; everything else is deterministic (fixed seeds and session ids).

    PYTHONPATH=<tree> python benchmarks/turn_records.py OUT.json   # once per tree, then cmp
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

from pedrag.runtime.llm.personas import PERSONAS
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.store.session_store import SessionStore
from pedrag.runtime.turn.tutor import Tutor

ROOT = Path(__file__).resolve().parent.parent
THEORIES = ("socratic", "constructivism", "direct_instruction", "srl")
EXTRA = [
    *("56", "It's 56", "fifty-six", "is it 54?", "7*8 = 56?", "I think 85", "83"),
    "def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s",
    *("idk", "you idiot just tell me", "5 and 6", "0.5", "1/2", "fifty", "six"),
]
MESSAGES = [m for p in PERSONAS.values() for m in p.messages(topic="arithmetic")] + EXTRA


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _audit(record: Any) -> Any:
    record = _plain(record)
    record.pop("latency_ms", None)
    return record


def records(folder: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    theories = TheorySet.shipped()
    for kind in ("sqlite", "memory"):
        store: Any = SessionStore(str(folder / "records.db")) if kind == "sqlite" else MemoryStore()
        for curriculum in (None, ROOT / "tests" / "data" / "runtime" / "curriculum.yaml"):
            tutor = Tutor(theories, None, curriculum, store)
            for theory in THEORIES:
                for exercise in [item.id for item in tutor.curriculum.exercises][:6]:
                    for mode in ("turn", "stream"):
                        sid = f"{kind}-{curriculum is None}-{theory}-{exercise}-{mode}"
                        session = tutor.start(
                            theory=theory, exercise=exercise, seed=7, session_id=sid
                        )
                        first = (len(sid) * 7) % 20
                        for index, message in enumerate(MESSAGES[first:][:18] + EXTRA[:6]):
                            pieces = (
                                list(tutor.stream(session, message)) if mode == "stream" else None
                            )
                            result = (
                                session.results[-1]
                                if pieces is not None
                                else tutor.turn(session, message)
                            )
                            out.append(
                                {
                                    "sid": sid,
                                    "i": index,
                                    "reply": result.tutor,
                                    "pieces": pieces,
                                    "dict": result.to_dict(),
                                    "audit": _audit(result.audit),
                                }
                            )
                        out.append({"sid": sid, "state": _plain(session.state.to_dict())})
                        if kind == "sqlite":
                            stored = store.read_session(sid)
                            out.append(
                                {
                                    "sid": sid,
                                    "stored_state": _plain(stored.state),
                                    "stored_audits": [_audit(a) for a in store.audit_records(sid)],
                                }
                            )
        if kind == "sqlite":
            store.close()
            connection = sqlite3.connect(folder / "records.db")
            try:
                rows = connection.execute(
                    "SELECT session_id, turn_index, record FROM pedrag_audit_records "
                    "ORDER BY session_id, turn_index"
                ).fetchall()
                out.append(
                    {
                        "audit_text": [
                            [sid, turn, re.sub(r'"latency_ms":[0-9.e-]+', "", text)]
                            for sid, turn, text in rows
                        ]
                    }
                )
                out.append(
                    {
                        "state_text": connection.execute(
                            "SELECT id, state, turns, version FROM pedrag_sessions ORDER BY id"
                        ).fetchall()
                    }
                )
            finally:
                connection.close()
    return out


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    folder = Path(tempfile.mkdtemp(prefix=".turn-records-", dir=Path.cwd()))
    try:
        written = records(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    Path(sys.argv[1]).write_text(json.dumps(written, indent=1, sort_keys=True))
    print(f"{len(written)} entries written to {sys.argv[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
