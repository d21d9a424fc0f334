"""The turn threads (runtime/service/turn_threads.py) keep what AnyIO's hop guaranteed: the
caller's context, a cancelled caller waiting for its turn, a bound on turns at once; and the
service freezes start-up's objects out of full collections while it runs, and only then."""

from __future__ import annotations

import asyncio
import contextvars
import gc
import tempfile
import threading
from pathlib import Path

from fastapi.testclient import TestClient

from pedrag.runtime.service.app import ServiceSettings, create_app
from pedrag.runtime.service.turn_threads import TurnThreads

REQUEST = contextvars.ContextVar("request", default="-")


def test_a_call_runs_off_the_loop_in_the_callers_context() -> None:
    threads = TurnThreads()

    async def caller() -> tuple[str, str, str]:
        REQUEST.set("r-17")
        ran = await threads.run(lambda: (threading.current_thread().name, REQUEST.get()))
        return threading.current_thread().name, *ran

    try:
        loop_thread, call_thread, seen = asyncio.run(caller())
    finally:
        threads.close()
    assert call_thread != loop_thread and call_thread.startswith("pedrag-turn")
    assert seen == "r-17"


def test_a_cancelled_caller_waits_for_its_call_to_end() -> None:
    threads = TurnThreads()
    release, started, ended = threading.Event(), threading.Event(), threading.Event()

    def turn() -> None:
        started.set()
        release.wait(10)
        ended.set()

    async def scenario() -> tuple[bool, bool, bool]:
        task = asyncio.create_task(threads.run(turn))
        while not started.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        await asyncio.sleep(0.05)
        waiting = not task.done()  # still waiting: the turn has not ended
        release.set()
        try:
            await task
        except asyncio.CancelledError:
            return waiting, ended.is_set(), True
        return waiting, ended.is_set(), False

    try:
        waiting, turn_ended, cancelled = asyncio.run(scenario())
    finally:
        threads.close()
    assert waiting and turn_ended and cancelled


def test_no_more_calls_run_at_once_than_there_are_threads() -> None:
    threads = TurnThreads(threads=2)
    lock = threading.Lock()
    running = [0, 0]  # now, most at once
    release = threading.Event()

    def turn() -> None:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        release.wait(10)
        with lock:
            running[0] -= 1

    async def scenario() -> None:
        calls = [asyncio.create_task(threads.run(turn)) for _ in range(5)]
        for _ in range(5000):  # until two calls run (a third would have had its chance too)
            if running[0] >= 2:
                break
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.05)
        release.set()
        await asyncio.gather(*calls)

    try:
        asyncio.run(scenario())
    finally:
        threads.close()
    assert running[1] == 2


def test_start_up_objects_are_frozen_while_the_service_runs_and_thawed_after() -> None:
    gc.unfreeze()
    with tempfile.TemporaryDirectory() as folder:
        app = create_app(ServiceSettings(db=str(Path(folder) / "s.db")), backend=None)
        with TestClient(app) as client:
            assert client.get("/healthz").status_code == 200
            assert gc.get_freeze_count() > 10_000  # the app, its theories, the modules
        assert gc.get_freeze_count() == 0
