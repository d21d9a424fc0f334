"""The deterministic detector: does a drafted reply reveal code or the hidden answer?

Runtime stage 7 (DESIGN, "The runtime turn"). Takes the generator's draft, the code mode the
contract implies (``lenient``, or ``strict`` when the help ceiling forbids code, H0-H4), the
exercise's hidden :class:`AnswerKey`, and optionally the student's last message and the current
step's expected value. Gives a :class:`DetectorVerdict`: the :class:`Finding` spans that break
the contract, each with a stable ``rule_id`` and a one-line reason for the audit record.

Why deterministic: seed 2, §3.5 — the detector is the layer injection cannot talk round, and it
can be exhaustively unit-tested. The judge (stage 8) covers what it misses by design (plain-prose
reveals of non-numeric answers, number words outside English, French, German, Spanish,
Portuguese and Italian). The passes live in their own modules and are composed here:
``detect_code`` (fenced, indented and inline code), ``detect_answer`` (the answer in any
spelling, the solution reproduced), ``detect_encoded`` (base64 / base32 / hex / url / rot13
payloads that decode to either). ``streaming`` applies the same checks to a streamed reply.

This module holds the result types the passes share; the passes import them from here, so the
composition in :func:`detect` imports the passes when it runs rather than at module load.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pedrag.kernel.rungs import FULL_SOLUTION, allows_code, parse_rung


class CodeMode(StrEnum):
    """How much code a reply may carry (seed 2, §3.5)."""

    LENIENT = "lenient"
    """Default (H5, H6): short illustrative snippets and fill-in-the-blank templates pass; a
    complete function (a signature and its return) does not."""
    STRICT = "strict"
    """The contract allows no code: even a bare signature or a blanked template is flagged."""
    OPEN = "open"
    """H7, the full solution: the lenient rules, and a complete function may stay."""


class FindingKind(StrEnum):
    """What a finding gives away; ``rule_id`` says which rule saw it."""

    CODE = "code"
    ANSWER = "answer"
    SIZE = "size"
    """Past the reply budget: not read at all (a tutor reply has no business being that long)."""


RULE_IDS: tuple[str, ...] = (
    "code-fence",
    "indented-code",
    "inline-code",
    "complete-function",
    "encoded-payload",
    "answer-reveal",
    "step-reveal",
    "solution-reveal",
    "reply-too-long",
)
"""Every rule id a finding can carry; stable, so audits and judge prompts can refer to them."""


@dataclass(frozen=True)
class Finding:
    """One span of the reply (``reply[start:end]``) that a rule flagged."""

    kind: FindingKind
    reason: str
    start: int
    end: int
    rule_id: str

    def __post_init__(self) -> None:
        if self.rule_id not in RULE_IDS:
            raise ValueError(f"unknown detector rule id {self.rule_id!r}")
        if not 0 <= self.start <= self.end:
            raise ValueError(f"bad finding span {self.start}..{self.end}")

    def shifted(self, offset: int) -> Finding:
        """The same finding in a text where this one's text starts at ``offset``."""
        return Finding(self.kind, self.reason, self.start + offset, self.end + offset, self.rule_id)


@dataclass(frozen=True)
class DetectorVerdict:
    """The detector's answer for one reply: flagged when any rule found something."""

    findings: tuple[Finding, ...] = ()

    @property
    def flagged(self) -> bool:
        return bool(self.findings)

    @property
    def rule_ids(self) -> tuple[str, ...]:
        """The distinct rule ids that fired, in order of first appearance."""
        return tuple(dict.fromkeys(finding.rule_id for finding in self.findings))

    @property
    def reason(self) -> str:
        """One sentence for the audit record and the judge's revise prompt."""
        if not self.findings:
            return "no code or answer reveal found"
        first = self.findings[0]
        more = len(self.findings) - 1
        return first.reason + (f" (and {more} more finding{'s' * (more > 1)})" if more else "")


