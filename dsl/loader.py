"""Theory and curriculum files -> resolved documents plus diagnostics. Never raises.

The front end's entry point: read the file, parse YAML with positions, validate structure
with the pydantic models (errors turned into diagnostics at the offending key, unknown keys
with a "did you mean"), then resolve names and types. Whatever goes wrong becomes a
`Diagnostic`; a user never sees a traceback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any

from pydantic import BaseModel, ValidationError

from pedrag.dsl.diagnostics import Diagnostic, Severity, error
from pedrag.dsl.ir import ResolvedCurriculum, ResolvedTheory
from pedrag.dsl.model import Curriculum, Theory
from pedrag.dsl.recovery import unwrap, unwrap_optional, without_broken
from pedrag.dsl.resolve import resolve_curriculum, resolve_theory
from pedrag.dsl.schema_text import describe
from pedrag.dsl.spans import SourceText
from pedrag.dsl.yaml_source import Path, Positions, YamlError, load_yaml
from pedrag.kernel.suggest import closest, did_you_mean


@dataclass
class LoadedFile:
    """One checked file: its source, what it resolved to (if it did), and its diagnostics."""

    path: str
    source: SourceText
    kind: str = "theory"
    theory: ResolvedTheory | None = None
    curriculum: ResolvedCurriculum | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    positions: Positions | None = None
    # The validated document, kept even when name/type resolution fails (for `ignore:` lists).
    model: Theory | Curriculum | None = None

    @property
    def ok(self) -> bool:
        return not any(d.severity is Severity.ERROR for d in self.diagnostics)


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The keys allowed at `loc` inside `model`, to suggest a correction for an unknown key."""
    annotation: Any = model
    for part in loc:
        annotation = unwrap(annotation, part)
        if annotation is None:
            return []
    annotation = unwrap_optional(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return []


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model whose fields are the keys at `loc` (the item `loc` points into)."""
    annotation: Any = model
    for part in loc:
        annotation = unwrap(annotation, part)
        if annotation is None:
            return None
    annotation = unwrap_optional(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _key_help(model: type[BaseModel], loc: tuple[Any, ...], message: str) -> str | None:
    """What the key at `loc` means (or, for an error about a whole item, the first key its
    message names), from the format's one description of each key."""
    if loc and isinstance(loc[-1], str):
        owner = _model_at(model, loc[:-1])
        if owner is not None and loc[-1] in owner.model_fields:
            text = describe(owner.__name__, loc[-1])
            return f"`{loc[-1]}`: {text}" if text else None
    owner = _model_at(model, loc)
    if owner is not None:
        for named in re.findall(r"`([a-z_]+)", message):
            text = describe(owner.__name__, named)
            if text:
                return f"`{named}`: {text}"
    return None


_SINGULAR = {
    "rules": "rule",
    "metrics": "metric",
    "actions": "action",
    "invariants": "invariant",
    "monitors": "monitor",
    "principles": "principle",
    "sources": "source",
    "goals": "goal",
    "exercises": "exercise",
    "switch": "switch",
    "steps": "ceiling step",
}


def _place(loc: tuple[Any, ...], data: Any) -> str:
    """A document path in the designer's terms: `rule `probe`, `weight``, `ceiling step 2`,
    `metric `frustration`, `range``; list positions count from 1 (pydantic's from 0)."""
    parts: list[str] = []
    node = data
    index = 0
    while index < len(loc):
        key = loc[index]
        child = node.get(key) if isinstance(node, dict) else None
        following = loc[index + 1] if index + 1 < len(loc) else None
        if key in _SINGULAR and following is not None:
            what = _SINGULAR[key]
            item = (
                child[following]
                if isinstance(child, list) and isinstance(following, int) and following < len(child)
                else child.get(following)
                if isinstance(child, dict)
                else None
            )
            if isinstance(following, int):
                ident = item.get("id") if isinstance(item, dict) else None
                parts.append(
                    f"{what} `{ident}`" if isinstance(ident, str) else f"{what} {following + 1}"
                )
            else:
                parts.append(f"{what} `{following}`")
            node, index = item, index + 2
            continue
        if key == "ceiling" and following == "steps":
            node, index = child, index + 1
            continue
        if isinstance(key, int):
            parts.append(f"item {key + 1}")
            node = node[key] if isinstance(node, list) and key < len(node) else None
        else:
            parts.append(f"`{key}`")
            node = child
        index += 1
    return ", ".join(parts) or "the document"


def _choices(ctx: dict[str, Any]) -> list[str]:
    expected = str(ctx.get("expected", ""))
    return [
        part.strip(" '") for part in expected.replace(" or ", ", ").split(",") if part.strip(" '")
    ]


def _humane(item: Any) -> tuple[str, str | None]:
    """pydantic's message for one error, in the format's words, with a help line."""
    kind, ctx, value = item["type"], item.get("ctx", {}), item.get("input")
    if kind == "literal_error":
        choices = _choices(ctx)
        return (
            f"`{value}` is not allowed here; use one of: {', '.join(choices)}",
            did_you_mean(str(value), choices) or None,
        )
    if kind == "too_long" or kind == "too_short":
        if "tuple" in item["msg"].lower():
            return (
                f"takes two numbers `[low, high]`, not {ctx.get('actual_length', len(value or []))}",
                "e.g. `range: [0, 1]`",
            )
        least = ctx.get("min_length")
        return (
            f"needs at least {least} item(s)" if kind == "too_short" else "has too many items",
            None,
        )
    bounds = {
        "greater_than": ("more than", "gt"),
        "greater_than_equal": ("at least", "ge"),
        "less_than": ("less than", "lt"),
        "less_than_equal": ("at most", "le"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        bound = ctx.get(key)
        shown = f"{bound:g}" if isinstance(bound, float) else str(bound)
        return f"must be {words} {shown}, not {value!r}", None
    if kind in ("int_from_float", "int_parsing", "int_type"):
        return f"must be a whole number, not {value!r}", None
    if kind in ("float_parsing", "float_type"):
        help = "write the number without quotes" if isinstance(value, str) else None
        return f"must be a number, not {value!r}", help
    if kind in ("bool_parsing", "bool_type"):
        return f"must be true or false, not {value!r}", None
    if kind in ("list_type", "tuple_type"):
        return f"must be a list `[...]`, not {value!r}", None
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"must be a mapping of keys, not {value!r}", None
    if kind == "string_type":
        return f"must be text, not {value!r}", "quote it"
    message = str(item["msg"])
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
        if "ceiling step takes exactly one" in message:
            return message, "e.g. `{when: exam_active, set: H0}`"
        if "invariant takes exactly one" in message:
            return message, 'e.g. `{id: exam_no_help, never: "exam_active and rung > H0"}`'
        return message, None
    return message.replace("Input should be", "must be"), None


def _validation_diagnostics(
    exc: ValidationError, model: type[BaseModel], positions: Positions, data: Any = None
) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = []
    seen: set[tuple[Any, ...]] = set()
    errors = exc.errors(include_url=False)
    misspelt = _misspelt_keys(errors, model, positions)
    for item in errors:
        kind = item["type"]
        loc = _document_path(tuple(item["loc"]), positions, kind in ("missing", "extra_forbidden"))
        where = _place(loc, data)
        if loc in seen or (kind == "missing" and loc in misspelt):
            continue  # a misspelt required key: one finding, at the misspelling
        if kind == "extra_forbidden":
            seen.add(loc)
            key = str(loc[-1])
            allowed = _fields_at(model, loc[:-1])
            help = did_you_mean(key, allowed) or (
                f"allowed keys: {', '.join(allowed)}" if allowed else None
            )
            diagnostics.append(
                error("unknown-name", f"unknown key `{key}`", positions.key_span(loc), help=help)
            )
        elif kind == "missing":
            seen.add(loc)
            parent = loc[:-1]
            diagnostics.append(
                error(
                    "syntax-error",
                    f"{_place(parent, data)} is missing the required key `{loc[-1]}`",
                    positions.key_span(parent) if parent else positions.span(()),
                    help=f"add `{loc[-1]}:`",
                )
            )
        else:
            seen.add(loc)
            check = "type-error"
            if kind in ("model_type", "dict_type", "list_type") and "input" in item:
                check = "syntax-error"
            message, item_help = _humane(item)
            if kind == "string_pattern_mismatch":
                pattern = item.get("ctx", {}).get("pattern", "")
                rung = "H" in pattern
                message = f"`{item.get('input')}` is not a valid " + (
                    "rung (H0..H7)"
                    if rung
                    else "name (lower_snake_case)"
                    if "a-z0-9_" in pattern
                    else "value"
                )
                item_help = (
                    "rungs are H0 (encourage) ... H7 (full solution)"
                    if rung
                    else "names start with a lowercase letter, then lowercase letters, digits, `_`"
                )
                diagnostics.append(
                    error(check, f"{where}: {message}", positions.span(loc), help=item_help)
                )
                continue
            if kind == "string_type" and loc in positions.values:
                # YAML 1.1 reads unquoted yes/no/on/off/true/null and numbers as non-text.
                start, end = positions.values[loc]
                written = positions.source.text[start:end]
                value = item.get("input")
                what = (
                    "nothing (null)"
                    if value is None
                    else f"the boolean {str(value).lower()}"
                    if isinstance(value, bool)
                    else "a number"
                    if isinstance(value, (int, float))
                    else "a list or mapping"
                )
                message = f"expected text, but YAML reads `{written}` as {what}"
                item_help = (
                    f'quote it: "{written}"'
                    if isinstance(value, (bool, int, float)) or value is None
                    else "write it as text"
                )
            if item_help is None:
                item_help = _key_help(model, loc, message)
            diagnostics.append(
                error(check, f"{where}: {message}", positions.span(loc), help=item_help)
            )
    return diagnostics


def _misspelt_keys(
    errors: list[Any], model: type[BaseModel], positions: Positions
) -> set[tuple[Any, ...]]:
    """The missing required keys that an unknown key beside them is a misspelling of
    (`priorty:` for `priority:`): reported once, as the unknown key with its "did you mean"."""
    missing: set[tuple[Any, ...]] = set()
    guesses: set[tuple[Any, ...]] = set()
    for item in errors:
        kind = item["type"]
        if kind not in ("missing", "extra_forbidden"):
            continue
        loc = _document_path(tuple(item["loc"]), positions, True)
        if not loc:
            continue
        if kind == "missing":
            missing.add(loc)
            continue
        guess = closest(str(loc[-1]), _fields_at(model, loc[:-1]))
        if guess is not None:
            guesses.add((*loc[:-1], guess))
    return missing & guesses


def _document_path(loc: tuple[Any, ...], positions: Positions, keep_last: bool) -> tuple[Any, ...]:
    """pydantic's error location without the union branch names it inserts (`str`,
    `list[constrained-str]`): keep the parts that are real keys or indexes of the document,
    and, for a missing or unknown key, the last part (a missing key is in no table)."""
    path: tuple[Any, ...] = ()
    for index, part in enumerate(loc):
        candidate = (*path, part)
        last = index == len(loc) - 1
        if candidate in positions.values or candidate in positions.keys or (last and keep_last):
            path = candidate
    return path


MAX_RECOVERY_ROUNDS = 4
"""Validation rounds after the first: each leaves out what the last one found broken (a
model-level rule, such as a ceiling step's one effect, is checked only once its fields are
valid, so it can surface in a later round)."""


def _mistakes(exc: ValidationError, positions: Positions) -> list[tuple[str, Path]]:
    return [
        (
            item["type"],
            _document_path(
                tuple(item["loc"]), positions, item["type"] in ("missing", "extra_forbidden")
            ),
        )
        for item in exc.errors(include_url=False)
    ]


def _resolve_the_rest(
    exc: ValidationError, model: type[BaseModel], positions: Positions, data: Any, path: str
) -> list[Diagnostic]:
    """The diagnostics of the document without its broken items (`pedrag.dsl.recovery`):
    later validation rounds' findings, then name and type resolution's, so the independent
    mistakes of a file are reported in one run. Nothing when the document's own keys are
    broken, and no complaint about a reference to an item left out."""
    found: list[Diagnostic] = []
    dropped: set[str] = set()
    for _ in range(MAX_RECOVERY_ROUNDS):
        recovered = without_broken(model, data, positions, _mistakes(exc, positions))
        if recovered is None:
            return found
        data, positions = recovered.data, recovered.positions
        dropped |= recovered.dropped
        try:
            validated = model.model_validate(data)
        except ValidationError as again:
            exc = again
            # A collection emptied by the recovery itself is not the file's mistake.
            found.extend(
                d
                for d in _validation_diagnostics(again, model, positions, data)
                if "needs at least" not in d.message
            )
            continue
        if isinstance(validated, Theory):
            _, resolved = resolve_theory(validated, positions, path)
        else:
            assert isinstance(validated, Curriculum)
            _, resolved = resolve_curriculum(validated, positions, path)
        return found + [d for d in resolved if not _about_dropped(d, dropped)]
    return found


def _about_dropped(diagnostic: Diagnostic, dropped: set[str]) -> bool:
    """A complaint that a name is unknown, where the name is an item left out as broken."""
    if diagnostic.check != "unknown-name":
        return False
    named = set(re.findall(r"`([^`]+)`", diagnostic.message))
    named |= {item.split(":", 1)[1] for item in diagnostic.items if ":" in item}
    return bool(named & dropped) and "unknown" in diagnostic.message


def load_text(text: str, path: str) -> LoadedFile:
    source = SourceText(path, text)
    loaded = LoadedFile(path=path, source=source)
    try:
        data, positions = load_yaml(source)
    except YamlError as exc:
        loaded.diagnostics.append(
            error("syntax-error", exc.problem.message, exc.problem.span, help=exc.problem.help)
        )
        return loaded
    loaded.positions = positions
    if not isinstance(data, dict):
        what = "empty" if data is None else f"a {type(data).__name__}"
        loaded.diagnostics.append(
            error(
                "syntax-error",
                f"a theory file is a YAML mapping, but this document is {what}",
                positions.span(()),
                help="start with `pedrag: 1` and `theory:`",
            )
        )
        return loaded
    distinctive = {"theory", "metrics", "actions", "rules", "kind", "goals", "exercises"}
    if "pedrag" not in data and not distinctive & set(data):
        # Some other YAML file (a CI workflow, a docker-compose file): one clear error rather
        # than a missing-key error for every required key and an unknown-key error for each of its.
        loaded.diagnostics.append(
            error(
                "syntax-error",
                "not a pedrag file: no top-level `pedrag:` key and no theory or curriculum keys",
                positions.span(()),
                help="a theory file starts with `pedrag: 1` and `theory:`; a curriculum with "
                "`pedrag: 1` and `kind: curriculum`",
            )
        )
        return loaded
    kind = data.get("kind", "theory")
    model: type[BaseModel] = Curriculum if kind == "curriculum" else Theory
    loaded.kind = "curriculum" if kind == "curriculum" else "theory"
    if data.get("pedrag") not in (1, None) and "pedrag" in data:
        loaded.diagnostics.append(
            error(
                "syntax-error",
                f"unsupported format version `pedrag: {data.get('pedrag')}`; this pedrag reads version 1",
                positions.span(("pedrag",)),
            )
        )
        return loaded
    try:
        validated = model.model_validate(data)
    except ValidationError as exc:
        loaded.diagnostics.extend(_validation_diagnostics(exc, model, positions, data))
        loaded.diagnostics.extend(_resolve_the_rest(exc, model, positions, data, path))
        return loaded
    if isinstance(validated, Theory):
        loaded.model = validated
        loaded.theory, diagnostics = resolve_theory(validated, positions, path)
    else:
        assert isinstance(validated, Curriculum)
        loaded.model = validated
        loaded.curriculum, diagnostics = resolve_curriculum(validated, positions, path)
    loaded.diagnostics.extend(diagnostics)
    return loaded


def load_file(path: str | FsPath) -> LoadedFile:
    shown = str(path)
    try:
        raw = FsPath(path).read_bytes()
    except OSError as exc:
        source = SourceText(shown, "")
        loaded = LoadedFile(path=shown, source=source)
        loaded.diagnostics.append(
            error("syntax-error", f"cannot read file: {exc.strerror or exc}", source.span(0))
        )
        return loaded
    return load_bytes(raw, shown)


def load_bytes(raw: bytes, shown: str) -> LoadedFile:
    """A file's bytes (read from disk or stdin) as `shown`: UTF-8 with an optional BOM."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # Point at the offending byte (file:line:col) so a user with many files can find it.
        source = SourceText(shown, raw.decode("utf-8-sig", errors="replace"))
        offset = len(raw[: exc.start].decode("utf-8-sig", errors="replace"))
        loaded = LoadedFile(path=shown, source=source)
        loaded.diagnostics.append(
            error(
                "syntax-error",
                f"file is not UTF-8 text (byte {exc.start}: 0x{raw[exc.start]:02x})",
                source.span(offset, offset + 1),
                help="save the file as UTF-8",
            )
        )
        return loaded
    return load_text(text, shown)
