"""`pedrag why FILE --state 'frustration=0.8,hint_requests=3'`: explain one policy decision.

For a state the designer writes down: which rules hold, the help ceiling and the step that set
it, which rules are eligible under it and each one's chance of being selected, plus the
monitors and theory switches that would fire. Metrics left out take their default (listed).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from pedrag.commands._options import add_db_option, add_format_option
from pedrag.commands.check import _colour
from pedrag.compiler.reports.text import format_report
from pedrag.kernel.errors import PedragError
from pedrag.kernel.rungs import rung_name
from pedrag.kernel.suggest import did_you_mean
from pedrag.kernel.wording import shown_tags
from pedrag.runtime.policy.compiled import (
    CompiledPolicy,
    MetricSpec,
    PolicyFormatError,
    Turn,
    Value,
)

NAME = "why"
ORDER = 30
HELP = "explain which rules hold, the ceiling and the selection for a given state"
DESCRIPTION = """\
Explain the policy's decision for one learner state: the rules whose condition holds (with
their actions' tags, a tag only a wording gives marked derived), the per-turn help ceiling and
which ceiling step set it, the rules eligible under the ceiling and their selection
probabilities, and the monitors and theory switches that fire.

FILE is a theory file (YAML) or a compiled policy (JSON from `pedrag compile`). Metrics not in
--state take their default. Computed metrics may be given directly (e.g. stuck_turns=3);
otherwise they are computed from a one-turn history.

exit status: 0 explained, 1 the theory file has errors, 2 usage problem (bad path, bad --state)
"""
EPILOG = """\
examples:
  pedrag why theories/socratic.yaml --state 'frustration=0.8,attempts=3'
  pedrag why theories/socratic.yaml --state 'intent=solution_demand,mastery=0.9' --format json
  pedrag why socratic.policy.json --state 'exam_active=true'
  pedrag why theories/socratic.yaml --question 'What is chlorophyll?' --course biology_101

With --question (and --course, the course `pedrag index` indexed), also what grounding would
do: whether the question is a concept question, whether the contract requires grounding, and
the passages retrieval would show (with their citations and how much of the question each
covers) or that none supports an answer. With an endpoint configured (OPENAI_BASE_URL /
OPENAI_API_KEY, as for `pedrag chat`) and passage vectors of its PEDRAG_EMBEDDING_MODEL
(`pedrag index --endpoint`), retrieval fuses them with BM25 as the tutor's does, and each
passage says what found it.
"""


class StateArgumentError(PedragError, ValueError):
    pass


# Numbers as the condition language writes them, with a sign: no `nan`, `inf`, `1_000` or
# non-ASCII digits, which Python's int()/float() would accept.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a theory file, or a compiled policy (.json)")
    parser.add_argument(
        "--state", default="", metavar="NAME=VALUE,...", help="metric values, comma-separated"
    )
    add_format_option(parser)
    parser.add_argument(
        "--question", metavar="TEXT", help="a learner's question: show what would be retrieved"
    )
    parser.add_argument("--course", metavar="ID", help="the course whose materials ground it")
    add_db_option(parser, "database holding the course index")
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour diagnostics (default: auto)",
    )


def parse_value(metric: MetricSpec, text: str) -> Value:
    """One `--state` value, checked against the metric's domain."""
    raw = text.strip()
    domain = f"`{metric.name}` is {metric.describe_domain()}"
    if metric.type == "bool":
        if raw.lower() in ("true", "false"):
            return raw.lower() == "true"
        raise StateArgumentError(f"`{metric.name}={raw}`: {domain}")
    if metric.type == "enum":
        if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
            raw = raw[1:-1]  # `intent='attempt'`, as a quoted string in a condition
        if raw in metric.values:
            return raw
        meant = did_you_mean(raw, metric.values)
        hint = f" ({meant})" if meant else ""
        raise StateArgumentError(f"`{metric.name}={raw}`: {domain}{hint}")
    if not _NUMBER.fullmatch(raw):
        raise StateArgumentError(f"`{metric.name}={raw}` is not a number: {domain}")
    exact = float(raw) + 0.0  # + 0.0 turns -0 into 0
    if not metric.low <= exact <= metric.high:  # also rejects 1e400 (inf)
        raise StateArgumentError(f"`{metric.name}={raw}` is outside the domain: {domain}")
    if metric.type == "int":
        if exact != int(exact):
            raise StateArgumentError(f"`{metric.name}={raw}` is not a whole number: {domain}")
        number: float | int = int(exact)
    else:
        number = exact
    return number


