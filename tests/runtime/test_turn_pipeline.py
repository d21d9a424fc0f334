"""The turn as a pipeline (issue 23 item 4): one turn context the stages extend, the history
prepared once where the current row does not change, the contract handed to the judge as an
object, and the result built from the context."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.policy.policy_core import Contract, PolicyInput, compute_contract
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.action import choose_action
from pedrag.runtime.turn.commit import commit
from pedrag.runtime.turn.context import prepare_again
from pedrag.runtime.turn.contract import decide_contract
from pedrag.runtime.turn.judge import Judge, judge_request
from pedrag.runtime.turn.opening import open_turn
from pedrag.runtime.turn.reading import read
from pedrag.runtime.turn.supervision import supervise
from pedrag.runtime.turn.trusted_writes import write_trusted
from pedrag.runtime.turn.tutor import Tutor
from tests.runtime.tutor_fixtures import CURRICULUM, shipped


class CountingPolicy:
    """The real compiled policy, with its history preparations counted."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.prepared = 0

    def prepare(self, history: Any) -> Any:
        self.prepared += 1
        return self.inner.prepare(history)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _tutor() -> Tutor:
    return Tutor(shipped(), None, CURRICULUM, MemoryStore())


def test_the_history_is_prepared_once_a_turn_and_exactly_as_preparing_again_would() -> None:
    tutor = _tutor()
    session = tutor.start("socratic", "mult_7x8", seed=1)
    policy = tutor.theories["socratic"].policy
    # socratic's history calls and computed formulas read no computed or observed metric
    assert not policy.preparation_reads & policy.computed_names
    for message in ("hmm", "is it 54?", "I don't know", "hmm", "just tell me", "ok 56"):
        context = open_turn(tutor, session, message)
        counting = CountingPolicy(context.loaded.policy)
        context.loaded = SimpleNamespace(policy=counting, id=context.loaded.id)
        read(context)
        write_trusted(context)
        decide_contract(context)
        assert counting.prepared == 1
        # what the rule engine reads is the preparation of the state as written
        again = policy.prepare([*context.rows, context.state.metrics])
        assert context.prepared.state == again.state
        assert context.prepared.calls == again.calls
        choose_action(context)
        result = commit(context, supervise(context))
        assert counting.prepared == 1  # the monitors read the same preparation, updated
        assert result.audit["turn"] == session.state.turn


def test_a_changed_metric_the_preparation_reads_is_prepared_again() -> None:
    policy = shipped()["socratic"].policy
    read_metric = sorted(policy.preparation_reads - policy.computed_names)[0]
    row = dict(policy.prepare([{}]).state)
    prepared = policy.prepare([row])
    changed = row[read_metric] + 0.25 if isinstance(row[read_metric], float) else "changed"
    for name, value in ((read_metric, changed), ("unread_name", 1)):
        after = {**row, name: value}
        got = prepare_again(policy, prepared, row, after, [after])
        expected = policy.prepare([after])
        assert (got.state, got.calls) == (expected.state, expected.calls)


def test_a_stage_reading_what_no_earlier_stage_set_fails_loudly() -> None:
    tutor = _tutor()
    session = tutor.start("socratic", "mult_7x8", seed=1)
    context = open_turn(tutor, session, "hello")
    with pytest.raises(AttributeError, match="classification|inference"):
        decide_contract(context)


def test_the_turn_result_is_the_contexts_not_the_audit_records() -> None:
    tutor = _tutor()
    session = tutor.start("socratic", "mult_7x8", seed=1)
    result = tutor.turn(session, "is it 54?")
    assert result.detector == result.audit["detector"]
    assert result.detector is not result.audit["detector"]
    assert result.contract.to_dict() == result.audit["contract"]
    assert Contract.from_dict(result.audit["contract"]) == result.contract


def test_contracts_round_trip_through_their_dict_form() -> None:
    policy = shipped()["socratic"].policy
    for intent in ("attempt", "question", "hostile", "request_solution"):
        for mastery in (0.1, 0.5, 0.9):
            contract = compute_contract(
                PolicyInput.of({"mastery": mastery}, {"intent": intent}), policy
            )
            assert Contract.from_dict(contract.to_dict()) == contract
    with pytest.raises(KeyError):
        Contract.from_dict({"ceiling": "H3"})


def test_the_offline_judge_reads_the_contract_object_not_the_prompts_json() -> None:
    lenient = Contract(7, False, False, True, 7)
    strict = Contract(1, False, False, True, 7)
    draft = "```python\ndef f(x):\n    return x * 2\n```"
    backend = OfflineBackend()
    assert Judge(backend).review(lenient, draft).verdict == "allow"
    assert Judge(backend).review(strict, draft).rule_id == "code-over-ceiling"
    # The object travels with the request; the prompt's text says H7, the object H1.
    request = judge_request(lenient, draft, ())
    mixed = type(request)(**{**request.__dict__, "contract": strict})
    assert backend.complete(mixed).parsed["rule_id"] == "code-over-ceiling"
    # A request built without the object is judged from the prompt's JSON.
    bare = type(request)(**{**request.__dict__, "contract": None})
    assert backend.complete(bare).parsed["verdict"] == "allow"
