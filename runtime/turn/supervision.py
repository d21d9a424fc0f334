"""Stages 7-8 over the turn context: the draft checked, judged, revised once, or replaced.

Takes the turn context after the action stage; gives the turn's
:class:`~pedrag.runtime.turn.context.Outcome`: the reply the student is given, the detector's
verdict on it, the judge's verdict, whether it was revised or failed closed, and every draft's
verdicts for the audit. The detector runs on every draft; the judge where the contract requires
it (or a low-rung draft touches the answer's ground, ``judge.must_consult``); a draft that fails
review is written once more with a note naming the rules it broke (never the finding's text);
anything but ``allow`` then is the action's template, itself checked, and the neutral line if
even that trips. Also here: the detector for the turn, the fail-closed replies in order and the
grader's confirmation and next-exercise lines around the reply.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pedrag.kernel.rungs import rung_name
from pedrag.runtime.course.grounding import pointer_reply, unsupported_claim
from pedrag.runtime.detect.detector import Detector, DetectorVerdict, code_mode_for_ceiling
from pedrag.runtime.learning.material import fingerprint as fingerprint_of
from pedrag.runtime.learning.material import first_reply_wordings, placeholders
from pedrag.runtime.llm.interface import LLMError
from pedrag.runtime.llm.offline import AROUND, grader_preface
from pedrag.runtime.store.safe_text import clean_text
from pedrag.runtime.turn.context import Outcome, TurnContext
from pedrag.runtime.turn.generation import generation_input
from pedrag.runtime.turn.generator import (
    SAFE_LINE,
    fill_template,
    generate,
    template_reply,
)
from pedrag.runtime.turn.judge import Judge, JudgeVerdict, must_consult
from pedrag.runtime.turn.text import as_written


def detector_for(context: TurnContext) -> Detector:
    """The turn's detector: code strictness from the ceiling, the hidden answer unless the
    turn explains; the last replies, since an answer given one piece per turn is caught on the
    turn completing it (issue 26)."""
    info = context.exercise
    return Detector(
        code_mode=code_mode_for_ceiling(context.contract.ceiling),
        answer=None if context.explains() else (info.key if info else None),
        previous_replies=tuple(result.tutor for result in context.session.results[-3:]),
    )


def check(detector: Detector, reply: str, student_message: str) -> DetectorVerdict:
    return detector.check(reply, student_message=student_message)


def over_ceiling(context: TurnContext) -> bool:
    return context.choice.rung > context.contract.ceiling


def consults_judge(context: TurnContext, draft: str) -> bool:
    """Whether the judge sees ``draft`` this turn (``judge.must_consult`` on the turn's
    contract and hidden answer): the plain and the streamed turn ask here."""
    key = context.exercise.key if context.exercise else None
    return must_consult(context.contract, draft, key)


def supervise(context: TurnContext, first_draft: str | None = None) -> Outcome:
    """Stages 6-8 for a prepared turn: generate, detect, judge; revise once, else fail
    closed to the action's template. ``first_draft``: the actor's first draft, already
    written (the streamed turn's, read whole), reviewed as a generated one would be."""
    backend, contract, text = context.backend, context.contract, context.text
    failures = context.failures
    detector = detector_for(context)
    if context.exam_reply is not None:
        # seed 2, §3.5: an exam turn is answered from a template; no model writes to the
        # learner while an exam is active (`pedrag.runtime.learning.exam`).
        reply = context.exam_reply
        return Outcome(reply, check(detector, reply, text), None, False, False, [])
    if over_ceiling(context):
        # The theory has no action at or below this ceiling (a coverage gap the compiler
        # reports): nothing is generated for an action the contract does not allow.
        failures.append(
            {"stage": "selector", "error": f"no action at or below {rung_name(contract.ceiling)}"}
        )
        return Outcome(SAFE_LINE, DetectorVerdict(), None, True, False, [])
    given = generation_input(context)
    drafts: list[dict[str, Any]] = []
    revised = False
    judge_verdict: JudgeVerdict | None = None
    grounding = context.grounding
    key = context.exercise.key if context.exercise else None
    rejected: list[str] = []  # every rule id that failed a draft this turn

    def attempt(note: str | None) -> tuple[str | None, DetectorVerdict | None]:
        if note is None and first_draft is not None:
            draft = first_draft
        else:
            try:
                draft, _ = generate(
                    backend, given if note is None else replace(given, revision_note=note)
                )
                draft = clean_text(draft)
            except LLMError as error:
                failures.append({"stage": "generator", "error": f"{type(error).__name__}: {error}"})
                return None, None
        verdict = check(detector, draft, text)
        drafts.append({"n": len(drafts) + 1, "flagged": verdict.flagged, "reason": verdict.reason})
        return draft, verdict

    def review(draft: str, verdict: DetectorVerdict) -> tuple[str, tuple[str, ...]]:
        """The same review for every draft: the detector's verdict, then the judge where
        the contract requires it. Gives the outcome and the rule ids that failed it."""
        nonlocal judge_verdict
        if verdict.flagged:
            rejected.extend(verdict.rule_ids)
            return "revise", verdict.rule_ids
        if not consults_judge(context, draft):
            return "allow", ()
        sources = list(context.policy.sources)
        passages = grounding.for_prompt() if grounding is not None else []
        judge_verdict = Judge(backend).review(contract, draft, sources, passages, key)
        if judge_verdict.failure:
            failures.append({"stage": "judge", "error": judge_verdict.failure})
        # seed 2, §4.4: record the judge's reason per draft, not only the last verdict.
        drafts[-1].update(
            judge=judge_verdict.verdict,
            judge_rule_id=judge_verdict.rule_id,
            judge_reason=judge_verdict.reason,
        )
        if judge_verdict.verdict != "allow":
            rejected.append(judge_verdict.rule_id)
            return judge_verdict.verdict, (judge_verdict.rule_id,)
        # A grounded draft the judge let through still meets the support rule in code (a
        # citation no passage has, a quotation no passage holds, a cited sentence its
        # passage does not support): a model judge is told the rule, this enforces it.
        if grounding is not None:
            problem = unsupported_claim(draft, passages)
            if problem is not None:
                drafts[-1].update(support=problem)
                rejected.append("grounding")
                return "revise", ("grounding",)
        return "allow", ()

    # docs/runtime.md, "Revision": a first draft that fails review is written once more
    # and reviewed exactly as the first was; anything but "allow" then is the template.
    draft, verdict = attempt(None)
    if draft is not None and verdict is not None:
        outcome, rule_ids = review(draft, verdict)
        if outcome == "revise":
            revised = True
            draft, verdict = attempt(revision_note(rule_ids))
            if draft is not None and verdict is not None:
                outcome, _ = review(draft, verdict)
        if outcome == "allow" and draft is not None and verdict is not None:
            return Outcome(draft, verdict, judge_verdict, False, revised, drafts)
    # Fail closed: the action's template, itself checked; a neutral line if even that trips.
    replies = fallbacks(context, given.topic)
    # A grounded turn rejected for support gets a pointer to its passages first.
    if grounding is not None and "grounding" in rejected:
        replies.insert(0, pointer_reply(grounding))
    for fallback in replies:
        final = check(detector, fallback, text)
        if not final.flagged:
            return Outcome(fallback, final, judge_verdict, True, revised, drafts)
    return Outcome(SAFE_LINE, DetectorVerdict(), judge_verdict, True, revised, drafts)


def fallbacks(context: TurnContext, topic: str, *, opening: bool = True) -> list[str]:
    """The fail-closed replies in order: the action's template, its wordings that need no
    teaching material, the neutral line, each after the grader's verdict on a wrong answer
    (:func:`verdicts`; ``opening=False`` where the reply goes on from text already shown);
    the same lines without it only after every line with it. Any said before in the session
    goes after the rest of its kind, and one identical to the previous reply last, so failing
    closed does not make the tutor repeat itself."""
    action = context.action
    plain = [
        fill_template(text, topic)
        for text in getattr(action, "variants", ())
        if not set(placeholders(text)) - {"topic"}
    ]
    # as the session's first reply, no line that says it puts an earlier reply another way
    base = [*first_reply_wordings([template_reply(action, topic), *plain], context.said), SAFE_LINE]
    # the same lines with a few content-free words around them, for a long session
    around = [frame.replace("{wording}", line) for frame in AROUND for line in base]
    bare = list(dict.fromkeys([*base, *around]))
    said_first = verdicts(context) if opening else []
    lines = list(dict.fromkeys([f"{verdict} {line}" for line in bare for verdict in said_first]))
    told = set(lines)
    lines += bare
    previous = str(context.said.get("last_fp", ""))
    said = set(context.said.get("recent", ()))  # issue 27: no reply twice in a session
    return sorted(
        lines,
        key=lambda line: (
            fingerprint_of(line) == previous,
            line not in told,
            fingerprint_of(line) in said,
        ),
    )


def verdicts(context: TurnContext) -> list[str]:
    """The grader's verdict on this turn's wrong or ungradable answer, as a failed-closed
    reply opens (a learner who is not told a wrong answer was wrong takes it for right): as
    the actor says it, quoting the learner's answer, unless the detector refuses that alone
    (the quote is what it read as the answer: "2 6 12" holds 12), then quoting nothing. Each
    reply it opens is checked whole like any fallback."""
    facts, text = context.assessment.grade.facts, context.text
    quoted = grader_preface(facts, text)
    if not quoted:
        return []
    unquoted = grader_preface(facts, text, quoting=False)
    if check(detector_for(context), quoted, text).flagged:
        return [unquoted]
    return list(dict.fromkeys([quoted, unquoted]))


def progress_lines(context: TurnContext) -> tuple[str, str]:
    """After a correct graded answer: the grader's confirmation before the reply, and the
    next exercise after it (seed 2, §3.5: correctness is the grader's fact, never the
    model's claim). Each is checked against the hidden answers it could touch."""
    if not context.solved_now or context.exam_reply is not None:
        return "", ""  # an exam's result is its own templated reply
    text = context.text
    grade = context.assessment.grade
    if grade.run is not None:
        before = f"That's right: your code passes all {len(grade.run.outcomes)} tests."
    else:
        before = f"That's right: {as_written(grade.candidate or '', text)} is correct."
    if check(detector_for(context), before, text).flagged:
        before = "That's right."
    following = context.following
    if following is None:
        after = "" if context.exercise is None else "That was the last open exercise for now."
    else:
        after = f"Next exercise: {following.prompt}"
        if (
            following.key is not None
            and check(
                Detector(
                    code_mode=code_mode_for_ceiling(context.contract.ceiling),
                    answer=following.key,
                ),
                after,
                "",
            ).flagged
        ):
            after = "Let's move on to the next exercise."
    return before, after


_RULE_MEANING = {
    "code-fence": "it showed a code block",
    "indented-code": "it showed indented code",
    "inline-code": "it showed code inline",
    "complete-function": "it showed a complete function, which only the full solution may",
    "encoded-payload": "it hid code or the answer in an encoding",
    "answer-reveal": "it gave away the answer, in some spelling",
    "step-reveal": "it gave away the current step's value",
    "solution-reveal": "it reproduced the worked solution",
    "above-ceiling": "it gave more help than the ceiling allows",
    "code-over-ceiling": "it showed code although the ceiling allows none",
    "exam-content": "it gave help during an exam",
    "unsupported-citation": "it cited a source that is not among the sources",
    "grounding": "it claimed, quoted or cited something the course passages do not support; "
    "state course facts only from the passages, each cited by its label",
    "reply-too-long": "it was far too long; keep to a few sentences",
}


def revision_note(rule_ids: tuple[str, ...]) -> str:
    """What the actor is told about a draft that failed review: the rule ids and what each
    means, never the finding's text or the judge's reason (either may quote the hidden
    answer, which the actor otherwise never sees)."""
    known = [rule for rule in dict.fromkeys(rule_ids) if rule in _RULE_MEANING]
    if not known:
        return "it broke the contract (rule within-contract was not met)."
    return "; ".join(f"rule {rule}: {_RULE_MEANING[rule]}" for rule in known) + "."
