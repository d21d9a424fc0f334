"""The offline LLM backend: deterministic answers for every role, no network.

Runtime, LLM backends. Takes any :class:`~pedrag.runtime.llm.interface.LLMRequest` the turn loop builds;
gives an :class:`~pedrag.runtime.llm.interface.LLMResponse` worked out from the request alone:

- ``classifier`` / ``analyzer``: the heuristic classifier and analyzer over the framed message,
  for exactly the metrics the request's JSON Schema asks for;
- ``actor``: on a grounded turn, the best course passage quoted and cited
  (``pedrag.runtime.llm.offline_grounded``, from the prompt's passages); otherwise one of the
  action's wordings filled from the exercise's teaching material, both read from the request's
  :class:`~pedrag.runtime.llm.interface.ActorPlan` (not from the prompt, which carries only
  what a model needs): wordings that give the learner something new (the next hint, the
  worked example) first, rotated by the session's reply count, skipping any recently said and
  never the previous reply;
- ``judge``: the rubric as patterns (:func:`pedrag.runtime.turn.judge.rule_based_verdict`);
- ``selector``: :func:`pedrag.runtime.policy.rule_engine.offline_select`;
- ``student`` / ``evaluator`` / ``extractor``: a neutral fixed reply.

``stream`` gives the same reply as ``complete``, cut into words (each with its trailing
whitespace), so the streaming turn is exercised offline exactly as against a model.

Why a real backend instead of ``if offline:`` branches: offline runs then exercise the very
same code path as a model-backed tutor — prompts, schemas, parsing, judge and fallbacks — which
is what makes the offline quickstart and the test suite evidence about the real thing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, Literal

from pedrag.runtime.learning.material import (
    SHOWN_IN_FULL,
    fill,
    fingerprint,
    first_reply_wordings,
    placeholders,
)
from pedrag.runtime.llm.interface import ActorPlan, LLMRequest, LLMResponse, LLMStream
from pedrag.runtime.llm.offline_grounded import grounded_reply
from pedrag.runtime.policy.policy_core import Contract
from pedrag.runtime.policy.rule_engine import offline_select
from pedrag.runtime.turn.analyzer import feeling_phrase, heuristic_inference
from pedrag.runtime.turn.classifier import heuristic_classification, unframe_message
from pedrag.runtime.turn.generator import SAFE_LINE
from pedrag.runtime.turn.judge import DRAFT_CLOSE, DRAFT_OPEN, rule_based_verdict
from pedrag.runtime.turn.state import MetricField
from pedrag.runtime.turn.text import as_written

MODEL = "offline"
_WORD = re.compile(r"\s*\S+\s*|\s+")


def _fields_from_schema(schema: dict[str, Any]) -> dict[str, MetricField]:
    fields: dict[str, MetricField] = {}
    for name, spec in schema.get("properties", {}).items():
        if "enum" in spec:
            fields[name] = MetricField(
                name, "enum", "classified", values=tuple(spec["enum"]), default=spec["enum"][0]
            )
        elif spec.get("type") == "boolean":
            fields[name] = MetricField(name, "bool", "classified", default=False)
        else:
            low, high = float(spec.get("minimum", 0)), float(spec.get("maximum", 1))
            kind: Literal["int", "float"] = "int" if spec.get("type") == "integer" else "float"
            fields[name] = MetricField(name, kind, "classified", low, high, default=low)
    return fields


def _request_fields(request: LLMRequest) -> dict[str, MetricField]:
    """The request's real metric definitions (declared defaults kept), else the schema's."""
    if request.metric_fields is not None:
        return dict(request.metric_fields)
    return _fields_from_schema(request.json_schema or {})


# Restating the question is always within the contract (the learner can read it anyway): the
# last resort when every wording of the action was said already in this session.
_RESTATE = (
    "{wording} The question is still: {prompt}",
    "Back to the question ({prompt}). {wording}",
    "{wording} (We're working on: {prompt})",
    "Let's keep the question in view: {prompt} {wording}",
    "{wording} Remember, the question asks: {prompt}",
    "One more look at the question: {prompt} {wording}",
)
# ... and, when a restatement of the question cannot be said (its prompt holds the answer's
# value, so the detector refuses it), the wording with a few words around it.
AROUND = (
    "Let's keep going. {wording}",
    "{wording} Take your time with it.",
    "Another angle: {wording}",
    "{wording} There's no rush.",
    "Let's stay with it. {wording}",
    "{wording} You're closer than it feels.",
)
# Prefaces the offline actor puts before the action's wording, each rotated by the session's
# reply count so that none of them becomes a stock sentence (issue 27).
_FEELING_PREFACES = (
    "You said you're {feeling}, and that's okay: it happens to everyone who learns this.",
    "I hear you: feeling {feeling} makes sense when something won't click.",
    "Thanks for telling me you're {feeling}. We'll take it one small step at a time.",
    "It's alright to be {feeling}; you haven't done anything wrong by getting stuck.",
    "Feeling {feeling} is part of learning something new, and it passes.",
    "I'm glad you told me you're {feeling}. Let's make the next bit smaller.",
    "Being {feeling} right now is understandable; we'll go at your pace.",
    "Okay, you're {feeling}. That's fine, and we'll work through it together.",
)
_SLIP_PREFACES = (
    "Check this step of your working: {slip}.",
    "Have another look at one step: {slip}. Does it check out?",
    "Your method is worth keeping, but one step is off: {slip}.",
    "Most of your working holds; look again at {slip}.",
)
_DIAGNOSIS_PREFACES = (
    "That looks like a common mix-up: {diagnosis}",
    "I think I can see what happened. {diagnosis}",
    "Here's a trap many people fall into: {diagnosis}",
    "Let's look at that step again. {diagnosis}",
)


def _rotated(frames: tuple[str, ...], count: int, **values: str) -> str:
    text = frames[count % len(frames)]
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


def prefaces(material: dict[str, Any], said: dict[str, Any], message: str) -> str:
    """What comes before the action's wording: an acknowledgement of the feeling the learner
    named, in their words (affect first), then the first step of their working that does not
    check out, pointed at, and the misconception their message signals, named and corrected
    (diagnosis before probing)."""
    count = int(said.get("count", 0) or 0)
    parts = []
    feeling = feeling_phrase(message)
    if feeling:
        parts.append(_rotated(_FEELING_PREFACES, count, feeling=feeling))
    slip = str(material.get("slip") or "")
    if slip:
        parts.append(_rotated(_SLIP_PREFACES, count, slip=slip))
    diagnosis = str(material.get("diagnosis") or "")
    if diagnosis:
        parts.append(_rotated(_DIAGNOSIS_PREFACES, count, diagnosis=_sentence(diagnosis)))
    return " ".join(parts)


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?")) else text + "."


def fill_wording(
    wordings: list[str],
    material: dict[str, Any],
    said: dict[str, Any],
    prefix: str = "",
    revising: bool = False,
) -> str:
    """The reply: ``prefix`` and a wording of the action filled from the turn's material.

    Wordings whose placeholders this turn's material cannot fill are dropped; those that give
    something the learner has not had yet (``said["fresh"]``: the next hint, the worked example)
    come first; each group is rotated by the session's reply count. The first whose reply was
    not said before in the session wins, then the same wordings restating the question, then
    with a few words around them; else the first that differs from the previous reply. A
    reply that says the previous reply's wording again (only "The question is still: ..."
    added, or another grader's line before it) is passed over while another can be said: the
    learner reads the same sentences twice in a row.
    Wordings that would give again material the learner had in full (``SHOWN_IN_FULL``: the
    worked example they were shown, word for word) come after all of that: a learner who got a
    worked example and then answered wrongly notices the same paragraph coming back, where the
    action's plain wording (work through yours the same way) moves them on. They still come
    before a reply said before: to a learner who stays confused, the example again helps more
    than a question again (put after those, post-test mastery in the evaluation fell from
    30.4% to 25.0%).
    ``revising`` (the draft was refused): no reply that restates the question.
    Material the learner asked for by name this turn (``said["requested"]``: "can you show me
    an example?") is in every wording said, when one carries it: a request for an example is
    never answered with a request ("think of a similar problem").
    The session's first reply is never a wording that rephrases an earlier one ("Let me put it
    another way"): there is none yet (the others are said, or else those without their
    opening words, `material.first_reply_wordings`).
    """
    count = int(said.get("count", 0) or 0)
    wordings = first_reply_wordings(wordings, said)
    values = {str(k): str(v) for k, v in material.items() if v}
    if values.get("diagnosis"):
        values.pop("misconception", None)  # named once, in the preface
    fresh = set(said.get("fresh", ()))
    last = str(said.get("last_fp") or fingerprint(str(said.get("last", ""))))
    again = {name for name in SHOWN_IN_FULL if name in values and name not in fresh}
    asked = set(said.get("requested", ()))
    filled: list[tuple[int, str]] = []  # (0 new, 1 other, 2 gives again what was had in full)
    answers: list[tuple[int, str]] = []  # ... of those, the ones that carry what was asked for
    for wording in wordings:
        text = fill(wording, values)
        if text is not None and all(text != other for _, other in filled):
            names = placeholders(wording)
            group = 0 if fresh.intersection(names) else 2 if again.intersection(names) else 1
            filled.append((group, text))
            if asked.intersection(names):
                answers.append((group, text))
    filled = answers or filled
    if not filled:
        return ""
    prompt = values.get("prompt", "")
    candidates = [
        *_spoken(_rotations(filled, (0, 1), count), prompt),
        *_spoken(_rotations(filled, (2,), count), prompt),
    ]
    if revising and prompt:
        candidates = [pair for pair in candidates if prompt not in pair[0]] or candidates
    replies = [(f"{prefix} {text}" if prefix else text, body) for text, body in candidates]
    previous = " ".join(str(said.get("last", "")).split())
    return _unsaid(replies, said, last, previous) or replies[0][0]


def _unsaid(replies: list[tuple[str, str]], said: dict[str, Any], last: str, previous: str) -> str:
    """The first reply not said in the session whose wording is not the previous reply's, else
    the first not said, else the first said before but not the previous reply, else ""."""
    recent = set(said.get("recent", ()))
    unsaid: list[str] = []  # not said in the session, in order
    others: list[str] = []  # said before, but not the previous reply
    for text, body in replies:
        printed = fingerprint(text)
        if printed == last:
            continue
        if printed in recent:
            others.append(text)
        elif not previous or " ".join(body.split()) not in previous:
            return text  # ... and not the previous reply's wording in other words
        else:
            unsaid.append(text)
    return next(iter(unsaid or others), "")


def _rotations(filled: list[tuple[int, str]], groups: tuple[int, ...], count: int) -> list[str]:
    """The texts of ``groups``, group by group, each rotated by the session's reply count."""
    ordered: list[str] = []
    for group in groups:
        texts = [text for number, text in filled if number == group]
        if texts:
            shift = count % len(texts)
            ordered += texts[shift:] + texts[:shift]
    return ordered