def parse_state(policy: CompiledPolicy, text: str) -> dict[str, Value]:
    state: dict[str, Value] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, equals, value = part.partition("=")
        name = name.strip()
        if not equals or not name:
            raise StateArgumentError(f"`{part}` is not NAME=VALUE")
        if name not in policy.metrics:
            hint = did_you_mean(name, policy.metrics, lead="; ")
            raise StateArgumentError(f"unknown metric `{name}`{hint}")
        if name in state:
            raise StateArgumentError(f"`{name}` is given twice")
        state[name] = parse_value(policy.metrics[name], value)
    return state


def _load(path: str, colour: bool) -> CompiledPolicy | int:
    if path.endswith(".json"):
        try:
            return CompiledPolicy.load(path)
        except (OSError, ValueError) as exc:
            print(f"pedrag {NAME}: cannot load {path}: {exc}", file=sys.stderr)
            return 2
    if not Path(path).is_file():
        print(f"pedrag {NAME}: no such file: {path}", file=sys.stderr)
        return 2
    from pedrag.dsl.loader import load_file
    from pedrag.runtime.policy.theory_set import compile_theory

    loaded = load_file(path)
    if loaded.theory is None or not loaded.ok:
        if loaded.kind == "curriculum":
            print(f"pedrag {NAME}: {path} is a curriculum, not a theory file", file=sys.stderr)
            return 2
        summary = {"errors": len(loaded.diagnostics), "warnings": 0, "theories": []}
        print(
            format_report(loaded.diagnostics, {loaded.path: loaded.source}, 1, summary, colour),
            file=sys.stderr,
        )
        return 1
    try:
        return compile_theory(loaded.theory)
    except PolicyFormatError as exc:  # pragma: no cover - lowering a resolved theory does not fail
        print(f"pedrag {NAME}: {exc}", file=sys.stderr)
        return 1


def explain(policy: CompiledPolicy, given: dict[str, Value]) -> dict[str, Any]:
    """The decision for one state, as data (what `--format json` prints)."""
    turn = policy.prepare([given])
    state = dict(turn.state)
    state.update({k: v for k, v in given.items() if policy.metrics[k].source == "computed"})
    turn = Turn(state, turn.calls)
    decision = policy.ceiling(state)
    set_by: dict[str, Any] | None = None
    specs = {spec.index: spec for spec in policy.ceiling_specs}
    for applied in decision.trace:  # pedrag.kernel.ceiling applied them; name the last change
        if applied.after != applied.before or applied.effect == "set":
            spec = specs[applied.position]
            set_by = {
                "step": applied.position,
                "effect": applied.effect,
                "rung": applied.rung,
                "when": spec.label,
                "runtime": spec.runtime,
            }
    matching = policy.matching(turn)
    eligible = policy.eligible(turn, decision.rung)
    probabilities = policy.probabilities(eligible)
    rules = []
    for index in matching:
        rule = policy.rules[index]
        action = policy.actions[rule.action]
        rules.append(
            {
                "rule": rule.id,
                "index": index,
                "action": rule.action,
                "rung": action.rung,
                # `tags` is the union invariants and the runtime read; `derived_tags` the ones
                # only a wording gives (compiled-policy.md), each with its placeholder.
                "tags": sorted(action.tags),
                "derived_tags": dict(action.derived_tags),
                "weight": rule.weight,
                "priority": rule.priority,
                "when": policy.rule_texts[index],
                "eligible": index in probabilities,
                "probability": probabilities.get(index, 0.0),
            }
        )
    return {
        "theory": policy.theory_id,
        "selection": policy.selection,
        "state": {name: state[name] for name in policy.metrics},
        "given": sorted(given),
        "defaults": [
            n for n, m in policy.metrics.items() if n not in given and m.source != "computed"
        ],
        "computed": [
            n for n, m in policy.metrics.items() if n not in given and m.source == "computed"
        ],
        "ceiling": {
            "rung": decision.rung,
            "start": decision.start,
            "set_by": set_by,
            "steps_applied": [
                {"step": i, "effect": e, "rung": r, "when": specs[i].label}
                for i, e, r in decision.steps_applied
            ],
        },
        "matching": rules,
        "eligible": [policy.rules[i].id for i in eligible],
        "probabilities": {policy.rules[i].id: p for i, p in probabilities.items()},
        "monitors": list(policy.monitors_fired(turn)),
        "switch": policy.switch_target(turn),
    }


