"""Suggested fixes: a rule for each coverage gap, and `--fix` to append them to the file.

Compiler stage helper. `suggest` takes an `Analysis` and a gap `Region`; gives a rule (the
region as its condition) and whether adding it is **safe**: the chosen action fits under the
ceiling everywhere in the region (so the rule really fills the gap) and breaks no invariant
there. No existing rule is eligible inside a gap, so the new rule cannot conflict with or
shadow any of them. Actions are tried from the lowest rung up (least help first), preferring
actions other rules already use. `apply_fixes` appends the suggested rules to the theory
file's `rules:` list as text, keeping everything else byte for byte; unsafe fixes only when
asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pedrag.compiler import formula as F
from pedrag.dsl.diagnostics import Diagnostic
from pedrag.dsl.loader import load_text

if TYPE_CHECKING:
    from pedrag.compiler.analysis import Analysis
    from pedrag.compiler.regions import Region


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
        outcome = analysis.solve([region.node, F.not_(fits)], witness=False)
        if not outcome.unsat:
            reason = f"`{action.name}` is above the ceiling in part of the region"
            first_reason = first_reason if first_reason != "no action fits" else reason
            continue
        broken = [
            inv.id
            for inv in theory.invariants
            if not analysis.solve(
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


def rule_text(suggestion: Suggestion, indent: str, item_indent: str) -> str:
    when = suggestion.when.replace('"', '\\"')
    mark = "safe" if suggestion.safe else f"UNSAFE: {suggestion.reason}"
    return (
        f"{indent}- id: {suggestion.rule_id}  # added by pedrag check --fix ({mark})\n"
        f'{item_indent}when: "{when}"\n'
        f"{item_indent}then: {suggestion.then}\n"
    )


def apply_fixes(path: str, diagnostics: list[Diagnostic], unsafe: bool = False) -> tuple[int, int]:
    """Append the suggested rules of `path`'s coverage-gap diagnostics; returns (applied, skipped)."""
    suggestions = [
        d.data["suggested_rule"]
        for d in diagnostics
        if d.check == "coverage-gap" and d.file == path and "suggested_rule" in d.data
    ]
    chosen = [s for s in suggestions if s["safe"] or unsafe]
    if not chosen:
        return 0, len(suggestions)
    text = Path(path).read_text("utf-8")
    loaded = load_text(text, path)
    positions = loaded.positions
    if positions is None or ("rules",) not in positions.values:
        return 0, len(suggestions)
    start, end = positions.values[("rules",)]
    last = max(
        (p for p in positions.values if len(p) == 2 and p[0] == "rules"),
        key=lambda p: p[1],
        default=None,
    )
    if last is None or text[start : start + 1] == "[":
        return 0, len(suggestions)
    item_start = positions.values[last][0]
    line_start = text.rfind("\n", 0, item_start) + 1
    line = text[line_start:item_start]
    dash = line.find("-")
    if dash < 0:
        return 0, len(suggestions)
    indent = line[:dash]
    item_indent = " " * (item_start - line_start)
    if text[item_start : item_start + 1] == "{":
        item_indent = indent + "  "
    # A block sequence's span can end at the start of the next key's line (`ceiling:` after
    # `rules:`): insert there, not after that line.
    insert_at = end if end > 0 and text[end - 1] == "\n" else text.find("\n", end)
    if insert_at != end:
        insert_at = len(text) if insert_at < 0 else insert_at + 1
    prefix = text[:insert_at] if text[:insert_at].endswith("\n") else text[:insert_at] + "\n"
    block = "".join(
        rule_text(
            Suggestion(s["id"], s["when"], s["then"], s["safe"], s["reason"]), indent, item_indent
        )
        for s in chosen
    )
    Path(path).write_text(prefix + block + text[insert_at:], "utf-8")
    return len(chosen), len(suggestions) - len(chosen)