def _spoken(ordered: list[str], prompt: str) -> list[tuple[str, str]]:
    """(reply, the wording it says): the texts as they are, then restating the question, then
    with a few words around."""
    restated = [
        (frame.replace("{prompt}", prompt).replace("{wording}", text), text)
        for frame in _RESTATE
        for text in ordered
        if prompt and prompt not in text
    ]
    around = [(frame.replace("{wording}", text), text) for frame in AROUND for text in ordered]
    return [*((text, text) for text in ordered), *restated, *around]


QUOTE_MAX = 80
"""The longest answer a reply quotes back: a learner who pastes a page of text as their
answer is told it is wrong without the page read back to them."""
_WRONG_FACT = re.compile(r"^the learner's answer (['\"])(.*)\1 is not correct$")
_FAILED_TEST = re.compile(r"^test (.+) failed: got (.+), expected (.+)$")
_RIGHT_STEP = re.compile(r"^the learner's step (['\"])(.*)\1 is right, a step on the way\b")
_UNGRADED = "the learner's code could not be graded: "
_SOME_PASS = re.compile(r"^the learner's code passes (\d+) of (\d+) tests$")
_FORBIDDEN = re.compile(r"^the learner's code uses (.+), which the exercise does not allow\b")


def grader_preface(facts: tuple[str, ...], message: str = "", *, quoting: bool = True) -> str:
    """The grader's facts about a wrong or ungradable answer, narrated in one sentence (the
    grader decided; the actor only says what it found), the learner's answer quoted as they
    wrote it in ``message``. A correct answer's confirmation is the runtime's own line, so it
    is not repeated here. ``quoting=False``: the same verdict quoting nothing (no answer, no
    value, no error text), for a reply the detector refused what was quoted in: the learner
    is still told a wrong answer was wrong (``pedrag.runtime.turn.supervision.fallbacks``)."""
    for fact in (fact.strip() for fact in facts):
        if match := _WRONG_FACT.match(fact):
            if not quoting or len(match.group(2)) > QUOTE_MAX:  # before the search for it:
                return "Not quite, that isn't it."  # a 4,000-word answer took 2 s to find
            written = as_written(match.group(2), message)
            if len(written) > QUOTE_MAX:
                return "Not quite, that isn't it."
            return f"Not quite: {written} isn't it."
        if match := _RIGHT_STEP.match(fact):  # the grader's: "23 x 40 = 920" on the way
            if not quoting:
                return "That step is right, but it is a step on the way, not the answer yet."
            return f"{match.group(2)} is right, but it is a step on the way, not the answer yet."
        if match := _FAILED_TEST.match(fact):
            if not quoting:
                return "Not yet: I ran your code, and it doesn't pass every test."
            call, got, expected = match.groups()
            return f"Not yet: I ran your code, and {call} gave {got} where {expected} was expected."
        if fact.startswith(_UNGRADED):
            if not quoting:
                return "I couldn't run your code, so it isn't graded."
            return f"I couldn't run your code ({fact.removeprefix(_UNGRADED)}), so it isn't graded."
        if match := _FORBIDDEN.match(fact):
            # the learner was told nothing: a hint came as if the code were merely unfinished
            if not quoting:
                return "Not yet: your code uses something this exercise does not allow."
            return f"Not yet: your code uses {match.group(1)}, which this exercise does not allow."
    for fact in (fact.strip() for fact in facts):
        # only hidden tests failed (no public one to quote): the count, never their values
        if (match := _SOME_PASS.match(fact)) and match.group(1) != match.group(2):
            if not quoting:
                return "Not yet: I ran your code, and it doesn't pass every test."
            return f"Not yet: I ran your code, and it passes {match.group(1)} of {match.group(2)} tests."
    return ""


