"""The streamed turn: the pipeline's stages with the actor's reply given out as it is written.

Runtime, what :meth:`~pedrag.runtime.turn.tutor.Tutor.stream` runs. Takes the tutor (a
:class:`~pedrag.runtime.turn.context.TurnHost`), a session and a student message; gives the
pieces of the reply, each only once the detector has cleared it, and commits the turn after the
last one (its :class:`~pedrag.runtime.turn.session.TurnResult` is ``session.results[-1]``).

Stages 1-5 are the pipeline's (``pipeline.prepare``) and 9-11 its ``commit``. On a risky turn
(the contract requires the judge), an exam turn or one over the ceiling, the reply is supervised
whole first (``supervision.supervise``) and then given out sentence by sentence; on any other
the actor's deltas go through a :class:`~pedrag.runtime.turn.streaming.StreamGuard` (seed 2,
§3.5: hold a fence until it closes, then release it if safe or replace it).
"""

from __future__ import annotations

import re
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

from pedrag.runtime.llm.interface import LLMError, LLMRefusal, open_stream
from pedrag.runtime.store.safe_text import clean_text
from pedrag.runtime.turn.commit import commit
from pedrag.runtime.turn.context import Outcome, TurnContext, TurnHost
from pedrag.runtime.turn.generation import generation_input
from pedrag.runtime.turn.generator import SAFE_LINE, build_request
from pedrag.runtime.turn.pipeline import prepare, student_text
from pedrag.runtime.turn.session import Session
from pedrag.runtime.turn.streaming import MAX_STREAM_SECONDS, StreamGuard
from pedrag.runtime.turn.supervision import (
    check,
    detector_for,
    fallbacks,
    over_ceiling,
    progress_lines,
    supervise,
)


@dataclass
class StreamProgress:
    """What the streaming path knows about its reply, read when the turn is committed."""

    mode: str  # "streamed" or "buffered"
    outcome: Outcome | None = None  # the buffered path's supervised reply
    drafts: list[dict[str, Any]] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)  # rule ids of replaced units
    completed: bool = False  # the model's stream ran to its end
    fallback: bool = False  # the action's template (or the neutral line) was given out
    interrupted: bool = False  # the caller stopped reading before the end

    def to_dict(self, pieces: int) -> dict[str, Any]:
        completed = self.completed if self.mode == "streamed" else self.outcome is not None
        return {
            "mode": self.mode,
            "pieces": pieces,
            "completed": completed,
            "withheld": list(self.withheld),
            "interrupted": self.interrupted,
        }


def stream_turn(host: TurnHost, session: Session, text: object) -> Iterator[str]:
    """One supervised turn whose reply reaches the caller while the model writes it (see
    :meth:`~pedrag.runtime.turn.tutor.Tutor.stream`). A generator never started runs no turn."""
    context = prepare(host, session, student_text(text))
    progress = StreamProgress(
        mode="buffered"
        if context.contract.judge_required
        or over_ceiling(context)
        or context.exam_reply is not None
        else "streamed"
    )
    if progress.mode == "buffered":
        pieces = _buffered_pieces(context, progress)
    else:
        pieces = _streamed_pieces(context, progress)
    shown: list[str] = []
    before, after = progress_lines(context)
    pieces = _framed(pieces, before, after)
    try:
        for piece in pieces:
            shown.append(piece)  # appended before the yield: a piece yielded was seen
            yield piece
    except GeneratorExit:
        progress.interrupted = True
        pieces.close()  # stops the model's stream; its usage is counted now
    reply = "".join(shown)
    outcome = progress.outcome
    if outcome is None or outcome.reply != reply:
        # Interrupted, or streamed: the record says what the student actually saw.
        outcome = Outcome(
            reply,
            check(detector_for(context), reply, context.text),
            outcome.judge if outcome else None,
            progress.fallback or (outcome.fallback if outcome else False),
            outcome.revised if outcome else False,
            outcome.drafts if outcome else progress.drafts,
        )
    commit(context, outcome, progress.to_dict(len(shown)))


def _buffered_pieces(context: TurnContext, progress: StreamProgress) -> Generator[str, None, None]:
    """A risky turn: the whole reply through stages 6-8 first, then given out in pieces."""
    outcome = supervise(context)
    progress.outcome = outcome
    yield from pieces_of(outcome.reply)


def _streamed_pieces(context: TurnContext, progress: StreamProgress) -> Generator[str, None, None]:
    """Stages 6-7 on the live stream (seed 2, §3.5: hold a fence until it closes, then
    release it if safe or replace it). No revision here: what is out cannot be redone."""
    text = context.text
    detector = detector_for(context)
    given = generation_input(context)
    guard = StreamGuard(
        detector, student_message=text, whole_prefix=True, stop_after_withholding=True
    )
    draft: dict[str, Any] = {"n": 1, "flagged": False, "reason": "", "streamed": True}
    progress.drafts.append(draft)
    upstream = open_stream(context.backend, build_request(given))
    started = False  # leading whitespace is held back, as generate() strips it
    deadline = time.monotonic() + MAX_STREAM_SECONDS
    try:
        for delta in upstream:
            if time.monotonic() > deadline:
                context.failures.append(
                    {"stage": "generator", "error": "the stream ran past its time budget"}
                )
                break
            delta = clean_text(delta)
            if not started:
                delta = delta.lstrip()
                started = bool(delta)
            piece = guard.feed(delta)
            if piece:
                yield piece
            if guard.stopped:
                break
        else:
            if not guard.text.strip():
                raise LLMRefusal("the actor returned an empty reply", role="actor")
            piece = guard.finish()
            if piece:
                yield piece
            progress.completed = True
    except LLMError as error:
        # Fail closed mid-stream: what is out was cleared and stays; what is held is dropped.
        context.failures.append({"stage": "generator", "error": f"{type(error).__name__}: {error}"})
    finally:
        upstream.close()  # a stop, an error or the caller's close(): the model stops too
        verdict = guard.verdict
        draft.update(flagged=verdict.flagged, reason=verdict.reason)
        progress.withheld = list(dict.fromkeys(f.rule_id for f in guard.withheld))
    if progress.completed and not guard.withheld:
        return
    # The model's part ended early (withheld unit or error): the action's template follows,
    # checked together with what is already out; a neutral line if that trips.
    released = guard.released
    separator = "" if not released or released[-1].isspace() else " "
    for fallback in fallbacks(context, given.topic):
        if not check(detector, released + separator + fallback, text).flagged:
            progress.fallback = True
            yield separator + fallback
            return
    if not released:
        progress.fallback = True
        yield SAFE_LINE


def _framed(
    pieces: Generator[str, None, None], before: str, after: str
) -> Generator[str, None, None]:
    try:
        if before:
            yield before + " "
        yield from pieces
        if after:
            yield " " + after
    finally:
        pieces.close()


_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_SENTENCE = re.compile(r".+?(?:[.!?]\s+|\Z)", re.DOTALL)


def pieces_of(reply: str) -> Iterator[str]:
    """A whole reply in the pieces a stream gives out: sentences, and fences whole."""
    position = 0
    for match in _FENCE.finditer(reply):
        yield from _sentences(reply[position : match.start()])
        yield match.group(0)
        position = match.end()
    yield from _sentences(reply[position:])


def _sentences(text: str) -> Iterator[str]:
    for match in _SENTENCE.finditer(text):
        if match.group(0):
            yield match.group(0)
