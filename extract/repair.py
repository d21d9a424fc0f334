"""Extraction stage 5, check and repair: a draft theory -> a draft that checks clean.

Takes the merged draft; renders it (`writer`), runs the same checks as `pedrag check` —
the front end, then the compiler's semantic checks — and, while errors remain and rounds
are left, hands the diagnostics (with their witnesses) and the offending items back to the
model, which answers with replacement items and removals. Gives the repaired draft, the
diagnostics that remain, and a record of each round. Replacements keep the provenance of
the items they replace; items the model adds cite the sources of the items they repair.
Repair answers are cached like fragments, so a rerun replays them without model calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pedrag.compiler.driver import run_semantic
from pedrag.dsl.diagnostics import Diagnostic, Severity, error
from pedrag.dsl.loader import LoadedFile, load_text
from pedrag.dsl.model import Action, Identifier, Metric, Rule
from pedrag.extract.cache import AnswerCache, cache_key
from pedrag.extract.merge import Draft
from pedrag.extract.provenance import source_ids, union
from pedrag.extract.writer import action_data, metric_data, rule_data
from pedrag.runtime.llm.interface import LLMBackend, LLMMalformedOutput, LLMRequest

PROMPT_VERSION = "repair-1"


class RepairReply(BaseModel):
    """The model's answer: items to replace or add (keyed as in a theory file; an existing
    name or id is replaced) and names or ids to remove."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metrics: dict[Identifier, Metric] = Field(default_factory=dict)
    actions: dict[Identifier, Action] = Field(default_factory=dict)
    rules: list[Rule] = Field(default_factory=list)
    remove_metrics: list[Identifier] = Field(default_factory=list)
    remove_actions: list[Identifier] = Field(default_factory=list)
    remove_rules: list[Identifier] = Field(default_factory=list)


SYSTEM_PROMPT = """\
You repair a pedrag theory file that was extracted from a teaching text. The compiler found
the errors listed below; each names the items involved and, for semantic findings, a witness
(a concrete learner state). Fix every error while changing as little as possible and keeping
what the text supports. Reply with one JSON object:
  metrics / actions / rules: items to replace or add, spelled as in a theory file (a rule with
    an existing id, or a metric or action with an existing name, replaces it);
  remove_metrics / remove_actions / remove_rules: names or ids to delete.
Typical fixes: a rule naming an unknown action is pointed at a declared action (or the action
is declared); an unknown metric is declared; a rule whose condition can never hold
(dead-rule) gets a condition that can, or is removed; conflicting rules get disjoint
conditions. Conditions use: and, or, not, comparisons, `in [..]`, numbers, enum values.
"""


@dataclass
class RepairRound:
    number: int
    errors: list[Diagnostic]
    changed: list[str] = field(default_factory=list)  # items replaced, added or removed
    problem: str | None = None  # why the round changed nothing
    cached: bool = False


@dataclass
class RepairResult:
    draft: Draft
    diagnostics: list[Diagnostic]  # what remains after the last round
    rounds: list[RepairRound]

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]


def check_text(text: str, path: str) -> tuple[LoadedFile, list[Diagnostic]]:
    """What `pedrag check` reports on `text`, without reading a file."""
    loaded = load_text(text, path)
    diagnostics = list(loaded.diagnostics)
    if loaded.theory is not None and loaded.ok:
        try:
            more, _ = run_semantic(loaded)
        except Exception as exc:  # a checker bug is reported, as `pedrag check` does
            more = [error("internal-error", f"the compiler failed on this file: {exc!r}", None)]
        diagnostics.extend(more)
    diagnostics.sort(key=Diagnostic.sort_key)
    return loaded, diagnostics


def repair(
    draft: Draft,
    render: Callable[[Draft], str],
    path: str,
    backend: LLMBackend,
    cache: AnswerCache,
    model: str,
    rounds: int,
    on_round: Callable[[RepairRound], None] = lambda _: None,
) -> RepairResult:
    history: list[RepairRound] = []
    loaded, diagnostics = check_text(render(draft), path)
    for number in range(1, rounds + 1):
        errors = [d for d in diagnostics if d.severity is Severity.ERROR]
        if not errors:
            break
        record = RepairRound(number, errors)
        history.append(record)
        offending = _offending_items(errors, loaded, draft)
        prompt = _user_prompt(errors, offending, draft)
        reply, record.problem, record.cached = _ask(backend, cache, model, prompt)
        if reply is not None:
            draft, record.changed = _apply(draft, reply, offending)
            if not record.changed:
                record.problem = "the model proposed no change"
        on_round(record)
        loaded, diagnostics = check_text(render(draft), path)
    return RepairResult(draft, diagnostics, history)


def item_label(item: str) -> str:
    kind, _, name = item.partition(":")
    return f"{kind} `{name}`"


def _offending_items(errors: list[Diagnostic], loaded: LoadedFile, draft: Draft) -> list[str]:
    """`rule:x`, `action:y`, `metric:z` for every error: its own items, else the item its
    span falls in."""
    items: list[str] = []
    ranges = _item_lines(loaded, draft)
    for diagnostic in errors:
        found = [i for i in diagnostic.items if i.split(":")[0] in ("rule", "action", "metric")]
        if not found and diagnostic.span is not None:
            line = diagnostic.span.line
            found = [item for item, (first, last) in ranges.items() if first <= line <= last][:1]
        items.extend(found)
    if not items:  # nothing locatable: show the rules, where most errors live
        items = [f"rule:{rule.id}" for rule in draft.rules]
    return list(dict.fromkeys(items))


