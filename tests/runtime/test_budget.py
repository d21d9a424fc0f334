"""The spending caps hold under concurrency: calls reserve their worst-case cost before they
are sent and settle it after, in the turn and (given a ledger) in the store, so racing calls
can never spend past a cap together (issue 30's note: two concurrent calls both passed the
session cap's check, exceeding it by one call).

The calls are real: the OpenAI backend (real client, real pricing, its own worst-case bound)
against the scripted server on 127.0.0.1, whose replies are held long enough that every racer
has asked before any has been answered; the ledger is a real SQLite store (PostgreSQL in
``tests/service/test_postgres.py``).
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pedrag.runtime.llm.interface import (
    LLMBudgetExceeded,
    LLMError,
    LLMMalformedOutput,
    LLMRefusal,
    LLMRequest,
    LLMResponse,
    RoleUsage,
    Usage,
)
from pedrag.runtime.llm.openai_backend import OpenAIBackend, OpenAISettings
from pedrag.runtime.llm.pricing import Price, PriceBook
from pedrag.runtime.store.errors import StoreError
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.store.session_store import SessionStore
from pedrag.runtime.turn.budget import (
    DEPLOYMENT_SCOPE,
    Budget,
    BudgetedBackend,
    SpendReservations,
    call_fits,
)
from pedrag.runtime.turn.tutor import Tutor
from tests.fake_openai import FakeOpenAI, Reply
from tests.runtime.test_tutor_streaming import scripted
from tests.runtime.tutor_fixtures import CURRICULUM, shipped

# Dollars per 1,000 tokens, dear enough that a few calls reach a cap.
PRICE = Price(input_per_1k=1.0, output_per_1k=2.0)
REQUEST = LLMRequest(role="classifier", messages=(("user", "Is it 56?"),), max_tokens=50)
HELD_S = 1.0  # how long the server holds each reply: every racer asks meanwhile
INTENT_SCHEMA = {
    "type": "object",
    "properties": {"intent": {"type": "string"}},
    "required": ["intent"],
    "additionalProperties": False,
}
STRUCTURED = LLMRequest(
    role="classifier", messages=(("user", "Is it 56?"),), json_schema=INTENT_SCHEMA, max_tokens=50
)


def priced_backend(
    fake: FakeOpenAI, roles: tuple[str, ...] = ("classifier",), price: Price = PRICE
) -> OpenAIBackend:
    settings = OpenAISettings(
        base_url=fake.base_url,
        api_key="test",
        timeout_s=30,
        retries=0,
        backoff_s=0,
        prices=PriceBook(role_prices=dict.fromkeys(roles, price), list_prices=False),
    )
    return OpenAIBackend(settings, sleep=lambda seconds: None)


def race(calls: int, call: object) -> tuple[list[LLMResponse], list[LLMBudgetExceeded]]:
    """Run ``call()`` from ``calls`` threads released at once; the answers and refusals."""
    barrier = threading.Barrier(calls)
    answers: list[LLMResponse] = []
    refusals: list[LLMBudgetExceeded] = []
    lock = threading.Lock()

    def racer() -> None:
        barrier.wait()
        try:
            response = call()  # type: ignore[operator]
        except LLMBudgetExceeded as refused:
            with lock:
                refusals.append(refused)
            return
        with lock:
            answers.append(response)

    threads = [threading.Thread(target=racer) for _ in range(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return answers, refusals


def test_the_worst_case_bound_covers_what_the_call_costs(fake_openai: FakeOpenAI) -> None:
    backend = priced_backend(fake_openai)
    fake_openai.script(Reply.text("ok", prompt_tokens=10, completion_tokens=50))
    bound = backend.max_cost_usd(REQUEST)
    assert bound is not None
    assert backend.complete(REQUEST).cost_usd <= bound
    unpriced = LLMRequest(role="actor", messages=(("user", "hi"),))
    assert backend.max_cost_usd(unpriced) is None  # no price: nothing to reserve


def test_an_uncapped_reply_is_bounded_by_the_context_window_or_by_a_cap_that_is_sent(
    fake_openai: FakeOpenAI,
) -> None:
    """The bound's reply budget: the request's ``max_tokens``; else the context window (no
    reply is longer; the room the prompt leaves is sent as the cap); else 4,096 tokens, sent
    as the cap, so that a server cannot answer past the bound. An unpriced call is sent as
    asked."""
    backend = priced_backend(fake_openai)
    uncapped = LLMRequest(role="classifier", messages=(("user", "Is it 56?"),))
    prompt = 16 + len(b"Is it 56?") + 16  # framing and one token per byte, as the bound counts

    def bound_reply(request: LLMRequest, backend: OpenAIBackend = backend) -> float:
        bound = backend.max_cost_usd(request)
        assert bound is not None
        return (bound - PRICE.cost(prompt, 0)) / PRICE.cost(0, 1)  # the reply tokens assumed

    assert bound_reply(REQUEST) == pytest.approx(50)
    assert bound_reply(uncapped) == pytest.approx(4096)
    fake_openai.script(Reply.text("ok", prompt_tokens=10, completion_tokens=4096))
    answered = backend.complete(uncapped)
    assert fake_openai.requests_to("chat")[-1]["max_tokens"] == 4096
    assert answered.cost_usd <= backend.max_cost_usd(uncapped)  # type: ignore[operator]

    windowed = priced_backend(fake_openai)
    windowed.settings = replace(windowed.settings, context_tokens=1000)
    assert bound_reply(uncapped, windowed) == pytest.approx(1000)
    fake_openai.script(Reply.text("ok"))
    windowed.complete(uncapped)
    # Sent the room the prompt leaves: a server with a larger window still stops in the bound.
    assert 900 < fake_openai.requests_to("chat")[-1]["max_tokens"] < 1000

    unpriced = LLMRequest(role="actor", messages=(("user", "hi"),))
    fake_openai.script(Reply.text("ok"))
    backend.complete(unpriced)
    assert "max_tokens" not in fake_openai.requests_to("chat")[-1]


def test_two_calls_of_one_turn_cannot_both_pass_the_session_cap(
    fake_openai: FakeOpenAI,
) -> None:
    backend = priced_backend(fake_openai)
    bound = backend.max_cost_usd(REQUEST)
    assert bound is not None
    cap = 1.5 * bound  # room for one call's worst case, not two
    fake_openai.always(Reply.text("ok").delayed(HELD_S))
    turn = BudgetedBackend(
        backend, Budget(max_session_usd=cap), session_usd=0.0, deployment_usd=0.0
    )

    answers, refusals = race(2, lambda: turn.complete(REQUEST))

    # Checked against what was spent (0 for both while both were in flight), both passed.
    assert (len(answers), len(refusals)) == (1, 1)
    assert "session spending cap" in str(refusals[0])
    assert len(fake_openai.requests_to("chat")) == 1
    assert turn.calls == 1 and turn.reserved_usd == 0.0
    assert turn.cost_usd == answers[0].cost_usd <= cap
    # Settled at its real cost, the answered call leaves room for another.
    fake_openai.always(Reply.text("ok"))
    turn.complete(REQUEST)
    assert turn.cost_usd <= cap


def test_a_failed_call_gives_its_reservation_back(fake_openai: FakeOpenAI) -> None:
    backend = priced_backend(fake_openai)
    store = MemoryStore()
    turn = BudgetedBackend(
        backend, Budget(max_deployment_usd=1.0), session_usd=0.0, deployment_usd=0.0, ledger=store
    )
    fake_openai.script(Reply.error(400, "bad request"))
    with pytest.raises(Exception, match="rejected"):
        turn.complete(REQUEST)
    assert turn.reserved_usd == 0.0 and turn.calls == 1
    assert store.spend(DEPLOYMENT_SCOPE) == 0.0


def settle_malformed_against(ledger: SpendReservations, fake: FakeOpenAI) -> None:
    """A classifier reply that is not the JSON asked for fails closed, but the server reported
    300 prompt and 40 reply tokens for it: the error carries their cost, and the turn and the
    ledger settle the reservation with it rather than giving it back (the tokens were paid)."""
    backend = priced_backend(fake)
    fake.script(Reply.text("it is about multiplication", prompt_tokens=300, completion_tokens=40))
    turn = BudgetedBackend(
        backend,
        Budget(max_session_usd=None, max_deployment_usd=10.0),
        session_usd=0.0,
        deployment_usd=0.0,
        ledger=ledger,
    )

    with pytest.raises(LLMMalformedOutput) as caught:
        turn.complete(STRUCTURED)

    cost = 300 / 1000 * 1.0 + 40 / 1000 * 2.0  # PRICE, by hand: $0.38
    spent = caught.value.spent
    assert spent is not None and spent.cost_usd == pytest.approx(cost) and spent.priced
    assert (spent.prompt_tokens, spent.completion_tokens) == (300, 40)
    assert turn.reserved_usd == 0.0 and turn.calls == 1
    assert turn.cost_usd == pytest.approx(cost) and turn.tokens == 340
    assert turn.by_role["classifier"]["calls"] == 1
    assert ledger.spend(DEPLOYMENT_SCOPE) == pytest.approx(cost)  # type: ignore[attr-defined]
    # The backend lists the failure; its ``usage`` counts it as the budget does: a call, paid
    # for, that failed (no answer was used).
    assert backend.failures[0][0] == "classifier"
    assert (backend.usage.calls, backend.usage.used_calls) == (1, 0)
    assert backend.usage.total_tokens == 340 and backend.usage.cost_usd == pytest.approx(cost)


def test_a_malformed_reply_is_settled_at_its_cost_in_memory(fake_openai: FakeOpenAI) -> None:
    settle_malformed_against(MemoryStore(), fake_openai)


def test_a_malformed_reply_is_settled_at_its_cost_in_the_store(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    with SessionStore(str(tmp_path / "spend.db")) as store:
        settle_malformed_against(store, fake_openai)


def test_a_failed_repair_round_costs_both_answers(fake_openai: FakeOpenAI) -> None:
    """Where the server does not hold replies to the schema, a malformed reply is asked for
    once more; when that fails too, both answers were paid for and both are counted."""
    backend = priced_backend(fake_openai)
    backend.profile("classifier").convention = "prompted"
    fake_openai.script(
        Reply.text("no json", prompt_tokens=200, completion_tokens=10),
        Reply.text("still none", prompt_tokens=260, completion_tokens=20),
    )
    turn = BudgetedBackend(
        backend, Budget(max_session_usd=None), session_usd=0.0, deployment_usd=0.0
    )

    with pytest.raises(LLMMalformedOutput):
        turn.complete(STRUCTURED)

    assert len(fake_openai.requests_to("chat")) == 2
    assert turn.tokens == 200 + 10 + 260 + 20
    assert turn.cost_usd == pytest.approx(460 / 1000 * 1.0 + 30 / 1000 * 2.0)


def test_an_empty_answer_without_usage_is_estimated_not_free(fake_openai: FakeOpenAI) -> None:
    """A server that answers nothing and reports no usage still read the prompt: the error
    carries an estimate of it, never zero."""
    backend = priced_backend(fake_openai)
    fake_openai.script(Reply.text("", prompt_tokens=None))
    turn = BudgetedBackend(
        backend, Budget(max_session_usd=None), session_usd=0.0, deployment_usd=0.0
    )

    with pytest.raises(LLMRefusal, match="empty answer") as caught:
        turn.complete(REQUEST)

    spent = caught.value.spent
    assert spent is not None and spent.prompt_tokens > 0 and spent.completion_tokens == 0
    assert turn.cost_usd == pytest.approx(spent.cost_usd) and turn.cost_usd > 0


def test_a_streamed_call_that_fails_counts_as_the_same_plain_call_does(
    fake_openai: FakeOpenAI,
) -> None:
    """An empty answer, streamed or not, was paid for (300 prompt and 40 reply tokens) and
    failed: both backends' usage counts it as a failed call with its tokens and cost, both
    errors carry that cost, and the budget settles the streamed call's reservation with it."""
    plain, streamed = priced_backend(fake_openai), priced_backend(fake_openai)
    empty = Reply.text("", prompt_tokens=300, completion_tokens=40)
    fake_openai.script(empty, empty)
    turn = BudgetedBackend(
        streamed, Budget(max_session_usd=None), session_usd=0.0, deployment_usd=0.0
    )

    with pytest.raises(LLMRefusal, match="empty answer") as plain_failure:
        plain.complete(REQUEST)
    stream = turn.stream(REQUEST)
    with pytest.raises(LLMRefusal, match="empty answer") as streamed_failure:
        list(stream)

    cost = 300 / 1000 * 1.0 + 40 / 1000 * 2.0  # PRICE, by hand: $0.38
    for backend, failure in ((plain, plain_failure), (streamed, streamed_failure)):
        usage = backend.usage.by_role["classifier"]
        assert (usage.calls, usage.failed_calls, usage.used_calls) == (1, 1, 0)
        assert (usage.prompt_tokens, usage.completion_tokens) == (300, 40)
        assert usage.cost_usd == pytest.approx(cost)
        assert [role for role, _ in backend.failures] == ["classifier"]
        spent = failure.value.spent
        assert spent is not None and spent.cost_usd == pytest.approx(cost) and spent.text == ""
    assert stream.response is not None and stream.response.cost_usd == pytest.approx(cost)
    assert turn.reserved_usd == 0.0 and turn.cost_usd == pytest.approx(cost)


