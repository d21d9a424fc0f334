"""Suggested fixes, and `--fix`: edits that can only improve a file.

Compiler stage helper. `suggest` takes an `Analysis` and a gap `Region`; gives a rule (the
region as its condition) and whether adding it is **safe**: the chosen action fits under the
ceiling everywhere in the region (so the rule really fills the gap) and breaks no invariant
there. No existing rule is eligible inside a gap, so the new rule cannot conflict with or
shadow any of them. Actions are tried from the lowest rung up (least help first), preferring
actions other rules already use.

`fix_text` applies suggestions to a file's text and keeps an edit only when it is proved
harmless:

- **insertions only**: a new rule is inserted right after the last rule's last value (found
  from the composed YAML node graph, so neither the order of the sections nor comments after
  the list matter), in the style of the rules before it (block or flow mapping, block or
  flow sequence, one line or several), with the file's newlines. Every byte of the original
  stays where it was, so every comment, blank line and key order is kept.
- **re-read**: the edited text must parse to exactly the old document plus the new rules.
- **re-checked**: the edited text is checked again; an edit is kept only if it has no more
  errors than before and the gap it was for is smaller. A batch that fails is retried one
  fix at a time.

With --unsafe-fixes, the guard a conflict or invariant-violation finding proposes
(`pedrag.compiler.guards`) is added to its rule's `when:`: that one value is rewritten as a
double-quoted scalar, the file must read back as the old document with that condition
changed, and checked again it must have fewer errors and none that it did not have. Unsafe,
because it changes where a rule applies.

A round-tripping YAML library (ruamel.yaml) was tried for the edit and rejected: appending to
a list there moves the comments that follow the list above the new item, rewrites multi-line
flow lists onto one line and respaces end-of-line comments, so it would need the same checks
and still refuse common layouts.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from pedrag.compiler import formula as F
from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.dsl.spans import SourceText
from pedrag.dsl.yaml_source import YamlError, load_yaml
from pedrag.kernel.errors import PedragError

if TYPE_CHECKING:
    from pedrag.compiler.analysis import Analysis
    from pedrag.compiler.config import ConfigSource
    from pedrag.compiler.regions import Region

MARK = "added by pedrag check --fix"
MAX_ROUNDS = 10  # each round can reveal gaps the report's top three hid


@dataclass(frozen=True)
class Suggestion:
    rule_id: str
    when: str
    then: str
    safe: bool
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.rule_id,
            "when": self.when,
            "then": self.then,
            "safe": self.safe,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Suggestion:
        return cls(data["id"], data["when"], data["then"], data["safe"], data["reason"])


def suggest(analysis: Analysis, region: Region, number: int) -> Suggestion:
    theory = analysis.theory
    used = {rule.action for rule in theory.rules}
    order = sorted(
        theory.actions.values(), key=lambda a: (a.rung, a.name not in used, -a.priority, a.name)
    )
    taken = {rule.id for rule in theory.rules}
    rule_id = f"fill_gap_{number}"
    while rule_id in taken:
        number += 1
        rule_id = f"fill_gap_{number}"
    first_reason = "no action fits"
    for action in order:
        fits = analysis.translator.fits(action.rung)
        outcome = analysis.decide([region.node, F.not_(fits)], witness=False)
        if not outcome.unsat:
            reason = f"`{action.name}` is above the ceiling in part of the region"
            first_reason = first_reason if first_reason != "no action fits" else reason
            continue
        broken = [
            inv.id
            for inv in theory.invariants
            if not analysis.decide(
                [region.node, analysis.violations[(inv.id, action.name)]], witness=False
            ).unsat
        ]
        if broken:
            reason = f"`{action.name}` would break invariant(s) {', '.join(broken)}"
            first_reason = first_reason if first_reason != "no action fits" else reason
            continue
        return Suggestion(
            rule_id,
            region.condition,
            action.name,
            True,
            "eligible everywhere in the region and breaks no invariant",
        )
    fallback = order[0].name if order else "?"
    return Suggestion(rule_id, region.condition, fallback, False, first_reason)


# -- the edit --------------------------------------------------------------------------------


class EditError(PedragError):
    """The file's layout leaves no place where a rule can be inserted without rewriting."""


_PLAIN = re.compile(r"^[a-z][a-z0-9_]*$")


def _scalar(value: str) -> str:
    return (
        value
        if _PLAIN.match(value) and value not in ("true", "false", "null")
        else json.dumps(value)
    )