class OfflineBackend:
    """Deterministic :class:`~pedrag.runtime.llm.interface.LLMBackend`; ``calls`` counts requests."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        user = request.messages[-1][1]
        # The actor's prompt has two system messages (stable text, then this turn's block).
        system = "\n\n".join(text for who, text in request.messages if who == "system")
        parsed: dict[str, Any] | None = None
        if request.role == "classifier" and request.json_schema:
            parsed = heuristic_classification(unframe_message(user), _request_fields(request))
        elif request.role == "analyzer" and request.json_schema:
            parsed = heuristic_inference(unframe_message(user), _request_fields(request))
        elif request.role == "judge":
            parsed = self._judge(user, request.contract)
        elif request.role == "selector":
            payload = json.loads(user)
            parsed = {"action": offline_select(payload["allowed"], payload["metrics"])}
        if parsed is not None:
            text = json.dumps(parsed, sort_keys=True)
        elif request.role == "actor":
            plan = request.actor  # None: a request built without the plan (a plain chat)
            line = self._actor(plan, unframe_message(user)) if plan is not None else SAFE_LINE
            text = grounded_reply(system, unframe_message(user), line) or line
        else:
            text = "I'm not sure yet."
        return LLMResponse(
            text=text,
            parsed=parsed if request.json_schema is not None else None,
            model=MODEL,
            prompt_tokens=sum(len(content) for _, content in request.messages) // 4,
            completion_tokens=len(text) // 4,
            cost_usd=0.0,
            latency_ms=0.0,
            role=request.role,
        )

    def stream(self, request: LLMRequest) -> LLMStream:
        """:meth:`complete`'s reply in small deterministic chunks (one word each)."""

        def deltas(handle: LLMStream) -> Iterator[str]:
            response = self.complete(request)
            handle.response = response
            for match in _WORD.finditer(response.text):
                yield match.group(0)

        return LLMStream(deltas)

    @staticmethod
    def _actor(plan: ActorPlan, message: str = "") -> str:
        said = dict(plan.said)
        line = first_reply_wordings([plan.template], said)[0] if plan.template else SAFE_LINE
        if not plan.wordings:
            return line
        material = dict(plan.material)
        feeling = feeling_phrase(message)
        # A refused draft is written again quoting nothing of the learner's answer: the quote
        # may be what was refused ("2 6 12" holds the answer 12), the verdict stays.
        grader = grader_preface(plan.grader_facts, message, quoting=not plan.revising)
        diagnosis = prefaces(material, said, "")  # the misconception, after the grader's fact
        first = prefaces({}, said, message) if feeling else ""
        prefix = " ".join(part for part in (first, grader, diagnosis) if part)
        reply = fill_wording(list(plan.wordings), material, said, prefix, plan.revising)
        return reply or " ".join(part for part in (prefix, line) if part)

    @staticmethod
    def _judge(user: str, contract: Any = None) -> dict[str, str]:
        contract_line, sources_line, passages_line = user.split("\n", 3)[:3]
        start, end = user.find(DRAFT_OPEN), user.rfind(DRAFT_CLOSE)
        draft = user[start + len(DRAFT_OPEN) : end].strip("\n")
        if not isinstance(contract, Contract):  # a request built without the object
            contract = Contract.from_dict(json.loads(contract_line.removeprefix("CONTRACT: ")))
        return rule_based_verdict(
            contract,
            draft,
            json.loads(sources_line.removeprefix("SOURCES: ")),
            json.loads(passages_line.removeprefix("PASSAGES: ")),
        )
