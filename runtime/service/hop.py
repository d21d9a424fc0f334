"""The hop from a worker's event loop to a thread for the service's synchronous work.

Runtime, the HTTP service. Takes a synchronous call (a turn, a session's creation: the Tutor
and the store are synchronous); gives its result to the awaiting request, the loop free
meanwhile.

Why not AnyIO's ``to_thread.run_sync``, which FastAPI's plain ``def`` routes use: each of its
hops yields to the loop twice before the call starts (a checkpoint, then the capacity
limiter's shielded checkpoint), and each extra pass of the loop polls its sockets (a system
call that hands the GIL to whichever turn thread wants it, the loop then waiting its turn to
take it back); it also enters two cancel scopes and wakes its thread through ``queue.Queue``'s
Python condition. Here a hop takes a token of the same capacity limiter (AnyIO's default, 40
threads, shared with FastAPI's routes, so one worker still holds at most 40 calls in
progress) without yielding, hands the call to the thread idle last (as AnyIO does: its caches
are the warmest; ``loop.run_in_executor`` hands it to any waiting thread, and cost more CPU per
turn in the live server, docs/service.md) through a C ``SimpleQueue``, and is woken by the one
callback that reports the result. When the limiter has no token left, the hop is AnyIO's own,
which queues for one. The call runs in a copy of the request's context (its request id, for
the log lines), as with AnyIO; its token is given back when the call ends, even if the request
stopped waiting for it.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

T = TypeVar("T")

_Job = tuple[contextvars.Context, Callable[..., Any], tuple[Any, ...], asyncio.Future[Any], object]


class ThreadHop:
    """The threads of one event loop's hops; :meth:`close` ends them (the app's lifespan)."""

    def __init__(self) -> None:
        self._idle: list[_HopThread] = []  # the thread idle last at the end
        self._threads: set[_HopThread] = set()
        self._closed = False

    async def run(self, func: Callable[..., T], *args: Any) -> T:
        """``func(*args)`` in a thread of this hop, awaited without blocking the loop."""
        limiter = anyio.to_thread.current_default_thread_limiter()
        borrower = object()
        try:
            limiter.acquire_on_behalf_of_nowait(borrower)
        except anyio.WouldBlock:
            return await anyio.to_thread.run_sync(func, *args)
        loop = asyncio.get_running_loop()
        try:
            thread = self._idle.pop() if self._idle else self._start(loop)
            future: asyncio.Future[T] = loop.create_future()
        except BaseException:
            limiter.release_on_behalf_of(borrower)
            raise
        thread.jobs.put((contextvars.copy_context(), func, args, future, borrower))
        return await future

    def _start(self, loop: asyncio.AbstractEventLoop) -> _HopThread:
        if self._closed:
            raise RuntimeError("the service's thread hop is closed")
        thread = _HopThread(self, loop, anyio.to_thread.current_default_thread_limiter())
        self._threads.add(thread)
        thread.start()
        return thread

    def _done(
        self,
        thread: _HopThread,
        future: asyncio.Future[Any],
        borrower: object,
        result: Any,
        error: BaseException | None,
    ) -> None:
        """On the loop, when a call ends: the thread is idle again, the token given back."""
        thread.limiter.release_on_behalf_of(borrower)
        if self._closed:
            thread.jobs.put(None)
        else:
            self._idle.append(thread)
        if future.cancelled():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def close(self) -> None:
        """End every thread once its call (if any) is done."""
        self._closed = True
        for thread in self._idle:
            thread.jobs.put(None)
        self._idle.clear()


class _HopThread(threading.Thread):
    def __init__(self, hop: ThreadHop, loop: asyncio.AbstractEventLoop, limiter: Any) -> None:
        super().__init__(name="pedrag hop thread", daemon=True)
        self.hop, self.loop, self.limiter = hop, loop, limiter
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()

    def run(self) -> None:
        while (job := self.jobs.get()) is not None:
            context, func, args, future, borrower = job
            result: Any = None
            error: BaseException | None = None
            if not future.cancelled():
                try:
                    result = context.run(func, *args)
                except BaseException as failure:  # handed to the awaiting request
                    error = failure
            try:
                self.loop.call_soon_threadsafe(
                    self.hop._done, self, future, borrower, result, error
                )
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                return
            del job, context, func, args, future, result, error
        self.hop._threads.discard(self)
