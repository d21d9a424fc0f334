"""Recorded offline sessions of the four shipped theories, replayed against a golden file.

What the offline tutor says, and what it stores and audits, must not change when only the
prompt's layout changes (issue 30: the actor's per-turn suffix was cut down and the offline
backend's machine data moved into typed request fields). Each turn's reply, action and rung are
kept readable; the session's state (``to_dict()``) and the turn's audit record are kept as
SHA-256 digests of their canonical JSON. Prompt-size figures (token estimates) and latencies
are left out: they measure the prompt, not the behaviour.

Regenerate on purpose with ``PEDRAG_REGEN_GOLDEN=1``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.llm.personas import PERSONAS
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor
from tests.runtime.tutor_fixtures import CURRICULUM, shipped

GOLDEN = Path(__file__).parent.parent / "data" / "runtime" / "golden" / "offline_sessions.json"
# The shipped curriculum has the teaching material (hints, worked examples, misconceptions,
# restatements) the offline actor fills its wordings from; the runtime fixture has none.
SHIPPED_CURRICULUM = Path(__file__).parent.parent.parent / "theories" / "curriculum.yaml"
SESSIONS = (
    (CURRICULUM, "mult_7x8"),
    (CURRICULUM, "sum_list"),
    (SHIPPED_CURRICULUM, "mult_7x8"),
    (SHIPPED_CURRICULUM, "add_38_47"),
)
TURNS = 12
# Prompt-size estimates and timings: not behaviour (the offline backend counts 4 characters
# a token of the prompt it was sent).
_VOLATILE = {"latency_ms", "tokens", "prompt_tokens", "completion_tokens", "total_tokens"}
_EXTRA_MESSAGES = (
    "I think it's 54?",
    "I'm really worried I'll never get this. Is it 15 because 7 plus 8?",
    "7 times 8 is 7+7+7+7+7+7+7 = 48, so 48",
    "just tell me the answer please",
    "I added 7 and 8 and got 15",
    "is it 75? I did 30 plus 40 and 8 plus 7",
    "I'm stuck and upset, I tried 7 x 4 = 28 and then 28 + 28 = 54",
    "56",
)


def _masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list | tuple):
        return [_masked(v) for v in value]
    return value


def _digest(value: Any) -> str:
    text = json.dumps(_masked(value), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def record() -> dict[str, Any]:
    messages = [m for p in PERSONAS.values() for m in p.messages(topic="arithmetic")]
    sessions: dict[str, Any] = {}
    for number, theory in enumerate(shipped().ids):
        for curriculum, exercise in SESSIONS:
            store = MemoryStore()
            tutor = Tutor(shipped(), OfflineBackend(), curriculum, store)
            name = f"{theory}/{curriculum.parent.name}/{curriculum.stem}/{exercise}"
            session = tutor.start(theory=theory, exercise=exercise, seed=number, session_id="s")
            pool = [*_EXTRA_MESSAGES, *messages]
            turns = []
            for index in range(TURNS):
                message = pool[(number * 7 + index * 3) % len(pool)]
                result = tutor.turn(session, message)
                turns.append(
                    {
                        "student": message,
                        "tutor": result.tutor,
                        "action": result.action,
                        "rung": result.rung,
                        "state": _digest(session.state.to_dict()),
                    }
                )
            audits = store.audit_records("s")
            for turn, audit in zip(turns, audits, strict=True):
                turn["audit"] = _digest(audit)
            sessions[name] = turns
    return sessions


def test_offline_sessions_of_every_shipped_theory_match_the_golden_file() -> None:
    recorded = record()
    assert len(recorded) == len(SESSIONS) * len(shipped().ids)  # no two share a name
    text = json.dumps(recorded, indent=1, ensure_ascii=False) + "\n"
    if os.environ.get("PEDRAG_REGEN_GOLDEN"):
        GOLDEN.write_text(text, "utf-8")
    assert GOLDEN.read_text("utf-8") == text, (
        f"{GOLDEN} differs; regenerate with PEDRAG_REGEN_GOLDEN=1 only for a wanted change"
    )
