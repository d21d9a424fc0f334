"""The front end of an edited file made from its previous version's, when only one of one
rule's values changed, on one line.

Front end stage helper. Takes a file's previous front end (a `LoadedFile` the check cache
kept whole for the same name, `compiler.check_cache.LoadedFiles`) and the file's new bytes;
gives the new file's `LoadedFile`, equal to what `loader.load_bytes` gives, or None where it
cannot be sure of that (then the whole front end runs). Why: composing, validating and
resolving a 5,000-rule file is linear in the rules an edit did not touch (0.3 s of CPU);
re-reading one rule is not.

The edits it splices are the commonest: the text inside one rule's quoted `when:` scalar, or
one rule's plain `id:`, `then:`, `priority:` or `weight:` scalar, changed on one line.
Everything else must hold, or it declines: the previous version had no diagnostic; no other
value, key or comment changed; the changed value is no alias's target and nothing outside the
rule follows it on its line (whose columns would move). A `when:` scalar stays quoted with the
same quote and holds no quote, backslash, line break or unprintable character (so its value is
its text), and the new condition resolves without a diagnostic. A plain scalar is written, before
and after, as a lower_snake_case name YAML reads as text, as digits, or as digits with a decimal
point, of the same kind (so its value is its text and its type does not change); the rule
validates (`model.Rule`); a new id is no other rule's, a new action is declared. Offsets after
the edit move by its length; every other line and column is the previous version's.
"""

from __future__ import annotations

import re
from dataclasses import replace

import yaml
from pydantic import ValidationError

from pedrag.dsl.ir import ResolvedTheory
from pedrag.dsl.loader import LoadedFile
from pedrag.dsl.model import Rule, Theory
from pedrag.dsl.resolve import TheoryResolver, rule_priority
from pedrag.dsl.spans import SourceText
from pedrag.dsl.split_positions import SplitPositions
from pedrag.dsl.yaml_source import Positions

_PLAIN_FIELDS = ("id", "then", "priority", "weight")
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_INTEGER = re.compile(r"[1-9][0-9]{0,8}")
_DECIMAL = re.compile(r"[0-9]{1,9}\.[0-9]{1,9}")
_STR_TAG, _INT_TAG, _FLOAT_TAG = (f"tag:yaml.org,2002:{tag}" for tag in ("str", "int", "float"))
_RESOLVER = yaml.resolver.Resolver()  # the implicit tags of `yaml_source`'s loaders


def _plain_kind(text: str) -> str | None:
    """The YAML tag a plain scalar written as `text` reads as, for the forms whose value is
    plainly its text (a lower_snake_case name, digits, digits with a decimal point); None for
    any other form (signs, exponents, underscores, quotes, anchors, tags, comments, spaces)."""
    if _NAME.fullmatch(text) or _INTEGER.fullmatch(text) or _DECIMAL.fullmatch(text):
        return str(_RESOLVER.resolve(yaml.ScalarNode, text, (True, False)))
    return None


