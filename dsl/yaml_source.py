"""YAML text -> plain data plus the position of every key and value.

PyYAML's composer keeps marks on every node; we walk the node graph ourselves so that
(1) every path (`("rules", 3, "when")`) has a span for diagnostics, (2) duplicate keys are an
error instead of PyYAML's silent last-one-wins, and (3) each scalar can map offsets inside its
value back to the file (`ScalarMap`), which condition syntax errors need.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import yaml

from pedrag.dsl.spans import ScalarMap, SourceText, Span
from pedrag.kernel.errors import PedragError

Path = tuple[str | int, ...]


@dataclass
class Positions:
    source: SourceText
    values: dict[Path, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path, tuple[int, int]] = field(default_factory=dict)
    scalars: dict[Path, tuple[int, int, str]] = field(default_factory=dict)

    def span(self, path: Path, *, key: bool = False) -> Span:
        """The span of the value at path (or of its key), falling back to the nearest parent."""
        probe = path
        while True:
            table = self.keys if key and probe in self.keys else self.values
            if probe in table:
                start, end = table[probe]
                if table is self.values and end > start:
                    # Point at the first line of a multi-line value only.
                    newline = self.source.text.find("\n", start, end)
                    end = end if newline < 0 else newline
                return self.source.span(start, max(end, start + 1))
            if not probe:
                return self.source.span(0, 1)
            probe = probe[:-1]
            key = False

    def key_span(self, path: Path) -> Span:
        return self.span(path, key=True)

    def scalar_map(self, path: Path) -> ScalarMap | None:
        if path not in self.scalars:
            return None
        start, end, value = self.scalars[path]
        return ScalarMap(self.source, start, end, value)


@dataclass(frozen=True)
class YamlProblem:
    message: str
    span: Span
    help: str | None = None


class YamlError(PedragError):
    def __init__(self, problem: YamlProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem


_CONSTRUCTOR = yaml.SafeLoader(b"")
# libyaml composes ten times faster and reports the same character offsets; the pure-Python
# loader is the fallback where PyYAML was built without it.
_COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_STR = "tag:yaml.org,2002:str"

MAX_VALUES = 200_000
"""Values a document may expand to, aliases counted each time they are used: a few hundred
bytes of nested aliases (a "billion laughs" file) would otherwise expand past any memory."""
MAX_DEPTH = 100
"""Nesting a document may have; a theory file needs about six levels."""
MAX_INTEGER = 10**15
"""Integers beyond this are an error, not an overflow later: no metric range needs them."""


def load_yaml(source: SourceText) -> tuple[Any, Positions]:
    """Parse one YAML document. Raises YamlError on syntax errors, duplicate keys, documents
    that expand past :data:`MAX_VALUES` or nest past :data:`MAX_DEPTH`, and numbers out of
    bounds (integers past :data:`MAX_INTEGER`, infinities, NaN)."""
    positions = Positions(source)
    try:
        nodes = list(yaml.compose_all(source.text, Loader=_COMPOSER))
    except RecursionError:
        raise YamlError(
            YamlProblem(f"YAML nests too deeply (more than {MAX_DEPTH} levels)", source.span(0, 1))
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        offset = mark.index if mark is not None else 0
        message = exc.problem or exc.context or "invalid YAML"
        raise YamlError(
            YamlProblem(
                f"YAML syntax error: {message}",
                source.span(offset, offset + 1),
                help=_syntax_help(source.text, offset),
            )
        ) from None
    except yaml.YAMLError as exc:  # e.g. reader errors on control characters
        raise YamlError(YamlProblem(f"YAML error: {exc}", source.span(0, 1))) from None
    if len(nodes) > 1:
        second = nodes[1]
        raise YamlError(
            YamlProblem(
                "a theory file holds exactly one YAML document",
                source.span(second.start_mark.index, second.start_mark.index + 1),
                help="remove the `---` separator or split the file",
            )
        )
    if not nodes or nodes[0] is None:
        return None, positions
    try:
        return _convert(nodes[0], (), positions, set(), [0]), positions
    except RecursionError:
        raise YamlError(
            YamlProblem(f"YAML nests too deeply (more than {MAX_DEPTH} levels)", source.span(0, 1))
        ) from None
    except yaml.MarkedYAMLError as exc:  # e.g. an unknown tag such as `!python/object` or `=`
        mark = exc.problem_mark or exc.context_mark
        offset = mark.index if mark is not None else 0
        message = exc.problem or exc.context or "invalid YAML value"
        if "tag:yaml.org,2002:merge" in message:
            raise YamlError(
                YamlProblem(
                    "YAML merge keys (`<<:`) are not supported in pedrag files",
                    source.span(offset, offset + 2),
                    help="write the keys out, or reuse a whole value with an alias (`m: *base`)",
                )
            ) from None
        raise YamlError(
            YamlProblem(f"YAML error: {message}", source.span(offset, offset + 1))
        ) from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. a timestamp out of range
        raise YamlError(YamlProblem(f"YAML error: {exc}", source.span(0, 1))) from None


def _syntax_help(text: str, offset: int) -> str | None:
    """A hint for the YAML mistakes designers make most, from the text at the error."""
    line_start = text.rfind("\n", 0, offset) + 1
    if "\t" in text[line_start : offset + 1]:
        return "YAML does not allow tabs for indentation: indent with spaces"
    return None


def _check_number(value: float, node: yaml.Node, positions: Positions) -> None:
    span = positions.source.span(node.start_mark.index, node.end_mark.index)
    if isinstance(value, float) and not math.isfinite(value):
        raise YamlError(
            YamlProblem(
                f"`{node.value}` is not a finite number",
                span,
                help="metric ranges and defaults are finite numbers",
            )
        )
    if isinstance(value, int) and abs(value) > MAX_INTEGER:
        shown = node.value if len(node.value) <= 24 else node.value[:20] + "..."
        raise YamlError(
            YamlProblem(
                f"the number `{shown}` is too large (at most {MAX_INTEGER:.0e} in size)", span
            )
        )


def _convert(
    node: yaml.Node, path: Path, positions: Positions, active: set[int], count: list[int]
) -> Any:
    """``node`` as Python values; ``count`` holds the number of values made so far."""
    count[0] += 1
    if count[0] > MAX_VALUES or len(path) > MAX_DEPTH:
        too_much = (
            f"more than {MAX_VALUES:,} values (aliases are counted each time they are used)"
            if count[0] > MAX_VALUES
            else f"more than {MAX_DEPTH} levels of nesting"
        )
        raise YamlError(
            YamlProblem(
                f"the YAML document expands to {too_much}",
                positions.source.span(node.start_mark.index, node.start_mark.index + 1),
                help="a theory file needs no YAML aliases; write the values out",
            )
        )
    positions.values[path] = (node.start_mark.index, node.end_mark.index)
    if id(node) in active:
        raise YamlError(
            YamlProblem(
                "recursive YAML alias",
                positions.source.span(node.start_mark.index, node.start_mark.index + 1),
            )
        )
    if isinstance(node, yaml.ScalarNode):
        # Text is most of a theory file, and a `str`-tagged scalar's value is its text: the
        # constructor is asked only about the rest (numbers, bools, null, other tags).
        value = node.value if node.tag == _STR else _CONSTRUCTOR.construct_object(node, deep=True)
        if isinstance(value, str):
            positions.scalars[path] = (node.start_mark.index, node.end_mark.index, value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            _check_number(value, node, positions)
        return value
    active = active | {id(node)}
    if isinstance(node, yaml.SequenceNode):
        return [
            _convert(item, (*path, index), positions, active, count)
            for index, item in enumerate(node.value)
        ]
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key_value = (
                _CONSTRUCTOR.construct_object(key_node, deep=True)
                if isinstance(key_node, yaml.ScalarNode)
                else None
            )
            if not isinstance(key_value, (str, int, float, bool)):
                raise YamlError(
                    YamlProblem(
                        "mapping keys must be plain names",
                        positions.source.span(key_node.start_mark.index, key_node.end_mark.index),
                    )
                )
            # A key YAML reads as a bool (`on:`, `yes:`, `no:`) keeps the name as written: an
            # action named `on` must not silently become `true`.
            key: str | int = (
                key_value
                if isinstance(key_value, (str, int)) and not isinstance(key_value, bool)
                else str(key_node.value)
                if isinstance(key_value, bool)
                else str(key_value).lower()
            )
            if key in result:
                first = positions.keys.get((*path, key))
                where = (
                    f" (first defined on line {positions.source.position(first[0])[0]})"
                    if first
                    else ""
                )
                raise YamlError(
                    YamlProblem(
                        f"duplicate key `{key}`{where}",
                        positions.source.span(key_node.start_mark.index, key_node.end_mark.index),
                        help="YAML would silently keep only the last one; remove or rename one of them",
                    )
                )
            positions.keys[(*path, key)] = (key_node.start_mark.index, key_node.end_mark.index)
            result[key] = _convert(value_node, (*path, key), positions, active, count)
        return result
    raise YamlError(
        YamlProblem("unsupported YAML node", positions.source.span(node.start_mark.index))
    )  # pragma: no cover