def grounding_report(
    policy: CompiledPolicy,
    state: dict[str, Any],
    question: str,
    course: str | None,
    db: str | None,
    eligible: list[str],
) -> dict[str, Any]:
    """What a turn with ``question`` in ``state`` would retrieve (DESIGN, "Grounding"): the
    pre-classifier's concept signal, the policy core's contract, the passages shown. Raises
    ``StoreError`` when the database cannot be opened."""
    from pedrag.kernel.sources import CONCEPT_QUESTION_METRIC, INTENT_METRIC
    from pedrag.runtime.course.grounding import GroundingKind, retrieve
    from pedrag.runtime.course.index import CourseIndex
    from pedrag.runtime.policy.policy_core import PolicyInput, compute_contract, ground_for_action
    from pedrag.runtime.store.session_store import SessionStore
    from pedrag.runtime.turn.classifier import heuristic_concept_question

    sources = {name: metric.source for name, metric in policy.metrics.items()}
    trusted = {n: v for n, v in state.items() if sources[n] == "trusted"}
    classified = {n: v for n, v in state.items() if sources[n] == "classified"}
    concept = classified.get(CONCEPT_QUESTION_METRIC)
    if not isinstance(concept, bool):
        concept = heuristic_concept_question(question, classified.get(INTENT_METRIC))
    classified[CONCEPT_QUESTION_METRIC] = concept
    report: dict[str, Any] = {"question": question, "concept_question": concept, "course": course}
    if course is None:
        report.update(materials=False, grounding_required=False, passages=[])
        return report
    with SessionStore(db) as store:
        index = CourseIndex(store, _embeddings_from_env())
        materials = index.has_course(course)
        contract = compute_contract(
            PolicyInput.of(trusted, classified), policy, materials=materials
        )
        chosen = {rule.action for rule in policy.rules if rule.id in eligible}
        grounded_actions = sorted(
            action
            for action in chosen
            if ground_for_action(
                contract, frozenset(policy.actions[action].tags), materials=materials
            ).grounding_required
            and not contract.grounding_required
        )
        report.update(
            materials=materials,
            grounding_required=contract.grounding_required,
            grounded_if_chosen=grounded_actions,
        )
        kind: GroundingKind = "question" if contract.grounding_required else "action"
        grounding = retrieve(index, course, kind, question, lambda passage: True)
    report["passages"] = [p.to_dict() for p in grounding.passages]
    report["weak"] = [p.to_dict() for p in grounding.candidates if not p.supports][:3]
    fused = any(p.found_by != "bm25" for p in grounding.candidates)
    report["vectors"] = index.embedder.model if fused and index.embedder else None
    return report


def _embeddings_from_env() -> Any:
    """The configured endpoint's embeddings, as the tutor would use them; None offline or
    when a setting is unusable (retrieval is then BM25 alone, as the tutor's would fail)."""
    from pedrag.runtime.course.vectors import endpoint_embeddings
    from pedrag.runtime.llm.openai_backend import backend_from_env

    try:
        return endpoint_embeddings(backend_from_env())
    except ValueError:
        return None


def format_grounding(grounding: dict[str, Any]) -> list[str]:
    out = ["", f"grounding for {grounding['question']!r}:"]
    out.append(f"  concept question: {'yes' if grounding['concept_question'] else 'no'}")
    if grounding["course"] is None:
        out.append("  no --course given: nothing to retrieve from")
        return out
    if not grounding["materials"]:
        out.append(f"  course {grounding['course']}: no indexed materials (`pedrag index`)")
        return out
    required = grounding["grounding_required"]
    out.append(f"  contract: grounding {'required' if required else 'not required'}")
    if grounding["grounded_if_chosen"]:
        out.append("  grounded if chosen: " + ", ".join(grounding["grounded_if_chosen"]))
    if not grounding["passages"] and required:
        out.append("  no passage supports an answer: the tutor says the materials do not cover it")
    elif not grounding["passages"]:
        out.append("  no passage supports the question")
    fused = grounding.get("vectors")
    if fused:
        out.append(f"  searched: BM25 fused with the {fused} vectors")

    def found(item: dict[str, Any]) -> str:
        return f", found by {item['found_by']}" if fused else ""

    for item in grounding["passages"]:
        out.append(
            f"  shown {item['citation']}  covers {item['coverage']:.0%}{found(item)}: "
            f"{item['text'][:200]}"
        )
    for item in grounding.get("weak", []):
        out.append(f"  too weak {item['citation']}  covers {item['coverage']:.0%}{found(item)}")
    return out