def _common_prefix(old: str, new: str) -> int:
    """The length of the longest common prefix, by halving (each comparison runs in C)."""
    low, high = 0, min(len(old), len(new))
    while low < high:
        middle = (low + high + 1) // 2
        if old[low:middle] == new[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(old: str, new: str, limit: int) -> int:
    """The length of the longest common suffix, at most `limit`."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if old[len(old) - middle : len(old) - low] == new[len(new) - middle : len(new) - low]:
            low = middle
        else:
            high = middle - 1
    return low


def changed_range(old: str, new: str) -> tuple[int, int, int]:
    """(start, end in `old`, end in `new`) of the one stretch of text that differs."""
    start = _common_prefix(old, new)
    suffix = _common_suffix(old, new, min(len(old), len(new)) - start)
    return start, len(old) - suffix, len(new) - suffix


def _move_conditions(theory: ResolvedTheory, source: SourceText, end: int, delta: int) -> None:
    """Point every condition's scalar map at the new text, its offsets after the edit moved,
    so the new front end holds no part of the previous text (or a kept front end spliced
    from it would carry every earlier version's text along)."""
    located = [
        *(rule.when for rule in theory.rules),
        *(step.when for step in theory.ceiling_steps),
        *(invariant.condition for invariant in theory.invariants),
        *theory.monitors.values(),
        *(switch.when for switch in theory.switches),
    ]
    moved: set[int] = set()
    for item in located:
        scalar = item.scalar
        if scalar is None or id(scalar) in moved:
            continue
        moved.add(id(scalar))
        scalar.move(source, end, delta)


def splice_condition_edit(previous: LoadedFile, raw: bytes) -> LoadedFile | None:
    """`raw`'s front end from `previous`'s (see the module docstring), or None. `previous` is
    used up: its conditions' scalar maps are moved to the new text (`ScalarMap.move`), once
    the splice is certain."""
    theory, model, positions = previous.theory, previous.model, previous.positions
    if previous.diagnostics or theory is None or positions is None:
        return None
    if not isinstance(model, Theory) or len(theory.rules) != len(model.rules):
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    old = previous.source.text
    if text == old:
        return None
    start, end, _ = changed_range(old, text)  # the previous text changed in [start, end)
    delta = len(text) - len(old)
    if isinstance(positions, SplitPositions):
        # One rule's positions read, not the file's (`split_positions`).
        around = positions.rules_around(start, end)
        if len(around) != 1 or positions.aliased[around[0]]:
            return None  # an alias reads a scalar of the rule elsewhere
        searched = positions.rule_positions(around[0]).values
        rule_end = positions.ranges[around[0]][1]
    else:
        searched = positions.values
    found = [
        (path, first, last)
        for path, (first, last) in searched.items()
        if first <= start and end <= last and len(path) == 3 and path[0] == "rules"
    ]
    if len(found) != 1:
        return None
    (path, first, last) = found[0]
    index, name = path[1], path[2]
    if not isinstance(index, int) or name not in ("when", *_PLAIN_FIELDS):
        return None
    if not isinstance(positions, SplitPositions):
        if sum(1 for a, b in positions.values.values() if (a, b) == (first, last)) != 1:
            return None  # an alias reads the same scalar elsewhere
        rule_end = positions.values[("rules", index)][1]
    line_end = old.find("\n", end)
    after = old[rule_end : len(old) if line_end < 0 else line_end]
    if after.strip() and not after.lstrip().startswith("#"):
        return None  # something outside the rule follows on the line: its columns move
    written = text[first : last + delta]
    rule = model.rules[index]
    infos = [position for position, info in enumerate(theory.rules) if info.index == index]
    if len(infos) != 1:
        return None
    value: str | int | float
    if name == "when":
        if not first < start or not end < last:
            return None
        quote, value = written[:1], written[1:-1]
        if quote not in ('"', "'") or written[-1:] != quote or old[first] != quote:
            return None
        if quote in value or "\\" in value or not value.isprintable():
            return None  # not its own text (escapes, a folded line) or not one line
        new_rule = rule.model_copy(update={"when": value})
    else:
        kind = _plain_kind(written)
        if kind is None or kind != _plain_kind(old[first:last]):
            return None  # not plainly its text, or YAML reads it as another type
        if kind not in (_STR_TAG, _INT_TAG, _FLOAT_TAG):
            return None  # a bool or null
        value = (
            written if kind == _STR_TAG else int(written) if kind == _INT_TAG else float(written)
        )
        fields = {field: getattr(rule, field) for field in rule.model_fields_set}
        try:
            new_rule = Rule.model_validate({**fields, name: value})
        except ValidationError:
            return None  # the whole front end says what is wrong
        if name == "id" and any(other.id == value for other in model.rules):
            return None  # a duplicate id
        if name == "then" and value not in theory.actions:
            return None  # an unknown action
    source = SourceText(previous.path, text)

    new_positions: Positions
    if isinstance(positions, SplitPositions):
        new_positions = positions.moved(
            source, end, delta, {path: value} if isinstance(value, str) else {}
        )
        rule_positions = new_positions.rule_positions(index)
    else:
        # An offset at or after the edit's end moves by its length (written out, not a
        # function call per offset: 100,000 of them at 5,000 rules).
        new_positions = Positions(
            source,
            {
                p: (a + delta if a >= end else a, b + delta if b >= end else b)
                for p, (a, b) in positions.values.items()
            },
            {
                p: (a + delta if a >= end else a, b + delta if b >= end else b)
                for p, (a, b) in positions.keys.items()
            },
            {
                p: (a + delta if a >= end else a, b + delta if b >= end else b, v)
                for p, (a, b, v) in positions.scalars.items()
            },
        )
        if isinstance(value, str):
            a, b, _ = new_positions.scalars[path]
            new_positions.scalars[path] = (a, b, value)
        rule_positions = new_positions
    rules = list(model.rules)
    rules[index] = new_rule
    new_model = model.model_copy(update={"rules": rules})
    resolver = TheoryResolver(new_model, rule_positions, previous.path)
    resolver.metrics = dict(theory.metrics)
    resolver._remember_resolved()
    located = resolver.condition(("rules", index, "when"), new_rule.when, "rule")
    if located is None or resolver.diagnostics:
        return None
    _move_conditions(theory, source, end, delta)
    infos_new = list(theory.rules)
    infos_new[infos[0]] = replace(
        theory.rules[infos[0]],
        id=new_rule.id,
        when=located,
        action=new_rule.then,
        weight=float(new_rule.weight),
        priority=rule_priority(new_rule, new_model),
        span=rule_positions.span(("rules", index, "id")),
    )
    return LoadedFile(
        path=previous.path,
        source=source,
        kind=previous.kind,
        theory=replace(theory, rules=tuple(infos_new), model=new_model),
        diagnostics=[],
        positions=new_positions,
        model=new_model,
    )
