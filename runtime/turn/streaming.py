"""The detector on a streamed reply: release text as it arrives, hold what could be a reveal.

Runtime stage 7 on the live stream (seed 2, §3.5: "on the live output stream it holds tokens
inside a code fence until the fence closes, then releases the block if it is safe or replaces it
with an in-voice line if not"). Takes the chunks of a streamed reply and the turn's
:class:`~pedrag.runtime.detect.detector.Detector`; gives back, chunk by chunk, the text that is safe to
show now, and at the end the :class:`~pedrag.runtime.detect.detector.DetectorVerdict` for the whole reply.

What is held: a code fence from its opening backticks until it closes (a fence split across
chunks, "``" + "`py", is still a fence); a run of bare or indented code lines until a prose line
ends it; and every other sentence until it is complete, so the answer and inline-code rules see
it whole. A held unit the detector flags is replaced by ``replacement``. Units are cut by the
text alone, never by where a chunk ended, so the released text does not depend on chunking.
What is not caught here: a reveal spread over several sentences (solution reproduction) shows
only in the final verdict, which is why the judge still sees the full draft — unless
``whole_prefix`` is set: then each unit is checked together with the text released before it
(all of it while short, then a window of it plus a whole check each time it has doubled: linear
work), so the unit that completes a spread reveal is the one held. The reply budget
(``MAX_REPLY_CHARS``) stops the release with the replacement line.
``stop_after_withholding`` ends the release at the first replaced unit: the model's text after
a reveal builds on it, so the caller ends the reply there instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pedrag.runtime.detect.code import code_line_signals
from pedrag.runtime.detect.detector import (
    MAX_REPLY_CHARS,
    Detector,
    DetectorVerdict,
    Finding,
    too_long_finding,
)

MAX_STREAM_SECONDS = 120.0
"""The stream's time budget: a stream still running after this long is cut (the tutor records
it and sends the template), so a server that never ends its stream cannot hold a turn."""

PREFIX_WINDOW = 1_000
"""With ``whole_prefix``, a unit is checked with at least this much of the released text."""

DEFAULT_REPLACEMENT = (
    "I'll hold that part back so you can work it out - let's take it step by step."
)

_FENCE_START = re.compile(r"`{3,}|(?m:^[ \t]{0,3})~{3,}")
_INDENTED = re.compile(r"(?: {4}|\t)")  # match(text, pos) anchors at pos; "^" would not
_SENTENCE_END = re.compile(r"[.!?](?=\s)")


@dataclass(frozen=True)
class _Fence:
    start: int
    marker: str
    """The opening run, e.g. "```" or "~~~~"; the fence closes at a run at least as long."""
    search_from: int


class StreamGuard:
    """Feed it the chunks of one reply; it returns what may be shown now.

    >>> guard = StreamGuard(Detector())
    >>> guard.feed("Here is a hint. ``") + guard.feed("`py\\nx = 1\\n```\\n") + guard.finish()
    'Here is a hint. ```py\\nx = 1\\n```\\n'
    """

    def __init__(
        self,
        detector: Detector | None = None,
        *,
        student_message: str | None = None,
        step_value: str | None = None,
        context: str | None = None,
        replacement: str = DEFAULT_REPLACEMENT,
        whole_prefix: bool = False,
        stop_after_withholding: bool = False,
    ) -> None:
        self.detector = detector or Detector()
        self.replacement = replacement
        self.whole_prefix = whole_prefix
        self.stop_after_withholding = stop_after_withholding
        self._turn = {
            "student_message": student_message,
            "step_value": step_value,
            "context": context,
        }
        self._text = ""
        self._cursor = 0  # everything before it has been released or replaced
        self._fence: _Fence | None = None
        self._code_run: int | None = None  # start of a held run of code lines
        self._withheld: list[Finding] = []
        self._finished = False
        self._verdict: tuple[int, DetectorVerdict] | None = None
        self._released = ""  # everything given back so far, replacements included
        self._whole_checked = 1  # length of the released text at the last whole check
        self._scanned = (-1, 0)  # (unit start, offset before which no unit end was found)
        self._stopped = False

    # --- public -------------------------------------------------------------------------

    def feed(self, chunk: str) -> str:
        """Take the next chunk; return the text that is safe to show now (maybe empty)."""
        if self._finished:
            raise RuntimeError("feed() after finish()")
        self._text += chunk
        if len(self._text) > MAX_REPLY_CHARS and not self._stopped:
            # The reply budget: what is held is dropped, nothing more is released.
            self._withheld.append(too_long_finding(self._text))
            held = self._text[self._cursor :]
            leading = held[: len(held) - len(held.lstrip())]
            released = self._give(leading + self.replacement if held.strip() else "")
            self._stopped = True
            return released
        return self._advance(final=False)

    def finish(self) -> str:
        """End of stream: judge whatever is still held (an unclosed fence as it is)."""
        if self._finished:
            return ""
        released = self._advance(final=True)
        self._finished = True
        return released

    @property
    def text(self) -> str:
        """Everything fed so far, as the model wrote it."""
        return self._text

    @property
    def verdict(self) -> DetectorVerdict:
        """The detector's verdict on everything fed so far (the whole reply after finish)."""
        if self._verdict is None or self._verdict[0] != len(self._text):
            verdict = self.detector.check(self._text, **self._turn)
            self._verdict = (len(self._text), verdict)
        return self._verdict[1]

    @property
    def withheld(self) -> tuple[Finding, ...]:
        """Findings of the units that were replaced, with offsets in :attr:`text`."""
        return tuple(self._withheld)

    @property
    def released(self) -> str:
        """Everything given back so far (replacements included): what the reader has seen."""
        return self._released

    @property
    def stopped(self) -> bool:
        """True once a unit was replaced under ``stop_after_withholding``: nothing more will
        be released, whatever is fed."""
        return self._stopped

    # --- the state machine ----------------------------------------------------------------

    def _advance(self, *, final: bool) -> str:
        out: list[str] = []
        while not self._stopped:
            step = self._step_in_fence(final) if self._fence else self._step_outside(final)
            if step is None:
                break
            out.append(step)
        return "".join(out)

    def _step_in_fence(self, final: bool) -> str | None:
        fence = self._fence
        assert fence is not None
        closing = re.compile(re.escape(fence.marker[0]) + "{" + str(len(fence.marker)) + ",}")
        match = closing.search(self._text, fence.search_from)
        if match is None or (match.end() == len(self._text) and not final):
            if not final:
                # Still open, or the closing run may grow: keep holding, and next time search
                # only the new text (a closing run may have begun just before it).
                resume = max(fence.search_from, len(self._text) - 2 * len(fence.marker) - 64)
                if match is not None:
                    resume = min(resume, match.start())
                self._fence = _Fence(fence.start, fence.marker, resume)
                return None
            end = len(self._text)
        else:
            end = match.end()
        self._fence = None
        return self._release(fence.start, end)

    def _step_outside(self, final: bool) -> str | None:
        text, start = self._text, self._cursor
        fence = _FENCE_START.search(text, start)
        if fence and fence.end() == len(text) and not final:
            limit = fence.start()  # "``" may yet become "```": nothing from here is decided
            fence_known = False
        elif fence:
            limit, fence_known = fence.start(), True
        else:
            limit, fence_known = len(text), final
        if start < limit:
            end = self._unit_end(start, limit, closes_at_limit=fence_known)
            if end is not None:
                return self._take_unit(start, end)
        if start == limit and fence_known and fence is not None:
            released = self._flush_code_run(start)
            self._fence = _Fence(fence.start(), fence.group(0).strip(), fence.end())
            return released
        if final and start == len(text):
            released = self._flush_code_run(start)
            return released or None
        return None

    def _unit_end(self, start: int, limit: int, *, closes_at_limit: bool) -> int | None:
        """End of the complete unit starting at ``start``: a line (with its newline), a
        sentence inside a prose line, or the text up to a fence; None when not complete yet."""
        text = self._text
        # Resume where the last search from this start ended, so a long unit that arrives in
        # many chunks is scanned once, not once per chunk.
        scanned = self._scanned[1] if self._scanned[0] == start else start
        newline = text.find("\n", scanned, limit)
        line_start = start == 0 or text[start - 1] == "\n"
        if not (line_start and _INDENTED.match(text, start)):
            sentence = _SENTENCE_END.search(text, scanned, limit)
            if sentence and (newline == -1 or sentence.end() <= newline):
                return sentence.end()
        if newline != -1:
            return newline + 1
        # Nothing ends before limit - 1 (a "." there may yet be followed by a space).
        self._scanned = (start, max(start, limit - 1))
        return limit if closes_at_limit else None

    def _take_unit(self, start: int, end: int) -> str:
        """Hold a unit in the current code run, or release it (after the run it ends)."""
        text = self._text
        unit = text[start:end]
        whole_line = (start == 0 or text[start - 1] == "\n") and unit.endswith("\n")
        in_run = self._code_run is not None
        if whole_line and (
            (not unit.strip() and in_run)
            or (unit.strip() and _INDENTED.match(unit))
            or code_line_signals(unit, in_block=in_run)
        ):
            if self._code_run is None:
                self._code_run = start
            self._cursor = end
            return ""
        released = self._flush_code_run(start)
        return released + self._release(start, end)

    def _flush_code_run(self, end: int) -> str:
        if self._code_run is None:
            return ""
        start, self._code_run = self._code_run, None
        return self._release(start, end, advance=False)

    def _release(self, start: int, end: int, *, advance: bool = True) -> str:
        """Check ``text[start:end]`` (after the released text with ``whole_prefix``); give it
        back or the replacement."""
        if advance:
            self._cursor = end
        if self._stopped:
            return ""
        unit = self._text[start:end]
        if not unit.strip():
            return self._give(unit)
        if self.whole_prefix:
            prefix = self._checked_prefix()
            verdict = self.detector.check(prefix + unit, **self._turn)
            # Offsets in the checked text -> offsets in the model's text, kept inside the unit.
            shift = start - len(prefix)
            findings = [
                Finding(
                    finding.kind,
                    finding.reason,
                    min(max(finding.start + shift, start), end),
                    min(max(finding.end + shift, start), end),
                    finding.rule_id,
                )
                for finding in verdict.findings
            ]
        else:
            verdict = self.detector.check(unit, **self._turn)
            findings = [finding.shifted(start) for finding in verdict.findings]
        if not verdict.flagged:
            return self._give(unit)
        self._withheld += findings
        leading = unit[: len(unit) - len(unit.lstrip())]
        trailing = unit[len(unit.rstrip()) :]
        released = self._give(leading + self.replacement + trailing)
        self._stopped = self.stop_after_withholding
        return released

    def _checked_prefix(self) -> str:
        """What a unit is checked together with under ``whole_prefix``: everything released,
        while that is short; then the last :data:`PREFIX_WINDOW` characters, and the whole of
        it again each time it has doubled since the last whole check. So a long reply costs
        linear time, not quadratic; a reveal spread wider than the window is still caught at
        the next whole check (and in :attr:`verdict`)."""
        released = self._released
        if len(released) <= PREFIX_WINDOW or len(released) >= 2 * self._whole_checked:
            self._whole_checked = max(len(released), 1)
            return released
        cut = released.rfind(" ", 0, len(released) - PREFIX_WINDOW)
        return released[cut + 1 :] if cut != -1 else released[-PREFIX_WINDOW:]

    def _give(self, text: str) -> str:
        self._released += text
        return text
