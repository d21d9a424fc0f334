"""The results file: a grid's sessions, appended one per line as each finishes, so a run against
an endpoint can stop (a crash, Ctrl-C, a spending cap) and resume where it stopped.

Evaluation, persistence. Takes a path and the run's fingerprint (what must match for a saved
session to stand for the one the grid would run now: the grid seed, turn limit, theory,
whether learners are reseeded, and which tutor, learner voice and evaluator answered); gives
the sessions already done, by cell, and :meth:`ResultsFile.append` for each new one.

JSON Lines, one object per line: ``{"fingerprint": ..., "cell": [config, persona, exercise,
rep, exam], "session": {...}}``. A half-written last line (the process died mid-write) is
ignored and rewritten; a line from another fingerprint is an error naming the file, never
silently mixed into this run's figures.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pedrag.evaluate.records import SessionRecord, session_from_json, session_to_json

Cell = tuple[str, str, str, int, bool]


class ResultsMismatch(Exception):
    """The results file holds sessions of a different run."""


def cell_of(session: SessionRecord) -> Cell:
    return (session.config, session.persona, session.exercise, session.rep, session.exam)


class ResultsFile:
    def __init__(self, path: str | Path, fingerprint: Mapping[str, Any]) -> None:
        self.path = Path(path)
        self.fingerprint = dict(fingerprint)
        self.done: dict[Cell, SessionRecord] = {}
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        lines = self.path.read_text(encoding="utf-8").splitlines()
        kept: list[str] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                session = session_from_json(entry["session"])
            except (ValueError, KeyError, TypeError) as error:
                if number == len(lines):  # the last write was cut short: run that cell again
                    break
                raise ResultsMismatch(
                    f"{self.path}:{number}: not a results line ({type(error).__name__}); "
                    "give another --results file"
                ) from error
            if entry.get("fingerprint") != self.fingerprint:
                differs = sorted(
                    key
                    for key in set(self.fingerprint) | set(entry.get("fingerprint") or {})
                    if (entry.get("fingerprint") or {}).get(key) != self.fingerprint.get(key)
                )
                raise ResultsMismatch(
                    f"{self.path}:{number}: these results come from a different run "
                    f"({', '.join(differs)} differ); give another --results file, or delete "
                    "this one to start again"
                )
            self.done[cell_of(session)] = session
            kept.append(line)
        if len(kept) != sum(1 for line in lines if line.strip()):
            self.path.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")

    def append(self, session: SessionRecord) -> None:
        entry = {
            "fingerprint": self.fingerprint,
            "cell": list(cell_of(session)),
            "session": session_to_json(session),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
            handle.flush()
        self.done[cell_of(session)] = session