def _flow_item(rule: Suggestion) -> str:
    return f"{{id: {_scalar(rule.rule_id)}, when: {json.dumps(rule.when)}, then: {_scalar(rule.then)}}}"


def _mark(rule: Suggestion) -> str:
    return f"# {MARK} ({'safe' if rule.safe else 'UNSAFE: ' + rule.reason})"


def _rules_node(root: yaml.Node) -> yaml.Node:
    if not isinstance(root, yaml.MappingNode):
        raise EditError("the document is not a mapping")
    for key, value in root.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "rules":
            return value
    raise EditError("the file has no `rules:` list")


def _deepest_last(node: yaml.Node) -> yaml.Node:
    """The node written last inside `node`: where its text really ends (a block collection's
    end mark lies after the comments and blank lines that follow it)."""
    while isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style:
        if not node.value:
            break
        last = node.value[-1]
        node = last[1] if isinstance(node, yaml.MappingNode) else last
    return node


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _after_line(text: str, offset: int, newline: str) -> tuple[int, str]:
    """Where the line holding `offset` ends (after its break), and a break to add if the
    file's last line has none."""
    end = text.find("\n", offset)
    if end < 0:
        return len(text), newline
    return end + 1, ""


def insert_rules(text: str, rules: list[Suggestion]) -> str:
    """`text` with `rules` appended to its `rules:` list by insertions only."""
    if not rules:
        return text
    newline = "\r\n" if "\r\n" in text else "\n"
    try:
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        raise EditError("the file is not valid YAML") from None
    if root is None:
        raise EditError("the file is empty")
    node = _rules_node(root)
    if not isinstance(node, yaml.SequenceNode):
        raise EditError("`rules:` is not a list")
    if node.flow_style:
        return _insert_flow(text, node, rules, newline)
    return _insert_block(text, node, rules, newline)


def _insert_block(text: str, node: yaml.SequenceNode, rules: list[Suggestion], newline: str) -> str:
    last = node.value[-1]
    item_start = last.start_mark.index
    dash = text.rfind("-", _line_start(text, item_start), item_start)
    if dash < 0:
        raise EditError("cannot find the `-` of the last rule")
    indent = " " * (dash - _line_start(text, dash))
    end_node = _deepest_last(last)
    end = end_node.end_mark.index
    if isinstance(end_node, yaml.ScalarNode) and end_node.style in ("|", ">"):
        # A block scalar ends after its line break (and any lines it keeps).
        insert_at, extra = (
            (end, "") if text[end - 1 : end] == "\n" else _after_line(text, end, newline)
        )
    else:
        insert_at, extra = _after_line(text, end, newline)
    flow = isinstance(last, yaml.MappingNode) and last.flow_style
    content = " " * (item_start - _line_start(text, item_start))
    gap = " " * max(1, item_start - dash - 1)  # `-   id:` keeps its spacing
    lines = []
    for rule in rules:
        if flow:
            lines.append(f"{indent}-{gap}{_flow_item(rule)}  {_mark(rule)}{newline}")
        else:
            lines.append(
                f"{indent}-{gap}id: {_scalar(rule.rule_id)}  {_mark(rule)}{newline}"
                f"{content}when: {json.dumps(rule.when)}{newline}"
                f"{content}then: {_scalar(rule.then)}{newline}"
            )
    return text[:insert_at] + extra + "".join(lines) + text[insert_at:]


def _insert_flow(text: str, node: yaml.SequenceNode, rules: list[Suggestion], newline: str) -> str:
    close = node.end_mark.index - 1
    if text[close : close + 1] != "]":
        raise EditError("cannot find the `]` closing `rules:`")
    items = [_flow_item(rule) for rule in rules]
    if not node.value:
        return text[:close] + ", ".join(items) + text[close:]
    last = node.value[-1]
    end = last.end_mark.index
    between = text[end:close]
    comma = re.match(r"\s*,", between)
    starts = [node.start_mark.index] + [item.start_mark.index for item in node.value]
    lines = {SourceText("", text).position(offset)[0] for offset in starts[-2:]}
    if len(lines) > 1:  # one rule per line: keep it so, with a trailing comma if it had one
        column = last.start_mark.index - _line_start(text, last.start_mark.index)
        pad = newline + " " * column
        if comma:
            at = end + comma.end()
            return text[:at] + "".join(f"{pad}{item}," for item in items) + text[at:]
        return text[:end] + "".join(f",{pad}{item}" for item in items) + text[end:]
    return text[:end] + "".join(f", {item}" for item in items) + text[end:]


