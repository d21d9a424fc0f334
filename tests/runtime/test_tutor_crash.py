"""The tutor killed mid-session: a real `pedrag chat --session ID` process, SIGKILLed at random
moments, then resumed by id (issue 4: "a turn is one transaction ... resume a session by id").

The store's own kill test (test_store.py) proves the transaction; this one proves the turn loop
uses it: whatever the moment of the kill, the database holds exactly the turns that were
committed, each with its audit record, the state is the state after the last of them, and a
resumed process carries on as if nothing had happened. Offline turns are deterministic for a
seed (the rule engine draws from ``Random(f"{seed}:{turn}")``), so an uninterrupted in-process
run with the same messages is the reference for every turn's state and reply.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from pedrag.runtime.llm.personas import PERSONAS
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.store.session_store import SessionStore
from pedrag.runtime.turn.tutor import Tutor
from tests.runtime.tutor_fixtures import CURRICULUM, shipped

ROOT = Path(__file__).resolve().parents[2]
SEED = 5
KILLS = 3
MESSAGES = [
    *PERSONAS["struggling-sarah"].messages(6, topic="arithmetic"),
    *PERSONAS["answer-seeker"].messages(6, topic="arithmetic"),
    "I think it is 56",
    "is it fifty-six?",
    *PERSONAS["injector"].messages(6, topic="arithmetic"),
] * 16  # a few hundred turns: more than a killed run gets through


def _reference() -> list[tuple[dict, str]]:
    """(state, reply) after each turn of an uninterrupted run."""
    tutor = Tutor(shipped(), curriculum=CURRICULUM, store=MemoryStore())
    session = tutor.start(exercise="mult_7x8", seed=SEED, session_id="reference")
    return [
        (session.state.to_dict(), result.tutor)
        for result in (tutor.turn(session, message) for message in MESSAGES)
    ]


def _chat(db: Path, session_id: str, script: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PEDRAG_"))}
    return subprocess.Popen(
        [sys.executable, "-m", "pedrag.cli", "chat", "--db", str(db), "--session", session_id]
        + ["--curriculum", str(CURRICULUM), "--script", str(script)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _committed(db: Path, session_id: str) -> tuple[int, dict, list[dict]]:
    with SessionStore(str(db)) as store:
        _, state, turns = store.load_session(session_id)
        return turns, state, store.audit_records(session_id)


def test_a_tutor_killed_mid_turn_resumes_from_its_last_committed_turn(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    with SessionStore(str(db)) as store:
        session = Tutor(shipped(), curriculum=CURRICULUM, store=store).start(
            exercise="mult_7x8", seed=SEED
        )
    reference = _reference()
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    script = tmp_path / "messages.txt"
    turns = 0
    for kill in range(KILLS + 1):
        script.write_text("\n".join(MESSAGES[turns:]) + "\n", encoding="utf-8")
        child = _chat(db, session.id, script)
        assert child.stdout is not None
        header = child.stdout.readline()
        assert header.startswith(f"session {session.id} "), child.communicate()[1]
        assert (f"resumed after turn {turns}" in header) == (turns > 0), header
        where = f"seed {seed}, run {kill}"
        if kill < KILLS:
            time.sleep(rng.uniform(0.01, 0.2))
            os.kill(child.pid, signal.SIGKILL)
            out, err = child.communicate()
            assert child.returncode == -signal.SIGKILL, f"{where}: chat ended on its own:\n{err}"
        else:
            out, err = child.communicate(timeout=60)
            assert child.returncode == 0, f"{where}:\n{err}"
        shown = out.count("\ntutor>") + out.startswith("tutor>")

        committed, state, records = _committed(db, session.id)
        assert committed >= turns, f"{where}: committed turns were lost"
        # Every turn the process printed was committed first; at most the turn the kill cut
        # off between its commit and its print is committed without having been shown.
        assert turns + shown <= committed <= turns + shown + 1, where
        assert [record["turn"] for record in records] == list(range(1, committed + 1)), where
        if committed:
            expected_state, _ = reference[committed - 1]
            assert state == expected_state, f"{where}: state is not turn {committed}'s"
        assert [record["tutor"] for record in records] == [
            reply for _, reply in reference[:committed]
        ], where
        turns = committed

    assert turns == len(MESSAGES)
