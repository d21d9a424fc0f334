"""The worker threads a worker process runs its turns in: one hop off the event loop per turn.

Runtime, the HTTP service. Takes a synchronous call (a turn: its key check, its session's read,
the Tutor and the commit, ``app._turn_in_thread``); gives its result to the event loop, the
call having run in one of the ``TURN_THREADS`` threads of :class:`TurnThreads`.

Why not AnyIO's ``to_thread.run_sync``, which FastAPI uses for every plain ``def`` route: it
hands the call over through a ``queue.Queue`` (a Python-level condition variable) and a
capacity limiter, about 85 us of CPU per hop against 55 for ``loop.run_in_executor`` on a
``ThreadPoolExecutor`` (one caller; 130 against 60 with eight at once), and a turn is the
request a deployment answers most. What AnyIO's hop guarantees is kept: the call runs in a
copy of the caller's context (the request id reaches the turn's log lines), a caller that is
cancelled still waits for its turn to end (a turn is never abandoned halfway, as
``run_sync`` without ``abandon_on_cancel``), and one worker process holds at most
``TURN_THREADS`` turns in progress (AnyIO's default limit, 40), the rest waiting their turn.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

TURN_THREADS = 40
"""Turns one worker process runs at once (AnyIO's default thread limit, which they had)."""


class TurnThreads:
    """A pool of ``TURN_THREADS`` threads for turns, started lazily, stopped by :meth:`close`."""

    def __init__(self, threads: int = TURN_THREADS) -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="pedrag-turn")

    async def run(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)`` in a turn thread, in a copy of the caller's context; if the caller
        is cancelled meanwhile, it waits for the call to end, then is cancelled."""
        context = contextvars.copy_context()
        done = asyncio.get_running_loop().run_in_executor(self._pool, context.run, call, *args)
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            await asyncio.wait([done])  # the turn ends (and commits) before the caller goes
            raise

    def close(self) -> None:
        """Wait for the turns in progress, then stop the threads."""
        self._pool.shutdown(wait=True)
