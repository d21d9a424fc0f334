"""The language server's cyclic garbage collection around a check.

Language server stage. Takes the checks the server runs (`quiet_collector`, around
`checking.analyse`); gives them a collector that does not re-scan what the server keeps.

Why: a long-running server keeps millions of objects between checks on purpose (parsed and
resolved conditions, the solver's answers, findings and their published forms). Python's
cyclic collector re-scans that whole heap whenever a check allocates a quarter as many new
objects as it holds, which a check of a 5,000-rule file does two or three times: a one-rule
edit's re-check took 1.5 to 2.6 s of CPU in the server where a fresh `pedrag check` process,
which turns the collector off (`pedrag.cli.BATCH`), took 0.8 s. So a check runs with the
collector off; afterwards what it made is collected once (the youngest generations only: the
objects this check made, not the heap kept before it), and what survived is frozen
(`gc.freeze`) so no later collection scans it again. Freezing never frees a cycle that dies
later, so when the frozen heap has grown to `REGROW` times its size after the last whole
collection, it is unfrozen and collected whole once: the cost of those whole collections
stays proportional to what the server allocates, as the collector's own rule for its oldest
generation is.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

REGROW = 2
"""The frozen heap is collected whole once it is this many times its size after the last
whole collection."""

_lock = threading.Lock()
_running = 0  # checks under way (the server's front-end run and its semantic run may overlap)
_frozen_after_whole = 0  # objects frozen right after the last whole collection
_was_enabled = False  # whether the collector was on when the first check under way began


@contextmanager
def quiet_collector() -> Iterator[None]:
    """Run a check with the cyclic collector off (see the module docstring); collect what it
    made and freeze the survivors when the last check under way ends. A collector the host
    turned off stays off and nothing is frozen."""
    global _running, _was_enabled
    with _lock:
        if _running == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0 and _was_enabled:
                _settle()
                gc.enable()


def _settle() -> None:
    """Collect the young generations (what the checks made), freeze what survived, and
    collect everything once when the frozen heap has grown `REGROW`-fold."""
    global _frozen_after_whole
    gc.collect(1)
    gc.freeze()
    if gc.get_freeze_count() > REGROW * max(_frozen_after_whole, 1):
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        _frozen_after_whole = gc.get_freeze_count()