@dataclass(frozen=True)
class AnswerKey:
    """The hidden part of an exercise (DESIGN, curriculum ``exercises``).

    ``answer`` and each of ``accept`` are spellings of the answer; a numeric one is matched in
    any spelling of its value. ``solution`` is matched by token overlap and its intermediate
    results (``a op b = c``). ``prompt``, the exercise text the student sees, tells the detector
    which numbers are givens, so restating one is not a reveal unless it is stated as a result.
    """

    answer: str
    accept: tuple[str, ...] = ()
    solution: str | None = None
    prompt: str | None = None

    def __post_init__(self) -> None:
        if not self.answer.strip():
            raise ValueError("an answer key needs a non-empty answer")
        object.__setattr__(self, "accept", tuple(self.accept))


MAX_REPLY_CHARS = 16_000
"""The reply budget: a longer reply (or stream) is flagged ``reply-too-long`` without being
read, so a hostile or runaway reply costs constant time and ends in the template. A tutor reply
is a few hundred words (the actor's ``max_tokens`` is 400)."""

"""DESIGN, hint ladder: H0-H4 allow no code."""


def code_mode_for_ceiling(ceiling: str | int) -> CodeMode:
    """The code mode a help ceiling implies: ``strict`` at H0-H4, ``lenient`` at H5-H6 (no
    complete function: H6 is pseudocode with blanks), ``open`` at H7."""
    rung = parse_rung(ceiling)
    if not allows_code(rung):
        return CodeMode.STRICT
    return CodeMode.OPEN if rung == FULL_SOLUTION else CodeMode.LENIENT


@dataclass(frozen=True)
class Detector:
    """The detector configured for one turn: the contract's code mode and the exercise's key
    (None when no exercise is active: then only the code rules run)."""

    code_mode: CodeMode = CodeMode.LENIENT
    answer: AnswerKey | None = None
    previous_replies: tuple[str, ...] = ()
    """The session's last few tutor replies (oldest first): an answer given in pieces, one
    per turn, is caught on the reply that completes it (issue 26, item 4)."""

    def check(
        self,
        reply: str,
        *,
        student_message: str | None = None,
        step_value: str | None = None,
        context: str | None = None,
    ) -> DetectorVerdict:
        """Run every pass over ``reply``; findings come back sorted by position.

        ``student_message``: the student's last message (what it states is no longer hidden).
        ``step_value``: the current step's expected value. ``context``: earlier turns; a target
        found there counts only where the reply states it as a result."""
        if len(reply) > MAX_REPLY_CHARS:
            return DetectorVerdict((too_long_finding(reply),))
        if student_message is not None and len(student_message) > MAX_REPLY_CHARS:
            student_message = None  # too long to read as one answer: it waives nothing
        # Imported here: the passes import the result types from this module.
        from pedrag.runtime.detect.answer import find_answer_reveals
        from pedrag.runtime.detect.code import find_code
        from pedrag.runtime.detect.encoded import find_encoded_payloads

        findings = [*find_code(reply, CodeMode(self.code_mode))]
        if self.answer is not None or step_value is not None:
            findings += find_answer_reveals(
                reply,
                self.answer,
                student_message=student_message,
                step_value=step_value,
                context=context,
                previous_replies=self.previous_replies,
            )
        findings += find_encoded_payloads(
            reply,
            self.answer,
            student_message=student_message,
            step_value=step_value,
            context=context,
        )
        findings.sort(key=lambda finding: (finding.start, finding.end, finding.rule_id))
        return DetectorVerdict(tuple(dict.fromkeys(findings)))


def too_long_finding(reply: str) -> Finding:
    """The ``reply-too-long`` finding for a reply past :data:`MAX_REPLY_CHARS`."""
    return Finding(
        FindingKind.SIZE,
        f"the reply is {len(reply):,} characters, over the {MAX_REPLY_CHARS:,}-character budget",
        0,
        len(reply),
        "reply-too-long",
    )


def detect(
    reply: str,
    *,
    code_mode: CodeMode | str = CodeMode.LENIENT,
    answer: AnswerKey | None = None,
    student_message: str | None = None,
    step_value: str | None = None,
    context: str | None = None,
) -> DetectorVerdict:
    """Check one complete reply; :class:`Detector` is the reusable form, ``streaming`` the
    streamed one."""
    return Detector(CodeMode(code_mode), answer).check(
        reply, student_message=student_message, step_value=step_value, context=context
    )
