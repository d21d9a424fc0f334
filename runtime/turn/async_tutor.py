"""An asyncio face for :class:`~pedrag.runtime.turn.tutor.Tutor`: the same turns, off the loop.

Runtime, the public entry for async applications (the HTTP service uses it). Takes a Tutor;
gives coroutines and an async iterator with the Tutor's meaning.

The Tutor is synchronous: its model calls (an HTTP client) and its store (SQLAlchemy, a
blocking driver) block. Each call here runs the Tutor in a worker thread (AnyIO's thread
pool, capped at its default 40 threads) so an event loop serving other requests never waits
for a model or a database. ``stream`` runs the Tutor's generator in one thread and hands each
released piece to the loop through a bounded queue; closing the async iterator early (or a
cancelled request) makes the thread close the generator at its next piece, which commits the
turn as ``interrupted`` as the sync API does (the record then counts that one piece too: the
guard had released it when the consumer left).
"""

from __future__ import annotations

import functools
import queue
import threading
from collections.abc import AsyncIterator, Callable, Generator, Mapping
from typing import Any, TypeVar, cast

import anyio
import anyio.to_thread

from pedrag.runtime.turn.tutor import Session, TurnResult, Tutor

T = TypeVar("T")

_DONE = object()


class AsyncTutor:
    """Async methods over a :class:`Tutor` (``AsyncTutor(Tutor(...))``)."""

    def __init__(self, tutor: Tutor) -> None:
        self.tutor = tutor

    async def _run(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await anyio.to_thread.run_sync(functools.partial(call, *args, **kwargs))

    async def start(
        self,
        theory: str = "socratic",
        exercise: str | None = None,
        seed: int | None = None,
        *,
        session_id: str | None = None,
        trusted: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        learner: str | None = None,
    ) -> Session:
        """:meth:`Tutor.start` in a worker thread."""
        return await self._run(
            self.tutor.start,
            theory,
            exercise,
            seed,
            session_id=session_id,
            trusted=trusted,
            meta=meta,
            learner=learner,
        )

    async def resume(self, session_id: str) -> Session:
        """:meth:`Tutor.resume` in a worker thread."""
        return await self._run(self.tutor.resume, session_id)

    async def turn(self, session: Session, text: str) -> TurnResult:
        """:meth:`Tutor.turn` in a worker thread."""
        return await self._run(self.tutor.turn, session, text)

    async def stream(self, session: Session, text: str) -> AsyncIterator[str]:
        """:meth:`Tutor.stream`: the released pieces, as the guard releases them. After the
        iterator ends the turn is committed and ``session.results[-1]`` is its record."""
        pieces: queue.Queue[object] = queue.Queue(maxsize=64)
        stop = threading.Event()

        def hand_over(item: object) -> bool:
            while not stop.is_set():
                try:
                    pieces.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def produce() -> None:
            generator = cast(Generator[str, None, None], self.tutor.stream(session, text))
            try:
                for piece in generator:
                    if not hand_over(piece):
                        break
            except BaseException as error:  # handed to the loop, raised there
                hand_over(error)
                return
            finally:
                generator.close()  # early stop: the turn is committed as interrupted
            hand_over(_DONE)

        worker = threading.Thread(target=produce, name="pedrag-stream", daemon=True)
        worker.start()
        try:
            while True:
                item = await anyio.to_thread.run_sync(pieces.get)
                if item is _DONE:
                    break
                if isinstance(item, BaseException):
                    raise item
                yield str(item)
        finally:
            # The consumer stopped (done, error, or cancelled: a client that went away). The
            # producer stops at its next piece and commits the turn in its own thread; nothing
            # here awaits, so a cancelled request does not wait for the model.
            stop.set()