def _value(value: Value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)  # never rounded: 0.100000002 is not 0.1 to a close threshold
    return str(value)


def format_text(report: dict[str, Any]) -> str:
    out = [f"theory {report['theory']} (selection: {report['selection']})", "", "state:"]
    state = report["state"]
    for name in report["given"]:
        out.append(f"  {name} = {_value(state[name])}")
    if report["defaults"]:
        out.append(
            "  at default (not given): "
            + ", ".join(f"{n}={_value(state[n])}" for n in report["defaults"])
        )
    if report["computed"]:
        out.append(
            "  computed from a one-turn history: "
            + ", ".join(f"{n}={_value(state[n])}" for n in report["computed"])
        )
    ceiling = report["ceiling"]
    out += ["", f"ceiling: {rung_name(ceiling['rung'])}"]
    if ceiling["set_by"]:
        s = ceiling["set_by"]
        out.append(f"  set by step {s['step']} ({s['effect']} {rung_name(s['rung'])}): {s['when']}")
    else:
        out.append(f"  the start rung {rung_name(ceiling['start'])} (no step changed it)")
    for step in ceiling["steps_applied"]:
        out.append(
            f"  step {step['step']} held: {step['effect']} {rung_name(step['rung'])} ({step['when']})"
        )
    matching = report["matching"]
    out += ["", f"rules that hold: {len(matching)}"]
    width = max((len(r["rule"]) for r in matching), default=0)
    for r in matching:
        if r["eligible"]:
            status = f"eligible, p = {r['probability']:.3f}"
        else:
            status = f"above the ceiling ({rung_name(r['rung'])} > {rung_name(ceiling['rung'])})"
        out.append(
            f"  {r['rule']:<{width}}  -> {r['action']} ({rung_name(r['rung'])}, weight {r['weight']:g}, priority {r['priority']})  {status}"
        )
        derived = r["derived_tags"]
        declared = [tag for tag in r["tags"] if tag not in derived]
        if r["tags"]:
            out.append(f"  {'':<{width}}     tags: " + ", ".join(shown_tags(declared, derived)))
    eligible = report["eligible"]
    out += ["", f"eligible under {rung_name(ceiling['rung'])}: {len(eligible)}"]
    if not eligible:
        out.append("  none: the fallback selector chooses among the actions under the ceiling")
    for rule_id, p in sorted(report["probabilities"].items(), key=lambda item: -item[1]):
        out.append(f"  {p:6.1%}  {rule_id}")
    out += ["", "monitors fired: " + (", ".join(report["monitors"]) or "none")]
    out.append("theory switch: " + (report["switch"] or "none"))
    if "grounding" in report:
        out += format_grounding(report["grounding"])
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    policy = _load(args.file, _colour(args.color))
    if isinstance(policy, int):
        return policy
    try:
        given = parse_state(policy, args.state)
    except StateArgumentError as exc:
        print(f"pedrag why: bad --state: {exc}", file=sys.stderr)
        return 2
    report = explain(policy, given)
    if args.question is not None:
        from pedrag.runtime.course.index import CourseIndexError, require_course_id
        from pedrag.runtime.store.session_store import StoreError

        try:
            if args.course is not None:
                require_course_id(args.course)
            report["grounding"] = grounding_report(
                policy, report["state"], args.question, args.course, args.db, report["eligible"]
            )
        except (StoreError, CourseIndexError) as exc:
            print(f"pedrag why: {exc}", file=sys.stderr)
            return 2
    elif args.course is not None:
        print(
            "pedrag why: --course needs --question (the question to retrieve for)", file=sys.stderr
        )
        return 2
    if args.format == "json":
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        print(format_text(report))
    return 0
