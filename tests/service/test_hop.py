"""The service's hop to a thread (runtime/service/hop.py): the call's result or error reaches
the request, in the request's context, off the loop's thread; the hop holds a token of AnyIO's
default limiter for as long as the call runs, so one worker's calls in progress stay bounded."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import anyio.to_thread
import pytest

from pedrag.runtime.service.hop import ThreadHop

NAME: contextvars.ContextVar[str] = contextvars.ContextVar("name", default="-")


def test_a_call_runs_off_the_loop_in_the_requests_context_and_gives_its_result() -> None:
    async def main() -> None:
        hop = ThreadHop()
        loop_thread = threading.get_ident()
        NAME.set("request-7")
        where, name = await hop.run(lambda: (threading.get_ident(), NAME.get()))
        assert where != loop_thread and name == "request-7"
        # The thread idle last takes the next call: one thread for calls one after another.
        again = await hop.run(threading.get_ident)
        assert again == where
        with pytest.raises(KeyError, match="lost"):
            await hop.run(lambda: {}["lost"])
        assert anyio.to_thread.current_default_thread_limiter().borrowed_tokens == 0
        hop.close()

    asyncio.run(main())


def test_calls_in_progress_never_exceed_the_limiters_tokens() -> None:
    running = 0
    most = 0
    lock = threading.Lock()

    def work() -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)
        with lock:
            running -= 1
        return 1

    async def main() -> None:
        limiter = anyio.to_thread.current_default_thread_limiter()
        limiter.total_tokens = 3
        hop = ThreadHop()
        assert sum(await asyncio.gather(*(hop.run(work) for _ in range(10)))) == 10
        assert limiter.borrowed_tokens == 0
        hop.close()

    asyncio.run(main())
    assert most == 3


def test_a_cancelled_request_keeps_its_token_until_its_call_ends() -> None:
    release = threading.Event()

    async def main() -> None:
        limiter = anyio.to_thread.current_default_thread_limiter()
        hop = ThreadHop()
        waiting = asyncio.ensure_future(hop.run(release.wait))
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert limiter.borrowed_tokens == 1  # the thread still runs the call
        release.set()
        for _ in range(200):
            if limiter.borrowed_tokens == 0:
                break
            await asyncio.sleep(0.01)
        assert limiter.borrowed_tokens == 0
        hop.close()

    asyncio.run(main())


def test_closing_ends_the_threads() -> None:
    async def main() -> set[threading.Thread]:
        hop = ThreadHop()
        await asyncio.gather(*(hop.run(time.sleep, 0.02) for _ in range(3)))
        threads = set(hop._threads)
        hop.close()
        return threads

    threads = asyncio.run(main())
    assert len(threads) == 3
    for thread in threads:
        thread.join(timeout=5)
        assert not thread.is_alive()