# -- applying fixes --------------------------------------------------------------------------


@dataclass
class FixOutcome:
    """What `fix_text` did to one file."""

    path: str
    original: str
    fixed: str
    applied: list[Suggestion] = field(default_factory=list)
    rejected: list[tuple[Suggestion, str]] = field(default_factory=list)
    guarded: list[dict[str, str]] = field(default_factory=list)  # guards added (unsafe fixes)
    guards_rejected: list[tuple[dict[str, str], str]] = field(default_factory=list)
    errors_before: int = 0
    errors_after: int = 0

    @property
    def changed(self) -> bool:
        return self.fixed != self.original

    def diff(self) -> str:
        return "".join(
            difflib.unified_diff(
                self.original.splitlines(keepends=True),
                self.fixed.splitlines(keepends=True),
                f"a/{self.path.lstrip('/')}",
                f"b/{self.path.lstrip('/')}",
            )
        )


def guard_suggestions(diagnostics: list[Diagnostic], path: str) -> list[dict[str, str]]:
    """The proved guards of a file's conflict and invariant-violation findings
    (`pedrag.compiler.guards`): {"rule", "add", "when"} each, one per rule."""
    found: dict[str, dict[str, str]] = {}
    for d in diagnostics:
        if d.file == path and "guard" in d.data:
            found.setdefault(d.data["guard"]["rule"], d.data["guard"])
    return list(found.values())


def guard_edit(text: str, path: str, guard: dict[str, str]) -> str | None:
    """The text with rule `guard["rule"]`'s `when:` value replaced by `guard["when"]` (a
    double-quoted scalar; every other byte kept), or None when the rule or its condition is
    not found as one plain value."""
    try:
        data, positions = load_yaml(SourceText(path, text))
    except YamlError:
        return None
    rules = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(rules, list):
        return None
    for index, rule in enumerate(rules):
        if isinstance(rule, dict) and rule.get("id") == guard["rule"]:
            where = positions.values.get(("rules", index, "when"))
            if where is None:
                return None
            start, end = where
            edited = text[:start] + json.dumps(guard["when"], ensure_ascii=False) + text[end:]
            try:
                reread, _ = load_yaml(SourceText(path, edited))
            except YamlError:
                return None
            expected = dict(data)
            expected["rules"] = [
                {**r, "when": guard["when"]} if i == index else r for i, r in enumerate(rules)
            ]
            return edited if reread == expected else None
    return None


def _error_keys(diagnostics: list[Diagnostic]) -> set[tuple[str, tuple[str, ...], str]]:
    return {(d.check, d.items, d.message) for d in diagnostics if d.severity is Severity.ERROR}


def _apply_guards(
    outcome: FixOutcome, diagnostics_of: Any, current: list[Diagnostic]
) -> list[Diagnostic]:
    """Add each proved guard that, checked again, leaves fewer errors and no new one."""
    for guard in guard_suggestions(current, outcome.path):
        edited = guard_edit(outcome.fixed, outcome.path, guard)
        if edited is None:
            outcome.guards_rejected.append(
                (guard, "the rule's `when:` could not be edited in place")
            )
            continue
        after = diagnostics_of(edited)
        new = _error_keys(after) - _error_keys(current)
        if new or _errors(after) >= _errors(current):
            outcome.guards_rejected.append(
                (guard, "checked again, the file would not have fewer errors and no new one")
            )
            continue
        outcome.fixed, current = edited, after
        outcome.guarded.append(guard)
    return current


def gap_suggestions(diagnostics: list[Diagnostic], path: str) -> list[Suggestion]:
    return [
        Suggestion.from_dict(d.data["suggested_rule"])
        for d in diagnostics
        if d.check == "coverage-gap" and d.file == path and "suggested_rule" in d.data
    ]


def _errors(diagnostics: list[Diagnostic]) -> int:
    return sum(d.severity is Severity.ERROR for d in diagnostics)


def _uncovered(diagnostics: list[Diagnostic]) -> float:
    shares = [d.data["uncovered"] for d in diagnostics if d.check == "coverage-gap"]
    return max(shares, default=0.0)


def _rule_data(rule: Suggestion) -> dict[str, Any]:
    return {"id": rule.rule_id, "when": rule.when, "then": rule.then}


