"""Extraction stage 3, fragments: one chunk of text -> a validated theory fragment.

Takes a chunk; asks the model (role `extractor`) for a **fragment in the theory format
itself** — a JSON object with any of `metrics`, `actions`, `rules`, `principles`, spelled
exactly as in a theory file — with structured output against the JSON Schema generated from
the format's pydantic models. Gives a `FragmentOutcome`: the validated `Fragment`, or the
validation errors when the model failed twice (it is retried once with its errors, then the
chunk is skipped and reported). Outcomes are cached per chunk text, model and prompt
version, so a rerun resumes. Transport failures (`LLMUnavailable`, `LLMTimeout`, ...) are not
cached and propagate: the pipeline stops and the next run picks up where it left off.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pedrag.dsl.model import Action, Identifier, Metric, Principle, Rule
from pedrag.dsl.parser import ConditionSyntaxError, parse_condition
from pedrag.extract.cache import AnswerCache, cache_key
from pedrag.extract.chunker import Chunk
from pedrag.runtime.llm.interface import LLMBackend, LLMMalformedOutput, LLMRequest, Message

# Bump when the prompt or the fragment shape changes: it invalidates cached answers.
PROMPT_VERSION = "fragment-1"


class Fragment(BaseModel):
    """What one chunk contributes: part of a theory file, keys as a theory file spells them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metrics: dict[Identifier, Metric] = Field(default_factory=dict)
    actions: dict[Identifier, Action] = Field(default_factory=dict)
    rules: list[Rule] = Field(default_factory=list)
    principles: list[Principle] = Field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.metrics or self.actions or self.rules or self.principles)


def fragment_schema() -> dict[str, Any]:
    """The JSON Schema sent as structured output, generated from the format's models."""
    return Fragment.model_json_schema()


def fragment_errors(value: Any) -> tuple[Fragment | None, list[str]]:
    """Validate a fragment: its structure (pydantic) and every rule's condition syntax."""
    try:
        fragment = Fragment.model_validate(value)
    except ValidationError as exc:
        return None, [_describe(error) for error in exc.errors(include_url=False)]
    errors: list[str] = []
    for index, rule in enumerate(fragment.rules):
        try:
            parse_condition(rule.when)
        except ConditionSyntaxError as exc:
            errors.append(
                f"rules.{index}.when: {exc.message} at character {exc.offset} of {rule.when!r}"
            )
    return (None, errors) if errors else (fragment, [])


def _describe(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "the fragment"
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}"


SYSTEM_PROMPT = """\
You extract a pedagogical theory from a passage of a teaching text, as a fragment of a pedrag
theory file. Reply with one JSON object with any of the keys `metrics`, `actions`, `rules`,
`principles`; leave out what the passage does not support. Do not invent content the passage
does not imply.

metrics: {name: {type, source, range | values, default?, description?}} - learner state the
  tutor tracks. type: int | float (need `range: [low, high]`) | bool | enum (need `values`).
  source: trusted (written by the system: mastery, exam state, attempt counts) | classified
  (an enum read from the student message: intent) | inferred (estimated by a model: affect,
  frustration, confusion) | observed (from the tutor's own replies) | computed.
actions: {name: {rung, priority, description, guidance?, tags?}} - teaching moves.
  rung on the hint ladder: H0 acknowledge/encourage, H1 restate the problem, H2 point to a
  concept or source, H3 leading question about the next step, H4 describe the approach in
  words, H5 worked example on a different problem, H6 pseudocode with blanks, H7 full
  solution. priority: 1..10.
rules: [{id, when, then, weight?}] - `when` is a condition over metrics: and, or, not,
  parentheses, comparisons == != < <= > >= (chained: 0.4 <= x < 0.7), `in [..]`, numbers,
  true/false, enum values; `then` names an action.
principles: [{id, text}] - the theory's core principles, one sentence each.
Names and ids are lower_snake_case. Every metric a rule reads and every action it names
should be declared in this fragment too.

Example:
{"metrics": {"confusion": {"type": "float", "source": "inferred", "range": [0, 1]}},
 "actions": {"ask_for_definition": {"rung": "H3", "priority": 7,
   "description": "Ask the learner to define the concept in their own words."}},
 "rules": [{"id": "confused_define", "when": "confusion >= 0.5", "then": "ask_for_definition"}],
 "principles": [{"id": "learner_reasons", "text": "The learner does the reasoning."}]}
"""


def user_prompt(chunk: Chunk) -> str:
    return (
        f"Passage from {chunk.document} ({chunk.page_label}, chunk {chunk.index}):\n"
        f"<<<\n{chunk.text}\n>>>"
    )


@dataclass
class FragmentOutcome:
    chunk: Chunk
    fragment: Fragment | None
    errors: list[str] = field(default_factory=list)  # why the chunk was skipped
    attempts: int = 0
    cached: bool = False

    @property
    def skipped(self) -> bool:
        return self.fragment is None


def fragment_cache_key(chunk: Chunk, model: str) -> str:
    """Where a chunk's answer is cached: its text, the model and the prompt version."""
    return cache_key("fragment", model, PROMPT_VERSION, chunk.text)


def extract_fragment(
    chunk: Chunk, backend: LLMBackend, cache: AnswerCache, model: str
) -> FragmentOutcome:
    """Ask for a chunk's fragment (from the cache when answered before); retry once on an
    invalid answer, then give up on the chunk. LLM transport errors propagate."""
    key = fragment_cache_key(chunk, model)
    stored = cache.get(key)
    if stored is not None:
        fragment, errors = (None, list(stored.get("errors", [])))
        if stored.get("fragment") is not None:
            fragment, errors = fragment_errors(stored["fragment"])
        if fragment is not None or errors:
            return FragmentOutcome(chunk, fragment, errors, int(stored.get("attempts", 0)), True)
    messages: list[Message] = [("system", SYSTEM_PROMPT), ("user", user_prompt(chunk))]
    outcome = FragmentOutcome(chunk, None)
    for attempt in (1, 2):
        outcome.attempts = attempt
        reply_text, fragment, errors = _ask(backend, messages)
        if fragment is not None:
            outcome.fragment, outcome.errors = fragment, []
            break
        outcome.errors = errors
        messages += [
            ("assistant", reply_text),
            (
                "user",
                "That fragment is invalid:\n"
                + "\n".join(f"- {e}" for e in errors[:20])
                + "\nReply with the corrected fragment: the whole JSON object, nothing else.",
            ),
        ]
    cache.put(
        key,
        {
            "fragment": outcome.fragment.model_dump(mode="json", exclude_none=True)
            if outcome.fragment is not None
            else None,
            "errors": outcome.errors,
            "attempts": outcome.attempts,
            "document": chunk.document,
            "chunk": chunk.index,
        },
    )
    return outcome


def _ask(backend: LLMBackend, messages: list[Message]) -> tuple[str, Fragment | None, list[str]]:
    request = LLMRequest(
        role="extractor",
        messages=tuple(messages),
        json_schema=fragment_schema(),
        schema_name="theory_fragment",
        temperature=0,
    )
    try:
        response = backend.complete(request)
    except LLMMalformedOutput as exc:
        return exc.raw_text, None, list(exc.errors) or [str(exc)]
    value = response.parsed if response.parsed is not None else _loads(response.text)
    fragment, errors = fragment_errors(value)
    return response.text, fragment, errors


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
