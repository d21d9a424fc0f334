"""The language server's cyclic garbage collection around a check.

Language server stage. Takes the checks the server runs (`quiet_collector`, around
`checking.analyse`); gives them a collector that does not re-scan what the server keeps, and
the server a whole collection to run when the editor is idle (`collect_if_due`).

Why: a long-running server keeps millions of objects between checks on purpose (parsed and
resolved conditions, the solver's answers, findings and their published forms). Python's
cyclic collector re-scans that whole heap whenever a check allocates a quarter as many new
objects as it holds, which a check of a 5,000-rule file does two or three times: a one-rule
edit's re-check took 1.5 to 2.6 s of CPU in the server where a fresh `pedrag check` process,
which turns the collector off (`pedrag.cli.BATCH`), took 0.8 s. So a check runs with the
collector off, and afterwards what it made is frozen (`gc.freeze`) so no later collection
scans it again. Freezing frees no cycle, so once the objects frozen since the last whole
collection are `REGROW` times as many as that collection left, a whole collection is due:
its cost stays proportional to what the server allocates, as the collector's own rule for
its oldest generation is, with a wider margin.

A due collection is not run inside the check that made it due: that check is whichever one
crossed the line, usually a one-rule edit right after a file's open (the open froze 400,000
objects, just under the line, and the edit's 30,000 crossed it), and a whole collection of a
5,000-rule file's heap is 0.6 to 1.0 s, three times the edit's own re-check. The server runs
it once the document's findings are published and no keystroke came since
(`collect_if_due`). A host that never calls it still has its heap bounded: a check that
finds `LIMIT` times the line's growth frozen collects inline.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

REGROW = 2
"""A whole collection is due once the frozen heap is this many times its size after the
last whole collection."""

LIMIT = 2
"""A check collects inline (due collections were not run in idle time) once the growth is
this many times what made the collection due."""

_lock = threading.Lock()
_running = 0  # checks under way (the server's front-end run and its semantic run may overlap)
_heap = 0  # objects frozen right after the last whole collection
_grown = 0  # objects frozen since (an estimate: the collector's count of new objects)
_was_enabled = False  # whether the collector was on when the first check under way began


@contextmanager
def quiet_collector() -> Iterator[None]:
    """Run a check with the cyclic collector off (see the module docstring); freeze what it
    made when the last check under way ends. A collector the host
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


def due() -> bool:
    """Whether a whole collection is due (see the module docstring)."""
    return _grown > REGROW * _heap


def collect_if_due() -> bool:
    """Run a due whole collection, unless a check is under way or the host turned the
    collector off; whether one ran. For idle time: it costs a scan of the whole heap."""
    with _lock:
        if _running or not gc.isenabled() or not due():
            return False
        _collect()
        return True


def _settle() -> None:
    """Freeze what the checks made; collect inline only past `LIMIT` (see the module
    docstring). (Collecting the young generations after every check as well cost more than
    it saved: a one-rule edit at 5,000 rules 0.45 s against 0.40 s, medians of 12 in one
    process each.)"""
    global _grown
    _grown += max(gc.get_count()[0], 0)  # made, less those freed, since the last collection
    gc.freeze()
    if _grown > LIMIT * REGROW * max(_heap, 1):
        _collect()


def _collect() -> None:
    global _grown, _heap
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _heap, _grown = gc.get_freeze_count(), 0