class CompleteOnly:
    """A backend without ``stream`` (a third-party one): the budget streams it through
    ``complete``."""

    def __init__(self, inner: OpenAIBackend) -> None:
        self.inner = inner

    def complete(self, request: LLMRequest) -> LLMResponse:
        return self.inner.complete(request)

    def max_cost_usd(self, request: LLMRequest) -> float | None:
        return self.inner.max_cost_usd(request)


def test_a_streamed_call_through_complete_settles_what_its_failure_spent(
    fake_openai: FakeOpenAI,
) -> None:
    """Streamed over a backend that has only ``complete``, a malformed reply that was paid for
    is settled at its cost, as the same call is when not streamed, not given back."""
    fake_openai.script(Reply.text("no json", prompt_tokens=300, completion_tokens=40))
    turn = BudgetedBackend(
        CompleteOnly(priced_backend(fake_openai)),
        Budget(max_session_usd=None),
        session_usd=0.0,
        deployment_usd=0.0,
    )

    stream = turn.stream(STRUCTURED)
    with pytest.raises(LLMMalformedOutput):
        list(stream)

    cost = 300 / 1000 * 1.0 + 40 / 1000 * 2.0  # PRICE, by hand: $0.38
    assert stream.response is not None and stream.response.cost_usd == pytest.approx(cost)
    assert turn.reserved_usd == 0.0 and turn.cost_usd == pytest.approx(cost)


