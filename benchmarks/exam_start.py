"""CPU time of starting an exam session in a store that holds many sessions.

Why: an exam is sat once per learner, and the check that a learner has not sat it already
used to scan the tenant's latest 10,000 sessions, twice, on every exam start; it is now one
keyed read and one insert in the session's own transaction (runtime/store/exams.py). Runs
the code of whichever tree is on ``PYTHONPATH``, so alternate two trees in one run:

    for tree in /path/to/base /path/to/this base this; do
        PYTHONPATH=$tree python benchmarks/exam_start.py --sessions 10000
    done

Each run builds a fresh SQLite store of ``--sessions`` practice sessions (meta as
``Tutor.start`` writes it, spread over 500 learners), then starts ``--starts`` exam sessions,
each for a learner who has not sat the exam, and prints the CPU time per start.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEARNING = ROOT / "tests" / "data" / "runtime" / "learning.yaml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--starts", type=int, default=40)
    parser.add_argument(
        "--exercise", default="times_exam", help="mult_7x8: a practice start, for comparison"
    )
    args = parser.parse_args()

    from sqlalchemy import insert

    import pedrag
    from pedrag.runtime.llm.offline import OfflineBackend
    from pedrag.runtime.policy.theory_set import TheorySet
    from pedrag.runtime.store.schema import sessions
    from pedrag.runtime.store.session_store import SessionStore
    from pedrag.runtime.turn.tutor import Tutor

    with tempfile.TemporaryDirectory(prefix="pedrag-exam-start-") as folder:
        with SessionStore(str(Path(folder) / "db.sqlite")) as store:
            tutor = Tutor(TheorySet.shipped(), OfflineBackend(), LEARNING, store)
            model = tutor.start("socratic", exercise="mult_7x8", seed=1, learner="model")
            state = store.read_session(model.id).state
            start = datetime.now(UTC) - timedelta(days=1)
            rows = [
                {
                    "id": f"s{n:06d}",
                    "meta": {**model.meta, "learner": f"learner{n % 500}"},
                    "state": state,
                    "turns": 0,
                    "created_at": start + timedelta(seconds=n),
                    "updated_at": start + timedelta(seconds=n),
                    "tenant": "default",
                }
                for n in range(args.sessions)
            ]
            with store._transaction(write=True) as connection:
                connection.execute(insert(sessions), rows)
            for n in range(3):  # warm-up: caches, compiled statements
                tutor.start("socratic", exercise="times_exam", seed=1, learner=f"warm{n}")
            spent = []
            for n in range(args.starts):
                before = time.process_time()
                tutor.start("socratic", exercise=args.exercise, seed=1, learner=f"fresh{n}")
                spent.append((time.process_time() - before) * 1000)
    print(
        f"{Path(pedrag.__file__).resolve().parents[1]}: {args.sessions} sessions, "
        f"{args.starts} starts of {args.exercise}: median {statistics.median(spent):.2f} ms, "
        f"mean {statistics.fmean(spent):.2f} ms CPU per start"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
