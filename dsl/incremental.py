"""The front end of an edited file made from its previous version's, when only one rule's
condition text changed.

Front end stage helper. Takes a file's previous front end (a `LoadedFile` the check cache
kept whole for the same name, `compiler.check_cache.LoadedFiles`) and the file's new bytes;
gives the new file's `LoadedFile`, equal to what `loader.load_bytes` gives, or None where it
cannot be sure of that (then the whole front end runs). Why: composing, validating and
resolving a 5,000-rule file is linear in the rules an edit did not touch (0.3 s of CPU);
re-reading one condition is not.

The one edit it splices is the commonest: the text inside one rule's quoted `when:` scalar
changed, on one line. Everything else must hold, or it declines: the previous version had no
diagnostic; the new scalar is quoted with the same quote, holds no quote, backslash, line
break or unprintable character (so its value is its text), and is no alias's target; the new
condition resolves without a diagnostic. No other line changed, so every other span (line
and column) is the previous version's; offsets after the edit move by its length.
"""

from __future__ import annotations

from dataclasses import replace

from pedrag.dsl.ir import ResolvedTheory
from pedrag.dsl.loader import LoadedFile
from pedrag.dsl.model import Theory
from pedrag.dsl.resolve import TheoryResolver
from pedrag.dsl.spans import SourceText
from pedrag.dsl.yaml_source import Positions


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
    start = _common_prefix(old, text)
    suffix = _common_suffix(old, text, min(len(old), len(text)) - start)
    end = len(old) - suffix  # the previous text changed in [start, end)
    delta = len(text) - len(old)
    found = [
        (path, first, last)
        for path, (first, last, _) in positions.scalars.items()
        if first < start and end < last
    ]
    if len(found) != 1:
        return None
    (path, first, last) = found[0]
    if len(path) != 3 or path[0] != "rules" or path[2] != "when" or not isinstance(path[1], int):
        return None
    if sum(1 for a, b, _ in positions.scalars.values() if (a, b) == (first, last)) != 1:
        return None  # an alias reads the same scalar elsewhere
    quoted = text[first : last + delta]
    quote, value = quoted[:1], quoted[1:-1]
    if quote not in ('"', "'") or quoted[-1:] != quote or old[first] != quote:
        return None
    if quote in value or "\\" in value or not value.isprintable():
        return None  # not its own text (escapes, a folded line) or not one line
    index = path[1]
    rule = model.rules[index]
    infos = [position for position, info in enumerate(theory.rules) if info.index == index]
    if len(infos) != 1:
        return None
    source = SourceText(previous.path, text)

    # An offset at or after the edit's end moves by its length (written out, not a function
    # call per offset: 100,000 of them at 5,000 rules).
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
    a, b, _ = new_positions.scalars[path]
    new_positions.scalars[path] = (a, b, value)
    rules = list(model.rules)
    rules[index] = rule.model_copy(update={"when": value})
    new_model = model.model_copy(update={"rules": rules})
    resolver = TheoryResolver(new_model, new_positions, previous.path)
    resolver.metrics = dict(theory.metrics)
    resolver._remember_resolved()
    located = resolver.condition(path, value, "rule")
    if located is None or resolver.diagnostics:
        return None
    _move_conditions(theory, source, end, delta)
    infos_new = list(theory.rules)
    infos_new[infos[0]] = replace(
        theory.rules[infos[0]], when=located, span=new_positions.span(("rules", index, "id"))
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