def test_every_answered_call_of_a_turn_is_in_its_cost_and_the_deployment_total(
    fake_openai: FakeOpenAI,
) -> None:
    """A whole turn on the in-memory store with no deployment cap (no ledger: the turn adds
    its cost to the deployment total when it commits): every request the server answered,
    including the structured calls whose "ok" is not the JSON asked for, costs $2.20, and
    the turn's audit, the session and the deployment total count every one of them."""
    from pedrag.runtime.turn.tutor import Tutor

    fake_openai.always(Reply.text("ok", prompt_tokens=1000, completion_tokens=600))
    backend = OpenAIBackend(
        OpenAISettings(
            base_url=fake_openai.base_url,
            api_key="test",
            retries=0,
            backoff_s=0,
            prices=PriceBook(override=PRICE, list_prices=False),
        ),
        sleep=lambda seconds: None,
    )
    store = MemoryStore()
    tutor = Tutor(backend=backend, store=store, budget=Budget(max_session_usd=None))
    session = tutor.start("socratic", "mult_7x8")

    result = tutor.turn(session, "is it 54?")

    answered = len(fake_openai.requests_to("chat"))
    assert answered >= 2 and backend.failures  # structured calls failed closed
    assert result.audit["cost_usd"] == pytest.approx(2.20 * answered)
    assert store.load_session(session.id)[1]["cost_usd"] == pytest.approx(2.20 * answered)
    assert store.spend(DEPLOYMENT_SCOPE) == pytest.approx(2.20 * answered)


