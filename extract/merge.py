"""Extraction stage 4, merging: per-chunk fragments -> one draft theory.

Takes the validated fragments in corpus order, each with the source id of its chunk; gives a
`Draft` (metrics, actions, rules, principles with provenance) and a `MergeReport` saying
what was reconciled. Earlier chunks win ties, so a merge is deterministic.

- Metrics with the same name are reconciled: numeric ranges widened to cover both, enum
  values united. A type disagreement cannot be reconciled: the first type is kept and the
  conflict reported.
- Actions with the same name are united; actions with *different* names whose embeddings
  have cosine similarity >= the threshold are near-duplicates (seed 1, Layer 1: merged at
  θ = 0.85): the later one is merged into the earlier (the survivor) and every rule and
  `conflicts` entry naming it is re-pointed to the survivor.
- Rules that become identical (same canonical condition, same action) are dropped but for
  the first, which keeps all their sources; distinct rules sharing an id are renamed.
- Principles are united by id and by text.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pedrag.dsl.model import Action, Metric, Principle, Rule
from pedrag.dsl.parser import ConditionSyntaxError, parse_condition
from pedrag.dsl.printer import to_text
from pedrag.extract.embeddings import Embedder
from pedrag.extract.fragments import Fragment
from pedrag.extract.provenance import source_ids, union

DEFAULT_MERGE_THRESHOLD = 0.85


@dataclass
class Draft:
    """A theory's body under construction. Metrics cannot carry provenance in the format
    (their `source:` is the trust-boundary kind), so theirs is kept beside them."""

    metrics: dict[str, Metric] = field(default_factory=dict)
    metric_sources: dict[str, list[str]] = field(default_factory=dict)
    actions: dict[str, Action] = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)
    principles: list[Principle] = field(default_factory=list)

    def cited_sources(self) -> list[str]:
        cited: list[str] = []
        for ids in self.metric_sources.values():
            cited.extend(ids)
        fields = [a.source for a in self.actions.values()]
        fields += [r.source for r in self.rules] + [p.source for p in self.principles]
        for field_value in fields:
            cited.extend(source_ids(field_value))
        return list(dict.fromkeys(cited))


@dataclass(frozen=True)
class MergedAction:
    duplicate: str
    survivor: str
    similarity: float


@dataclass
class MergeReport:
    metric_conflicts: list[str] = field(default_factory=list)
    merged_actions: list[MergedAction] = field(default_factory=list)
    dropped_rules: list[str] = field(default_factory=list)  # ids of duplicate rules removed
    renamed_rules: dict[str, str] = field(default_factory=dict)  # new id -> id as extracted


def merge_fragments(
    fragments: Sequence[tuple[Fragment, str]],
    embedder: Embedder,
    threshold: float = DEFAULT_MERGE_THRESHOLD,
) -> tuple[Draft, MergeReport]:
    draft, report = Draft(), MergeReport()
    for fragment, source_id in fragments:
        for name, metric in fragment.metrics.items():
            _add_metric(draft, report, name, metric, source_id)
        for name, action in fragment.actions.items():
            action = action.model_copy(update={"source": union(action.source, source_id)})
            known = draft.actions.get(name)
            draft.actions[name] = _unite_actions(known, action) if known else action
    aliases = _merge_near_duplicates(draft, report, embedder, threshold)
    rules = _RuleIndex()
    for fragment, source_id in fragments:
        for rule in fragment.rules:
            rule = rule.model_copy(
                update={
                    "then": aliases.get(rule.then, rule.then),
                    "source": union(rule.source, source_id),
                }
            )
            rules.add(draft, report, rule)
        for principle in fragment.principles:
            principle = principle.model_copy(update={"source": union(principle.source, source_id)})
            _add_principle(draft, principle)
    return draft, report


def canonical_condition(text: str) -> str:
    """A condition's canonical text (so `a>1 and b` equals `a > 1 and b`), or the text with
    its whitespace normalised when it does not parse."""
    try:
        return to_text(parse_condition(text))
    except ConditionSyntaxError:
        return " ".join(text.split())


def _add_metric(
    draft: Draft, report: MergeReport, name: str, metric: Metric, source_id: str
) -> None:
    sources = draft.metric_sources.setdefault(name, [])
    if source_id not in sources:
        sources.append(source_id)
    known = draft.metrics.get(name)
    if known is None:
        draft.metrics[name] = metric
        return
    if known.type != metric.type:
        report.metric_conflicts.append(
            f"metric `{name}` is {known.type} in {sources[0]} but {metric.type} in {source_id}; "
            f"kept {known.type}"
        )
        return
    if known.source != metric.source:
        report.metric_conflicts.append(
            f"metric `{name}` is {known.source} in {sources[0]} but {metric.source} in "
            f"{source_id}; kept {known.source}"
        )
    update: dict[str, object] = {}
    if known.range is not None and metric.range is not None:
        update["range"] = (
            min(known.range[0], metric.range[0]),
            max(known.range[1], metric.range[1]),
        )
    if known.values is not None and metric.values is not None:
        update["values"] = list(dict.fromkeys([*known.values, *metric.values]))
    if known.description is None and metric.description is not None:
        update["description"] = metric.description
    draft.metrics[name] = known.model_copy(update=update)


def _unite_actions(known: Action, other: Action) -> Action:
    """The first action's wording, rung and priority, with both actions' labels and sources."""
    return known.model_copy(
        update={
            "guidance": known.guidance or other.guidance,
            "template": known.template or other.template,
            "tags": list(dict.fromkeys([*known.tags, *other.tags])),
            "conflicts": list(dict.fromkeys([*known.conflicts, *other.conflicts])),
            "source": union(known.source, other.source),
        }
    )


def _action_text(name: str, action: Action) -> str:
    return f"{name.replace('_', ' ')}: {action.description}"


def _merge_near_duplicates(
    draft: Draft, report: MergeReport, embedder: Embedder, threshold: float
) -> dict[str, str]:
    names = list(draft.actions)
    if len(names) < 2:
        return {}
    embedded = embedder.embed([_action_text(name, draft.actions[name]) for name in names])
    # Unit vectors as their non-zero entries: the cosine is a dot product over the entries two
    # vectors share. Sparse vectors (a lexical embedder's) are indexed by entry, so an action is
    # compared only with survivors it shares an entry with — near-linear for those; dense
    # vectors (an embedding endpoint's) are compared with every survivor.
    vectors = [_unit_entries(vector) for vector in embedded]
    sizes = [len(vector) for vector in embedded]
    aliases: dict[str, str] = {}
    survivors: list[int] = []
    dense: list[int] = []
    postings: dict[int, list[int]] = {}
    for index, name in enumerate(names):
        mine = vectors[index]
        if threshold <= 0 or len(mine) > _SPARSE_ENTRIES:
            candidates: Iterable[int] = survivors
        else:
            candidates = {s for entry in mine for s in postings.get(entry, ())}.union(dense)
        scored = [
            (_dot(mine, vectors[s]) if sizes[s] == sizes[index] else 0.0, s) for s in candidates
        ]
        best = max(scored, default=(0.0, -1))
        if best[0] >= threshold:
            survivor = names[best[1]]
            aliases[name] = survivor
            draft.actions[survivor] = _unite_actions(
                draft.actions[survivor], draft.actions.pop(name)
            )
            report.merged_actions.append(MergedAction(name, survivor, round(best[0], 4)))
        else:
            survivors.append(index)
            if len(mine) > _SPARSE_ENTRIES:
                dense.append(index)
            else:
                for entry in mine:
                    postings.setdefault(entry, []).append(index)
    if aliases:
        for name, action in draft.actions.items():
            conflicts = [aliases.get(c, c) for c in action.conflicts]
            conflicts = [c for c in dict.fromkeys(conflicts) if c != name]
            draft.actions[name] = action.model_copy(update={"conflicts": conflicts})
    return aliases


class _RuleIndex:
    """The draft's rules by (canonical condition, action) and by id, so adding a rule costs one
    parse and a look-up rather than a parse of every rule kept so far (2,000 rules took
    minutes)."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, str], int] = {}
        self.taken: set[str] = set()

    def add(self, draft: Draft, report: MergeReport, rule: Rule) -> None:
        key = (canonical_condition(rule.when), rule.then)
        index = self.by_key.get(key)
        if index is not None:
            kept = draft.rules[index]
            draft.rules[index] = kept.model_copy(update={"source": union(kept.source, rule.source)})
            report.dropped_rules.append(rule.id)
            return
        if rule.id in self.taken:
            number = 2
            while f"{rule.id}_{number}" in self.taken:
                number += 1
            report.renamed_rules[f"{rule.id}_{number}"] = rule.id
            rule = rule.model_copy(update={"id": f"{rule.id}_{number}"})
        self.by_key[key] = len(draft.rules)
        self.taken.add(rule.id)
        draft.rules.append(rule)


_SPARSE_ENTRIES = 64
"""A vector with at most this many non-zero entries is indexed by them."""


def _unit_entries(vector: Sequence[float]) -> dict[int, float]:
    norm = math.sqrt(sum(value * value for value in vector))
    if not norm:
        return {}
    return {index: value / norm for index, value in enumerate(vector) if value}


def _dot(left: dict[int, float], right: dict[int, float]) -> float:
    if len(right) < len(left):
        left, right = right, left
    return sum(value * right.get(index, 0.0) for index, value in left.items())


def _add_principle(draft: Draft, principle: Principle) -> None:
    for index, kept in enumerate(draft.principles):
        if kept.id == principle.id or " ".join(kept.text.split()) == " ".join(
            principle.text.split()
        ):
            draft.principles[index] = kept.model_copy(
                update={"source": union(kept.source, principle.source)}
            )
            return
    draft.principles.append(principle)