def _item_lines(loaded: LoadedFile, draft: Draft) -> dict[str, tuple[int, int]]:
    ranges: dict[str, tuple[int, int]] = {}
    if loaded.positions is None:
        return ranges
    source = loaded.positions.source
    for path, (start, end) in loaded.positions.values.items():
        if len(path) != 2 or path[0] not in ("rules", "actions", "metrics"):
            continue
        if path[0] == "rules":
            index = path[1]
            if not isinstance(index, int) or index >= len(draft.rules):
                continue
            item = f"rule:{draft.rules[index].id}"
        else:
            item = f"{path[0][:-1]}:{path[1]}"
        ranges[item] = (source.position(start)[0], source.position(max(start, end - 1))[0])
    return ranges


def _user_prompt(errors: list[Diagnostic], offending: list[str], draft: Draft) -> str:
    findings = [
        {
            key: value
            for key, value in {
                "check": d.check,
                "message": d.message,
                "items": list(d.items),
                "witness": d.witness,
                "help": d.help,
                "line": d.span.line if d.span else None,
            }.items()
            if value not in (None, [])
        }
        for d in errors
    ]
    items: dict[str, Any] = {"metrics": {}, "actions": {}, "rules": []}
    for item in offending:
        kind, _, name = item.partition(":")
        if kind == "metric" and name in draft.metrics:
            items["metrics"][name] = metric_data(draft.metrics[name])
        elif kind == "action" and name in draft.actions:
            items["actions"][name] = action_data(draft.actions[name])
        elif kind == "rule":
            items["rules"].extend(rule_data(r) for r in draft.rules if r.id == name)
    declared = {
        "metrics": {name: _metric_summary(metric) for name, metric in draft.metrics.items()},
        "actions": {
            name: f"{action.rung}: {action.description}" for name, action in draft.actions.items()
        },
    }
    return (
        "Errors:\n"
        + json.dumps(findings, indent=1, ensure_ascii=False)
        + "\n\nOffending items:\n"
        + json.dumps(items, indent=1, ensure_ascii=False)
        + "\n\nDeclared in the theory:\n"
        + json.dumps(declared, indent=1, ensure_ascii=False)
    )


def _metric_summary(metric: Metric) -> str:
    if metric.range is not None:
        return f"{metric.type} in [{metric.range[0]:g}, {metric.range[1]:g}]"
    if metric.values is not None:
        return f"enum of {', '.join(metric.values)}"
    return metric.type


def _ask(
    backend: LLMBackend, cache: AnswerCache, model: str, prompt: str
) -> tuple[RepairReply | None, str | None, bool]:
    key = cache_key("repair", model, PROMPT_VERSION, prompt)
    stored = cache.get(key)
    cached = stored is not None
    if stored is None:
        request = LLMRequest(
            role="extractor",
            messages=(("system", SYSTEM_PROMPT), ("user", prompt)),
            json_schema=RepairReply.model_json_schema(),
            schema_name="theory_repair",
            temperature=0,
        )
        try:
            response = backend.complete(request)
        except LLMMalformedOutput as exc:
            return None, f"the repair reply was not valid: {exc}", False
        stored = {"reply": response.parsed if response.parsed is not None else response.text}
        cache.put(key, stored)
    try:
        return RepairReply.model_validate(stored.get("reply")), None, cached
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        return None, f"the repair reply was not valid: {where}: {first['msg']}", cached


def _apply(draft: Draft, reply: RepairReply, offending: list[str]) -> tuple[Draft, list[str]]:
    """The draft with the reply's changes, and which items changed."""
    repaired = Draft(
        dict(draft.metrics),
        {k: list(v) for k, v in draft.metric_sources.items()},
        dict(draft.actions),
        list(draft.rules),
        list(draft.principles),
    )
    # Items the model adds cite the passages of the items they repair.
    inherited = union(*(_sources_of(draft, item) for item in offending))
    changed: list[str] = []
    for name in reply.remove_rules:
        before = len(repaired.rules)
        repaired.rules = [rule for rule in repaired.rules if rule.id != name]
        if len(repaired.rules) != before:
            changed.append(f"removed rule:{name}")
    for name in reply.remove_actions:
        if repaired.actions.pop(name, None) is not None:
            changed.append(f"removed action:{name}")
    for name in reply.remove_metrics:
        if repaired.metrics.pop(name, None) is not None:
            repaired.metric_sources.pop(name, None)
            changed.append(f"removed metric:{name}")
    for name, metric in reply.metrics.items():
        if repaired.metrics.get(name) != metric:
            changed.append(f"{'replaced' if name in repaired.metrics else 'added'} metric:{name}")
            if name not in repaired.metrics:
                repaired.metric_sources[name] = source_ids(inherited)
            repaired.metrics[name] = metric
    for name, action in reply.actions.items():
        known = repaired.actions.get(name)
        action = action.model_copy(
            update={"source": action.source or (known.source if known else inherited)}
        )
        if known != action:
            changed.append(f"{'replaced' if known else 'added'} action:{name}")
            repaired.actions[name] = action
    for rule in reply.rules:
        index = next((i for i, kept in enumerate(repaired.rules) if kept.id == rule.id), None)
        known_rule = repaired.rules[index] if index is not None else None
        rule = rule.model_copy(
            update={"source": rule.source or (known_rule.source if known_rule else inherited)}
        )
        if known_rule == rule:
            continue
        if index is None:
            repaired.rules.append(rule)
            changed.append(f"added rule:{rule.id}")
        else:
            repaired.rules[index] = rule
            changed.append(f"replaced rule:{rule.id}")
    return repaired, changed


def _sources_of(draft: Draft, item: str) -> str | list[str] | None:
    kind, _, name = item.partition(":")
    if kind == "metric":
        return draft.metric_sources.get(name) or None
    if kind == "action" and name in draft.actions:
        return draft.actions[name].source
    if kind == "rule":
        return union(*(rule.source for rule in draft.rules if rule.id == name))
    return None
