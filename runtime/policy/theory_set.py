"""The theory set a tutor runs: shipped or user theory files, each loaded and compiled.

Runtime, set-up. Takes the shipped theories (``pedrag.theories`` package data, read with
``importlib.resources``), a folder, or a list of files; gives a :class:`TheorySet` mapping
theory ids to :class:`LoadedTheory` (the resolved theory and its compiled policy) plus any
curricula found alongside.

Each theory is compiled in-process (``pedrag.compiler.lower.lower``, loaded by
``pedrag.runtime.policy.compiled``) into the
``CompiledPolicy`` the turn loop executes, so a tutor always runs exactly what the compiler
checked.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pedrag.kernel.errors import PedragError
from pedrag.runtime.policy.compiled import CompiledPolicy, PolicyFormatError

# Compiled policies by content hash: a theory compiled once (its matchers generated and
# exec'd) serves every TheorySet and Tutor in the process that loads the same policy.
_POLICIES: dict[str, CompiledPolicy] = {}


class TheoryLoadError(PedragError, ValueError):
    """A theory file has errors; the message lists the first few diagnostics."""


@dataclass(frozen=True)
class LoadedTheory:
    """A theory the runtime can run: its compiled policy (all a turn reads) and, when it was
    loaded from a theory file, the resolved theory (for designer tools and the evaluator)."""

    resolved: Any | None
    policy: CompiledPolicy

    @property
    def id(self) -> str:
        return self.policy.theory_id

    @property
    def theory_file(self) -> Any:
        """The resolved theory, for tools that read more than a turn needs (the evaluator's
        rubric reads principles' and sources' texts); raises for a compiled-only theory."""
        if self.resolved is None:
            raise TheoryLoadError(
                f"theory {self.id!r} was loaded from a compiled policy; this needs its theory file"
            )
        return self.resolved


@dataclass
class TheorySet:
    theories: dict[str, LoadedTheory] = field(default_factory=dict)
    curricula: dict[str, Any] = field(default_factory=dict)

    def __contains__(self, theory_id: object) -> bool:
        return theory_id in self.theories

    def __getitem__(self, theory_id: str) -> LoadedTheory:
        try:
            return self.theories[theory_id]
        except KeyError:
            known = ", ".join(sorted(self.theories)) or "none"
            raise KeyError(f"unknown theory {theory_id!r} (loaded: {known})") from None

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(sorted(self.theories))

    @property
    def exams(self) -> frozenset[str]:
        """The exam exercises (`exam: true`) of the loaded curricula: the exams a retake can be
        granted for, by the service's route and `pedrag instructor` alike (an id no curriculum
        serves is a typo, and a grant for it would wait forever)."""
        return frozenset(
            item.id
            for curriculum in self.curricula.values()
            for item in curriculum.model.exercises
            if item.exam
        )

    @classmethod
    def shipped(cls) -> TheorySet:
        """The theories and curricula shipped in ``pedrag.theories``. They are checked clean in
        the test suite, so a file that does not load is a broken install: it raises."""
        result = cls()
        root = importlib.resources.files("pedrag.theories")
        for entry in sorted(root.iterdir(), key=lambda item: item.name):
            if entry.name.endswith((".yaml", ".yml")):
                result._add_text(entry.read_text(encoding="utf-8"), entry.name, strict=True)
        return result

    @classmethod
    def from_paths(cls, paths: Iterable[str | Path], *, strict: bool = True) -> TheorySet:
        """Files or folders, found as `pedrag check` finds them (folders recursively, skipping
        hidden folders and YAML that is not a pedrag document). ``strict`` raises on a file with
        errors or a theory id defined twice; otherwise such a file is skipped."""
        from pedrag.compiler.discovery import PathError, discover
        from pedrag.dsl.loader import load_file

        result = cls()
        try:
            files = discover([str(p) for p in paths])
        except PathError as exc:
            raise TheoryLoadError(str(exc)) from None
        for file in files:
            result._add_loaded(load_file(file), str(file), strict=strict)
        return result

    @classmethod
    def from_policies(cls, policies: Iterable[str | Path | CompiledPolicy]) -> TheorySet:
        """Compiled policies (`pedrag compile` output, or loaded ones) alone: no theory file,
        parser, YAML loader or solver is needed to run them."""
        result = cls()
        for item in policies:
            try:
                policy = item if isinstance(item, CompiledPolicy) else CompiledPolicy.load(item)
            except (OSError, ValueError) as exc:
                raise TheoryLoadError(f"{item}: not a compiled policy: {exc}") from None
            if policy.theory_id in result.theories:
                raise TheoryLoadError(f"{item}: theory id `{policy.theory_id}` is defined twice")
            result.theories[policy.theory_id] = LoadedTheory(None, _cached(policy))
        return result

    def add_curriculum(self, path: str | Path) -> Any:
        from pedrag.dsl.loader import load_file

        loaded = load_file(path)
        if not loaded.ok or loaded.curriculum is None:
            raise TheoryLoadError(_describe_errors(str(path), loaded))
        self._add_loaded(loaded, str(path), strict=True)
        return loaded.curriculum

    def _add_text(self, text: str, name: str, *, strict: bool) -> None:
        from pedrag.dsl.loader import load_text

        self._add_loaded(load_text(text, name), name, strict=strict)

    def _add_loaded(self, loaded: Any, name: str, *, strict: bool) -> None:
        if not loaded.ok:
            if strict:
                raise TheoryLoadError(_describe_errors(name, loaded))
            return
        if loaded.curriculum is not None:
            from pedrag.runtime.learning.material import material_diagnostics

            reveals = material_diagnostics(loaded)
            if reveals:
                if strict:
                    raise TheoryLoadError(
                        f"{name} does not load: "
                        + "; ".join(f"{d.span or name}: {d.message}" for d in reveals[:3])
                    )
                return
            self.curricula[loaded.curriculum.id] = loaded.curriculum
        if loaded.theory is not None:
            if loaded.theory.id in self.theories:
                first = getattr(
                    self.theories[loaded.theory.id].resolved, "file", "a compiled policy"
                )
                if strict:
                    raise TheoryLoadError(
                        f"{name}: theory id `{loaded.theory.id}` is already defined in {first}"
                    )
                return
            self.theories[loaded.theory.id] = LoadedTheory(
                loaded.theory, compile_theory(loaded.theory)
            )


def _describe_errors(name: str, loaded: Any) -> str:
    shown = "; ".join(str(getattr(d, "message", d)) for d in loaded.diagnostics[:3])
    return f"{name} does not load: {shown or 'not a theory or curriculum'}"


def compile_theory(resolved: Any) -> CompiledPolicy:
    """The theory lowered by the compiler and loaded as a ``CompiledPolicy`` (the runtime
    loads the compiler's plain data itself, so no import crosses the layers upwards); the
    same policy is built once per process (cached by content hash)."""
    from pedrag.compiler.lower import lower

    data = lower(resolved)
    cached = _POLICIES.get(data["content_hash"])
    return cached if cached is not None else _cached(CompiledPolicy.from_json(data))


def _cached(policy: CompiledPolicy) -> CompiledPolicy:
    return _POLICIES.setdefault(policy.content_hash, policy)


__all__ = ["LoadedTheory", "PolicyFormatError", "TheoryLoadError", "TheorySet", "compile_theory"]
