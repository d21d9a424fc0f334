"""AsyncTutor: the Tutor's turns from asyncio, run off the event loop."""

from __future__ import annotations

import asyncio
import threading
import time

from pedrag.runtime.llm.interface import LLMRequest, LLMResponse, LLMStream
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.async_tutor import AsyncTutor
from pedrag.runtime.turn.tutor import Tutor

SENTENCES = ("Think about groups. ", "What is one group worth? ", "And how many are there? ")


class SlowActor:
    """Offline for every role; the actor streams three sentences, 0.2 s apart."""

    def __init__(self) -> None:
        self.offline = OfflineBackend()

    def complete(self, request: LLMRequest) -> LLMResponse:
        if request.role == "actor":
            return LLMResponse(text="".join(SENTENCES))
        return self.offline.complete(request)

    def stream(self, request: LLMRequest) -> LLMStream:
        if request.role != "actor":
            return LLMStream(lambda handle: iter([self.offline.complete(request).text]))

        def deltas(handle: LLMStream):  # type: ignore[no-untyped-def]
            for sentence in SENTENCES:
                time.sleep(0.2)
                yield sentence

        return LLMStream(deltas)


def tutor() -> Tutor:
    return Tutor(TheorySet.shipped(), SlowActor(), store=MemoryStore())


def test_turns_run_off_the_event_loop_which_keeps_ticking() -> None:
    async_tutor = AsyncTutor(tutor())
    ticks = 0

    async def ticker(stop: asyncio.Event) -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    async def main() -> tuple[str, list[str]]:
        stop = asyncio.Event()
        task = asyncio.create_task(ticker(stop))
        session = await async_tutor.start("socratic", seed=3)
        pieces = [piece async for piece in async_tutor.stream(session, "how do I start?")]
        stop.set()
        await task
        return session.id, pieces

    session_id, pieces = asyncio.run(main())
    # The stream took >= 0.6 s of model time; a blocked loop would have ticked about once.
    assert ticks >= 20
    records = async_tutor.tutor.store.audit_records(session_id)
    assert "".join(pieces) == records[-1]["tutor"] and len(records) == 1
    assert records[-1]["stream"]["interrupted"] is False


def test_leaving_the_stream_early_commits_the_turn_as_interrupted() -> None:
    async_tutor = AsyncTutor(tutor())

    async def main() -> tuple[str, str]:
        session = await async_tutor.start("socratic", seed=3)
        stream = async_tutor.stream(session, "how do I start?")
        first = await stream.__anext__()
        await stream.aclose()
        return session.id, first

    session_id, first = asyncio.run(main())
    store = async_tutor.tutor.store
    for thread in threading.enumerate():  # the producer thread commits on its own, then ends
        if thread.name == "pedrag-stream":
            thread.join(timeout=10)
    record = store.audit_records(session_id)[-1]
    assert record["stream"]["interrupted"] is True
    assert record["tutor"].startswith(first)
    assert "And how many are there?" not in record["tutor"]
    assert not [t for t in threading.enumerate() if t.name == "pedrag-stream" and t.is_alive()]


def test_a_session_started_from_asyncio_belongs_to_its_learner() -> None:
    store = MemoryStore()  # learners need no registration in the memory store
    async_tutor = AsyncTutor(Tutor(TheorySet.shipped(), store=store))

    async def main() -> str | None:
        session = await async_tutor.start("socratic", "add_38_47", seed=1, learner="ada")
        await async_tutor.turn(session, "I think it's 85.")
        return session.learner

    assert asyncio.run(main()) == "ada"
    assert store.load_learner_goals("ada")  # the graded answer reached the learner's record
