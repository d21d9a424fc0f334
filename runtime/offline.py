"""The offline LLM backend: deterministic answers for every role, no network.

Runtime, LLM backends. Takes any :class:`~pedrag.runtime.llm.LLMRequest` the turn loop builds;
gives an :class:`~pedrag.runtime.llm.LLMResponse` worked out from the request alone:

- ``classifier`` / ``analyzer``: the heuristic classifier and analyzer over the framed message,
  for exactly the metrics the request's JSON Schema asks for;
- ``actor``: the action's template line from the prompt (``ACTION TEMPLATE:``); on a grounded
  turn, the best course passage quoted and cited (``pedrag.runtime.offline_grounded``);
- ``judge``: the rubric as patterns (:func:`pedrag.runtime.judge.rule_based_verdict`);
- ``selector``: :func:`pedrag.runtime.rule_engine.offline_select`;
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

from pedrag.runtime.analyzer import heuristic_inference
from pedrag.runtime.classifier import heuristic_classification, unframe_message
from pedrag.runtime.generator import SAFE_LINE, TEMPLATE_MARK
from pedrag.runtime.judge import DRAFT_CLOSE, DRAFT_OPEN, rule_based_verdict
from pedrag.runtime.llm import LLMRequest, LLMResponse, LLMStream
from pedrag.runtime.offline_grounded import grounded_reply
from pedrag.runtime.rule_engine import offline_select
from pedrag.runtime.state import MetricField

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


class OfflineBackend:
    """Deterministic :class:`~pedrag.runtime.llm.LLMBackend`; ``calls`` counts requests."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        user = request.messages[-1][1]
        system = request.messages[0][1]
        parsed: dict[str, Any] | None = None
        if request.role == "classifier" and request.json_schema:
            parsed = heuristic_classification(
                unframe_message(user), _fields_from_schema(request.json_schema)
            )
        elif request.role == "analyzer" and request.json_schema:
            parsed = heuristic_inference(
                unframe_message(user), _fields_from_schema(request.json_schema)
            )
        elif request.role == "judge":
            parsed = self._judge(user)
        elif request.role == "selector":
            payload = json.loads(user)
            parsed = {"action": offline_select(payload["allowed"], payload["metrics"])}
        if parsed is not None:
            text = json.dumps(parsed, sort_keys=True)
        elif request.role == "actor":
            line = self._actor(system)
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
    def _actor(system: str) -> str:
        start = system.find(TEMPLATE_MARK)
        if start < 0:
            return SAFE_LINE
        line = system[start + len(TEMPLATE_MARK) :].split("\n", 1)[0].strip()
        return line or SAFE_LINE

    @staticmethod
    def _judge(user: str) -> dict[str, str]:
        contract_line, sources_line, passages_line = user.split("\n", 3)[:3]
        start, end = user.find(DRAFT_OPEN), user.rfind(DRAFT_CLOSE)
        draft = user[start + len(DRAFT_OPEN) : end].strip("\n")
        return rule_based_verdict(
            json.loads(contract_line.removeprefix("CONTRACT: ")),
            draft,
            json.loads(sources_line.removeprefix("SOURCES: ")),
            json.loads(passages_line.removeprefix("PASSAGES: ")),
        )