def race_workers_against(ledger: SpendReservations, fake: FakeOpenAI, racers: int = 8) -> None:
    """``racers`` turns (one call each, as on as many workers) race for a deployment cap
    with room for three calls' worst case, reserving in ``ledger``; the ledger's total,
    sampled throughout, never passes the cap and ends as what the answered calls cost."""
    backend = priced_backend(fake)
    bound = backend.max_cost_usd(REQUEST)
    assert bound is not None
    cap = 3.5 * bound
    budget = Budget(max_session_usd=None, max_deployment_usd=cap)
    fake.always(Reply.text("ok").delayed(HELD_S))
    samples: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(ledger.spend(DEPLOYMENT_SCOPE))  # type: ignore[attr-defined]
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()

    def one_turn() -> LLMResponse:
        spent = ledger.spend(DEPLOYMENT_SCOPE)  # type: ignore[attr-defined]
        turn = BudgetedBackend(
            backend, budget, session_usd=0.0, deployment_usd=spent, ledger=ledger
        )
        return turn.complete(REQUEST)

    try:
        answers, refusals = race(racers, one_turn)
    finally:
        done.set()
        sampler.join()

    assert len(answers) + len(refusals) == racers
    assert 1 <= len(answers) <= 3 and refusals  # at most three worst cases fit at once
    assert all("deployment spending cap" in str(refused) for refused in refusals)
    assert len(fake.requests_to("chat")) == len(answers)
    assert samples and max(samples) <= cap
    total = ledger.spend(DEPLOYMENT_SCOPE)  # type: ignore[attr-defined]
    assert total == pytest.approx(sum(answer.cost_usd for answer in answers))
    assert total <= cap


