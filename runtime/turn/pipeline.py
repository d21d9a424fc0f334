"""The turn as a pipeline: the stages, in DESIGN's order, over one turn context.

Runtime, what :meth:`~pedrag.runtime.turn.tutor.Tutor.turn` and ``stream`` run. Takes the tutor
(a :class:`~pedrag.runtime.turn.context.TurnHost`), a session and a student message; gives the
:class:`~pedrag.runtime.turn.session.TurnResult` (:func:`run_turn`), or the prepared context
that the streamed turn supervises on the live stream (:func:`prepare`).

The stages, each a module of ``pedrag.runtime.turn``:

1. ``opening`` — the context, the budget and the budgeted backend;
2-3. ``reading`` — pre-classifier (enums only) and context analyzer;
   ``trusted_writes`` — the grader's verdict, conduct and mastery, the goal in scope;
3-4. ``contract`` — inferred and computed metrics over the history prepared once, the policy
   core's contract (no student text reaches it);
5. ``action`` — the rule engine's action, the teaching material, grounding;
6-8. ``generation`` and ``supervision`` — the actor's draft, detector, judge, one revision,
   else the action's template;
9-11. ``commit`` — response and behavioural monitors, audit record and state in one
   transaction.
"""

from __future__ import annotations

from dataclasses import replace

from pedrag.runtime.store.safe_text import clean_text
from pedrag.runtime.turn.action import choose_action
from pedrag.runtime.turn.commit import commit
from pedrag.runtime.turn.context import TurnContext, TurnHost
from pedrag.runtime.turn.contract import decide_contract
from pedrag.runtime.turn.opening import open_turn
from pedrag.runtime.turn.reading import read
from pedrag.runtime.turn.session import Session, TurnResult
from pedrag.runtime.turn.supervision import check, detector_for, progress_lines, supervise
from pedrag.runtime.turn.trusted_writes import write_trusted


def student_text(text: object) -> str:
    """The student's message, cleaned; anything but a ``str`` is refused."""
    if not isinstance(text, str):
        raise TypeError(f"a student message is a str, got {type(text).__name__}")
    return clean_text(text)


def prepare(host: TurnHost, session: Session, text: str) -> TurnContext:
    """Stages 1-5: budget, reading the message, trusted writes, contract, action."""
    context = open_turn(host, session, text)
    read(context)
    write_trusted(context)
    decide_contract(context)
    choose_action(context)
    return context


def run_turn(host: TurnHost, session: Session, text: object) -> TurnResult:
    """One supervised turn, committed; what the student sees."""
    context = prepare(host, session, student_text(text))
    outcome = supervise(context)
    before, after = progress_lines(context)
    if before or after:
        framed = " ".join(part for part in (before, outcome.reply, after) if part)
        outcome = replace(
            outcome,
            reply=framed,
            final_verdict=check(detector_for(context), framed, context.text),
        )
    return commit(context, outcome)
