"""The streamed turn: the pipeline's stages with the actor's reply given out as it is written.

Runtime, what :meth:`~pedrag.runtime.turn.tutor.Tutor.stream` runs. Takes the tutor (a
:class:`~pedrag.runtime.turn.context.TurnHost`), a session and a student message; gives the
pieces of the reply, each only once the detector has cleared it, and commits the turn after the
last one (its :class:`~pedrag.runtime.turn.session.TurnResult` is ``session.results[-1]``).

Stages 1-5 are the pipeline's (``pipeline.prepare``) and 9-11 its ``commit``. On a risky turn
(the contract requires the judge), an exam turn or one over the ceiling, the reply is supervised
whole first (``supervision.supervise``) and then given out sentence by sentence; on any other
the actor's deltas go through a :class:`~pedrag.runtime.turn.streaming.StreamGuard` (seed 2,
§3.5: hold a fence until it closes, then release it if safe or replace it) until a unit is
withheld or makes the judge due under the plain turn's rule; from there the whole draft is
reviewed as the plain turn reviews it (issue 26, item 7).
"""

from __future__ import annotations

import re
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

from pedrag.runtime.detect.detector import MAX_REPLY_CHARS
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
    consults_judge,
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
    reviewed: bool = False  # the rest of the draft was held and reviewed whole (streamed)

    def to_dict(self, pieces: int) -> dict[str, Any]:
        completed = self.completed if self.mode == "streamed" else self.outcome is not None
        return {
            "mode": self.mode,
            "pieces": pieces,
            "completed": completed,
            "withheld": list(self.withheld),
            "interrupted": self.interrupted,
            "reviewed": self.reviewed,
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
    """Stages 6-8 on the live stream (seed 2, §3.5: hold a fence until it closes, then
    release it if safe or replace it). Units go out while the detector clears them and the
    judge is not due under the plain turn's rule (``supervision.consults_judge``: a number or
    a word of the hidden answer at or below H4). From the first unit that is withheld or
    needs the judge, nothing more goes out: the whole draft is read and reviewed as the plain
    turn reviews it (``supervise`` with it as the first draft: detector, judge, one revision,
    template), so both make the same judge calls on the same draft; the reply follows what is
    already out when it begins with it, else the action's template does."""
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
    shown = ""  # what has been given out
    later: list[str] = []  # the model's text once the draft is to be reviewed whole
    held = 0  # characters in later
    watch = _JudgeWatch(context)
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
            if progress.reviewed:
                later.append(delta)
                held += len(delta)
                if held > MAX_REPLY_CHARS:
                    break  # the review refuses a draft this long (reply-too-long) in any case
                continue
            piece = guard.feed(delta)
            if guard.withheld or (piece and watch.due(shown + piece)):
                progress.reviewed = True  # the piece is not given out
            elif piece:
                shown += piece
                yield piece
        else:
            if not guard.text.strip():
                raise LLMRefusal("the actor returned an empty reply", role="actor")
            if not progress.reviewed:
                piece = guard.finish()
                progress.reviewed = bool(guard.withheld) or watch.due(shown + piece, whole=True)
                if piece and not progress.reviewed:
                    shown += piece
                    yield piece
            progress.completed = True
    except LLMError as error:
        # Fail closed mid-stream: what is out was cleared and stays; what is held is dropped.
        context.failures.append({"stage": "generator", "error": f"{type(error).__name__}: {error}"})
    finally:
        upstream.close()  # a stop, an error or the caller's close(): the model stops too
        written = guard.text + "".join(later)
        progress.withheld = list(dict.fromkeys(f.rule_id for f in guard.withheld))
        whole = progress.completed or held > MAX_REPLY_CHARS  # as whole as it will be
        if not (progress.reviewed and whole):  # else the draft's review checks it
            verdict = check(detector, written, text) if later else guard.verdict
            draft.update(flagged=verdict.flagged, reason=verdict.reason)
    if progress.reviewed and whole:
        outcome = supervise(context, first_draft=written.strip())
        outcome.drafts[0]["streamed"] = True
        progress.outcome = outcome
        if outcome.reply.startswith(shown):
            yield from pieces_of(outcome.reply[len(shown) :])
            return
    elif progress.completed:
        return
    # The model's part ended early (an error, the time budget) or its review did not keep
    # what is out: the action's template follows, checked together with what is already out;
    # a neutral line if that trips.
    separator = "" if not shown or shown[-1].isspace() else " "
    for fallback in fallbacks(context, given.topic, opening=not shown):
        if not check(detector, shown + separator + fallback, text).flagged:
            progress.fallback = True
            yield separator + fallback
            return
    if not shown:
        progress.fallback = True
        yield SAFE_LINE


class _JudgeWatch:
    """Whether the streamed text so far needs the judge (``consults_judge``), asked of each
    new part of it with an overlap (a number or word split across pieces is still seen), so
    a long reply costs linear time; ``whole=True`` asks of the whole text, as the plain turn
    does once its draft is complete."""

    OVERLAP = 200

    def __init__(self, context: TurnContext) -> None:
        self.context = context
        self.checked = 0

    def due(self, written: str, *, whole: bool = False) -> bool:
        start = 0 if whole else max(0, self.checked - self.OVERLAP)
        self.checked = len(written)
        return consults_judge(self.context, written[start:])


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
