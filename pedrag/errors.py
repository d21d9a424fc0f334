"""Every exception pedrag raises on purpose, in one place (as httpx keeps its exceptions in one
module). All derive from :class:`PedragError`; names load lazily, so importing this module does
not load the compiler, the runtime or their dependencies.

    from pedrag.errors import PedragError, TheoryLoadError, StoreError
    try:
        tutor.turn(session, text)
    except PedragError as error:   # pedrag's own, reported failure; anything else is a bug
        ...
"""

from __future__ import annotations

from pedrag._lazy import lazy_exports
from pedrag.kernel.errors import PedragError as PedragError

_EXPORTS = {
    # the language and the compiler
    "YamlError": "pedrag.dsl.yaml_source",
    "ConditionSyntaxError": "pedrag.dsl.parser",
    "WriterError": "pedrag.kernel.sources",
    "ConfigError": "pedrag.compiler.config",
    "PathError": "pedrag.compiler.discovery",
    "TranslationError": "pedrag.compiler.encode",
    "EditError": "pedrag.compiler.fixes",
    "DiffError": "pedrag.compiler.diffing",
    # the runtime
    "TheoryLoadError": "pedrag.runtime.policy.theory_set",
    "PolicyFormatError": "pedrag.runtime.policy.codegen",
    "StateError": "pedrag.runtime.turn.state",
    "InstructorError": "pedrag.runtime.turn.instructor",
    "LLMError": "pedrag.runtime.llm.interface",
    "LLMUnavailable": "pedrag.runtime.llm.interface",
    "LLMRefusal": "pedrag.runtime.llm.interface",
    "StoreError": "pedrag.runtime.store.errors",
    "SessionNotFound": "pedrag.runtime.store.errors",
    "LearnerNotFound": "pedrag.runtime.store.errors",
    "TurnConflict": "pedrag.runtime.store.errors",
    "CourseIndexError": "pedrag.runtime.course.passages",
    # extraction
    "ReadError": "pedrag.extract.reader",
    "ExtractionError": "pedrag.extract.pipeline",
    "ExtractionUsageError": "pedrag.extract.pipeline",
}

__all__ = sorted([*_EXPORTS, "PedragError"])


__getattr__, __dir__ = lazy_exports("pedrag.errors", globals(), _EXPORTS)