def _reread_matches(path: str, original: Any, edited: str, added: list[Suggestion]) -> bool:
    """The edited text parses to the original document plus the added rules, nothing else."""
    try:
        data, _ = load_yaml(SourceText(path, edited))
    except YamlError:
        return False
    expected = dict(original)
    expected["rules"] = [*original["rules"], *(_rule_data(rule) for rule in added)]
    return bool(data == expected and list(data) == list(original))


def fix_text(
    text: str, path: str, config: ConfigSource | None = None, unsafe: bool = False
) -> FixOutcome:
    """Apply the coverage-gap fixes of the file at `path` (whose text is `text`) as far as each
    is proved harmless, and with `unsafe` first the proved guards of its conflict and
    invariant-violation findings; returns the outcome (the text is not written)."""
    from pedrag.compiler.driver import check_text

    def diagnostics_of(candidate: str) -> list[Diagnostic]:
        return [d for d in check_text(candidate, path, config).diagnostics if d.file == path]

    current_diagnostics = diagnostics_of(text)
    outcome = FixOutcome(path, text, text, errors_before=_errors(current_diagnostics))
    outcome.errors_after = outcome.errors_before
    if unsafe:  # a guard changes where a rule applies: the designer asks for it
        current_diagnostics = _apply_guards(outcome, diagnostics_of, current_diagnostics)
        outcome.errors_after = _errors(current_diagnostics)
    try:
        original, _ = load_yaml(SourceText(path, outcome.fixed))
    except YamlError:
        return outcome
    if not isinstance(original, dict) or not isinstance(original.get("rules"), list):
        return outcome
    tried: set[tuple[str, str]] = set()
    for _ in range(MAX_ROUNDS):
        candidates = [
            s for s in gap_suggestions(current_diagnostics, path) if (s.when, s.then) not in tried
        ]
        chosen = [s for s in candidates if s.safe or unsafe]
        outcome.rejected.extend(
            (s, f"unsafe ({s.reason}); --unsafe-fixes applies it")
            for s in candidates
            if not s.safe and not unsafe
        )
        tried.update((s.when, s.then) for s in candidates)
        if not chosen:
            break
        verdict = _try(outcome, original, chosen, current_diagnostics, diagnostics_of)
        if verdict is not None and len(chosen) > 1:  # find which of the batch are harmless
            for suggestion in chosen:
                alone = _try(outcome, original, [suggestion], current_diagnostics, diagnostics_of)
                if alone is None:
                    verdict = None
                    current_diagnostics = diagnostics_of(outcome.fixed)
                else:
                    outcome.rejected.append((suggestion, alone))
        elif verdict is not None:
            outcome.rejected.append((chosen[0], verdict))
        if verdict is not None:
            break
        current_diagnostics = diagnostics_of(outcome.fixed)
    outcome.errors_after = _errors(current_diagnostics)
    return outcome


def _try(
    outcome: FixOutcome,
    original: Any,
    batch: list[Suggestion],
    before: list[Diagnostic],
    diagnostics_of: Any,
) -> str | None:
    """Apply `batch` to `outcome.fixed` if it is harmless; None when applied, else why not."""
    # Rule ids are renumbered against what is already in the file (a batch may collide).
    taken = {str(rule.get("id")) for rule in original["rules"] if isinstance(rule, dict)}
    taken |= {s.rule_id for s in outcome.applied}
    renamed = []
    for suggestion in batch:
        rule_id, number = suggestion.rule_id, 1
        while rule_id in taken:
            number += 1
            rule_id = f"fill_gap_{number}"
        taken.add(rule_id)
        renamed.append(
            Suggestion(
                rule_id, suggestion.when, suggestion.then, suggestion.safe, suggestion.reason
            )
        )
    try:
        edited = insert_rules(outcome.fixed, renamed)
    except EditError as exc:
        return f"cannot insert a rule into this file's layout: {exc}"
    if not _reread_matches(outcome.path, original, edited, [*outcome.applied, *renamed]):
        return "the edited file would not read back as the same document plus the new rule"
    after = diagnostics_of(edited)
    if _errors(after) > _errors(before):
        return (
            f"the fixed file would have more errors ({_errors(after)} instead of {_errors(before)})"
        )
    if _uncovered(after) >= _uncovered(before) - 1e-12:
        return "the rule would not make the uncovered share smaller"
    outcome.fixed = edited
    outcome.applied.extend(renamed)
    return None
