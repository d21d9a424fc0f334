"""An ordinary turn waits for at most two model round trips: the classifier and the analyzer
together, then the actor (issue 30). Counted from the order of call starts and ends, not timed."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from pedrag.runtime.llm.interface import LLMRequest, LLMResponse
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor
from tests.runtime.tutor_fixtures import CURRICULUM, shipped


@dataclass
class Call:
    role: str
    started: int
    ended: int = -1


class RemoteLike:
    """The offline backend's answers from a backend that is not in-process (as a model
    endpoint is not): each call records when it started and ended on one shared event counter.
    The classifier's and the analyzer's calls each wait (bounded) for the other to have
    started, as two calls in flight to a model would; called one after the other, the first
    stops waiting after ``patience`` seconds and the calls are recorded as sequential."""

    def __init__(self, patience: float = 5.0) -> None:
        self.inner = OfflineBackend()
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._clock = 0
        self._pair = threading.Barrier(2, timeout=patience)

    def _tick(self) -> int:
        with self._lock:
            self._clock += 1
            return self._clock

    def complete(self, request: LLMRequest) -> LLMResponse:
        call = Call(request.role, self._tick())
        with self._lock:
            self.calls.append(call)
        if request.role in ("classifier", "analyzer"):
            try:
                self._pair.wait()
            except threading.BrokenBarrierError:
                pass  # no partner in flight: the calls ran one after the other
        response = self.inner.complete(request)
        call.ended = self._tick()
        return LLMResponse(response.text, response.parsed, role=request.role)

    def round_trips(self) -> int:
        """The longest chain of calls each started after the previous one ended: how many
        round trips the turn waited for one after the other."""
        depth: dict[int, int] = {}
        for index, call in enumerate(self.calls):
            before = [
                depth[i] for i, other in enumerate(self.calls[:index]) if other.ended < call.started
            ]
            depth[index] = 1 + max(before, default=0)
        return max(depth.values(), default=0)


def test_an_ordinary_turn_waits_for_two_round_trips_the_reading_pair_then_the_actor() -> None:
    backend = RemoteLike()
    tutor = Tutor(shipped(), backend, CURRICULUM, MemoryStore())
    # A programming exercise: drafts that name no number or word of the answer are not judged
    # (the judge, when consulted, is a further call after the actor).
    session = tutor.start(exercise="sum_list", seed=1)
    for message in ("I think I need a loop?", "hello", "can you explain what a loop is"):
        backend.calls.clear()
        tutor.turn(session, message)
        roles = sorted(call.role for call in backend.calls)
        assert roles == ["actor", "analyzer", "classifier"], roles
        assert backend.round_trips() == 2
        actor = next(call for call in backend.calls if call.role == "actor")
        pair = [call for call in backend.calls if call.role != "actor"]
        assert all(call.ended < actor.started for call in pair)  # the actor reads both


def test_the_round_trip_count_sees_calls_made_one_after_the_other() -> None:
    # The counter itself: a sequential classifier, analyzer and actor are three round trips.
    backend = RemoteLike(patience=0.01)
    for role in ("classifier", "analyzer", "actor"):
        backend.complete(LLMRequest(role=role, messages=(("user", "hello"),)))
    assert backend.round_trips() == 3


def test_the_offline_backend_keeps_its_calls_on_the_turns_own_thread() -> None:
    # In-process answers take microseconds: a worker thread would only add CPU.
    threads: set[str] = set()

    class Offline(OfflineBackend):
        def complete(self, request: LLMRequest) -> LLMResponse:
            threads.add(threading.current_thread().name)
            return super().complete(request)

    tutor = Tutor(shipped(), Offline(), CURRICULUM, MemoryStore())
    session = tutor.start(exercise="mult_7x8", seed=1)
    tutor.turn(session, "I think I add 7 eight times?")
    assert threads == {threading.current_thread().name}