def test_racing_turns_cannot_spend_past_the_deployment_cap_in_the_store(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    with SessionStore(str(tmp_path / "spend.db")) as store:
        race_workers_against(store, fake_openai)


def test_reservations_in_the_store_hold_the_cap(tmp_path: Path) -> None:
    with SessionStore(str(tmp_path / "spend.db")) as store:
        assert store.reserve_spend("s", 0.6, 1.0)
        assert not store.reserve_spend("s", 0.6, 1.0)  # 1.2 would pass the cap
        assert store.reserve_spend("s", 0.4, 1.0)  # exactly the cap fits
        assert not store.reserve_spend("s", 0.0, 1.0)  # unknown cost: only below the cap
        assert store.settle_spend("s", 0.6, 0.1) == pytest.approx(0.5)
        assert store.reserve_spend("s", 0.0, 1.0)
        assert store.reserve_spend("s", 5.0, None)  # no cap
        assert not store.reserve_spend("fresh", 2.0, 1.0)  # more than the cap, even alone
        assert store.spend("fresh") == 0.0
        assert store.for_tenant("other").spend("s") == 0.0  # per tenant
        with pytest.raises(StoreError, match="no spend was reserved"):
            store.settle_spend("never", 0.1, 0.1)
        with pytest.raises(StoreError, match=">= 0"):
            store.reserve_spend("s", -1.0, 1.0)


def test_a_call_fits_whole_or_not_at_all() -> None:
    assert call_fits(0.5, 0.5, 1.0) and not call_fits(0.6, 0.5, 1.0)
    assert call_fits(0.99, 0.0, 1.0) and not call_fits(1.0, 0.0, 1.0)
    assert call_fits(100.0, 5.0, None)


def test_tutors_on_one_store_cannot_spend_past_the_deployment_cap_together(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """The tutor wires the ledger: tutors on one database (as the service's workers are)
    race whole turns under a deployment cap; every model call reserves in the store, so the
    store's total never passes the cap, and it ends as the sum of what the sessions spent."""
    from pedrag.runtime.turn.tutor import Tutor

    path = str(tmp_path / "deploy.db")
    # Every answered call costs $2.20 (1,000 prompt and 600 reply tokens), under its worst
    # case (a few dollars at these prices); the structured calls' "ok" is malformed and fails
    # closed, yet is paid for like any answer. Four racing turns would spend $8.80 together
    # without reservations (each read the total before any had spent).
    cap = 5.0
    fake_openai.always(Reply.text("ok", prompt_tokens=1000, completion_tokens=600).delayed(0.3))
    budget = Budget(max_session_usd=None, max_deployment_usd=cap)
    stores = [SessionStore(path) for _ in range(4)]
    backend = OpenAIBackend(
        OpenAISettings(
            base_url=fake_openai.base_url,
            api_key="test",
            timeout_s=30,
            retries=0,
            backoff_s=0,
            prices=PriceBook(override=PRICE, list_prices=False),
        ),
        sleep=lambda seconds: None,
    )
    tutors = [Tutor(backend=backend, store=store, budget=budget) for store in stores]
    sessions = [tutor.start("socratic", "mult_7x8") for tutor in tutors]
    samples: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(stores[0].spend(DEPLOYMENT_SCOPE))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample)
    sampler.start()
    barrier = threading.Barrier(len(tutors))

    def learner(index: int) -> None:
        barrier.wait()
        tutors[index].turn(sessions[index], "is it 54?")

    threads = [threading.Thread(target=learner, args=(i,)) for i in range(len(tutors))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        done.set()
        sampler.join()
    try:
        total = stores[0].spend(DEPLOYMENT_SCOPE)
        spent = [stores[0].load_session(session.id)[1]["cost_usd"] for session in sessions]
        assert samples and max(samples) <= cap and total <= cap
        assert 0 < total == pytest.approx(sum(spent))
        # Calls were made, then refused: the first answer (even a malformed one) took $2.20
        # of the $5 and no other call's worst case fits in what is left.
        assert len(fake_openai.requests_to("chat")) >= 1
        assert total == pytest.approx(2.20 * len(fake_openai.requests_to("chat")))
    finally:
        for store in stores:
            store.close()


def test_the_turn_budget_counts_usage_in_the_backends_own_usage_type(
    fake_openai: FakeOpenAI,
) -> None:
    """One count, two views: what a turn's calls spent is a ``Usage`` (the type the backend
    keeps for the CLI and an evaluation sums), equal field by field to the backend's own, failed
    calls included; the budget's per-role record, tokens and cost are read from it. Its
    ``calls`` is the cap's count: it also holds the call refused before the server answered."""
    backend = priced_backend(fake_openai)
    fake_openai.script(
        Reply.text("It is a question.", prompt_tokens=200, completion_tokens=10),
        Reply.text("", prompt_tokens=300, completion_tokens=40),  # empty: paid for, failed
        Reply.text("Streamed.", prompt_tokens=260, completion_tokens=20),
        Reply.text("not json", prompt_tokens=100, completion_tokens=5),  # malformed
        Reply.error(400, "bad request"),  # refused before any answer: nothing spent
    )
    turn = BudgetedBackend(
        backend, Budget(max_session_usd=None), session_usd=0.0, deployment_usd=0.0
    )
    turn.complete(REQUEST)
    with pytest.raises(LLMRefusal):
        list(turn.stream(REQUEST))
    list(turn.stream(replace(REQUEST, role="actor")))
    with pytest.raises(LLMMalformedOutput):
        turn.complete(STRUCTURED)
    with pytest.raises(LLMError):
        turn.complete(REQUEST)

    assert turn.usage.to_dict() == backend.usage.to_dict()
    classifier = turn.usage.by_role["classifier"]
    assert (classifier.calls, classifier.failed_calls, classifier.used_calls) == (3, 2, 1)
    assert turn.calls == 5 and turn.usage.calls == 4  # the refused call used up a try
    assert turn.by_role == {
        "classifier": {
            "calls": 3,
            "tokens": 210 + 340 + 105,
            "cost_usd": classifier.cost_usd,
            "latency_ms": classifier.latency_ms,
            "unpriced_calls": 0,
        },
        "actor": {
            "calls": 1,
            "tokens": 280,
            "cost_usd": 0.0,
            "latency_ms": turn.usage.by_role["actor"].latency_ms,
            "unpriced_calls": 1,  # no price for the actor's model: tokens only
        },
    }
    cost = (200 + 300 + 100) / 1000 * 1.0 + (10 + 40 + 5) / 1000 * 2.0  # PRICE, by hand
    assert turn.cost_usd == pytest.approx(cost) and turn.tokens == 210 + 340 + 280 + 105
    assert not turn.cost_known


def test_the_turn_totals_read_between_calls_follow_every_recorded_call(
    fake_openai: FakeOpenAI,
) -> None:
    """The budget sums its usage once per recorded call (issue 30): tokens, cost and whether
    every call was priced, read before, between and after calls (each read twice), are the
    usage's own sums at that moment, never a sum kept from before a call."""
    backend = priced_backend(fake_openai)
    fake_openai.script(
        Reply.text("It is a question.", prompt_tokens=200, completion_tokens=10),
        Reply.text("Streamed.", prompt_tokens=260, completion_tokens=20),
        Reply.text("", prompt_tokens=300, completion_tokens=40),  # empty: paid for, failed
    )
    turn = BudgetedBackend(
        backend, Budget(max_session_usd=None), session_usd=0.0, deployment_usd=0.0
    )
    seen = []

    def read() -> None:
        for _ in range(2):
            expected = (turn.usage.total_tokens, turn.usage.cost_usd, turn.usage.cost_known)
            assert (turn.tokens, turn.cost_usd, turn.cost_known) == expected
        seen.append(turn.tokens)

    read()
    turn.complete(REQUEST)
    read()
    list(turn.stream(replace(REQUEST, role="actor")))  # no price for the actor's model
    read()
    with pytest.raises(LLMRefusal):
        turn.complete(REQUEST)
    read()
    assert seen == [0, 210, 210 + 280, 210 + 280 + 340]
    assert not turn.cost_known and turn.cost_usd > 0


def test_a_tutor_turn_records_the_usage_the_backend_counted(fake_openai: FakeOpenAI) -> None:
    """Through the Tutor: the turn record's ``usage``, ``tokens`` and ``cost_usd`` are the
    backend's own ``Usage`` of that turn, in the record's per-role form."""
    fake_openai.always(scripted())
    cheap = Price(input_per_1k=0.001, output_per_1k=0.002)  # the turn's calls fit the caps
    backend = priced_backend(fake_openai, ("classifier", "analyzer", "actor", "judge"), cheap)
    tutor = Tutor(shipped(), backend, CURRICULUM, MemoryStore())
    session = tutor.start(exercise="mult_7x8", seed=1)
    tutor.turn(session, "is it 54? I added 7 eight times")
    (record,) = tutor.store.audit_records(session.id)
    assert record["usage"] == backend.usage.turn_view() and set(record["usage"]) >= {"actor"}
    assert record["tokens"] == backend.usage.total_tokens > 0
    assert record["cost_usd"] == backend.usage.cost_usd > 0


_CALLS = st.lists(
    st.tuples(
        st.sampled_from(["classifier", "analyzer", "actor", "judge"]),
        st.integers(min_value=0, max_value=10**6),
        st.integers(min_value=0, max_value=10**6),
        st.one_of(st.floats(min_value=0, max_value=5, allow_nan=False), st.just(-0.0)),
        st.floats(min_value=0, max_value=1e5, allow_nan=False),
        st.booleans(),
        st.booleans(),
    ),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(calls=_CALLS)
def test_usage_records_and_totals_what_adding_role_usages_gives(calls: list[Any]) -> None:
    """``Usage.record`` and ``Usage.total`` build one ``RoleUsage`` each instead of one per
    sum (issue 30): the oracle adds the ``RoleUsage`` values one by one, as they did; every
    field, float bits included (``-0.0`` too), is the same."""
    usage = Usage()
    expected: dict[str, RoleUsage] = {}
    for role, prompt, completion, cost, latency, priced, failed in calls:
        response = LLMResponse(
            "x",
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=cost,
            latency_ms=latency,
            priced=priced,
        )
        usage.record(response, role, failed=failed)
        entry = RoleUsage(1, int(failed), prompt, completion, cost, latency, int(not priced))
        expected[role] = expected.get(role, RoleUsage()) + entry
    assert {role: repr(entry) for role, entry in usage.by_role.items()} == {
        role: repr(entry) for role, entry in expected.items()
    }
    assert list(usage.by_role) == list(expected)
    total = RoleUsage()
    for entry in expected.values():
        total = total + entry
    assert repr(usage.total) == repr(total)
