"""pedrag: make LLM tutors behave the way a pedagogical theory says they should, and prove it.

The public API is exactly `__all__` (pinned by tests/test_public_api.py). Names load lazily,
so `import pedrag` stays cheap and the runtime never drags in the compiler's parser or z3.

    from pedrag import Tutor, TheorySet, check_paths
    tutor = Tutor(TheorySet.shipped())            # offline backend unless an endpoint is set
    session = tutor.start(theory="socratic", exercise="mult_7x8")
    print(tutor.turn(session, "just tell me the answer").tutor)
"""

from __future__ import annotations

from pedrag._lazy import lazy_exports
from pedrag._version import __version__ as __version__

_EXPORTS = {
    # the language
    "Diagnostic": "pedrag.dsl.diagnostics",
    "Severity": "pedrag.dsl.diagnostics",
    "LoadedFile": "pedrag.dsl.loader",
    "load_file": "pedrag.dsl.loader",
    "load_text": "pedrag.dsl.loader",
    # the root of every exception pedrag raises on purpose (the rest: pedrag.errors)
    "PedragError": "pedrag.kernel.errors",
    # the compiler
    "check_paths": "pedrag.compiler.driver",
    "CheckResult": "pedrag.compiler.driver",
    "lower": "pedrag.compiler.lower",
    # the runtime
    "CompiledPolicy": "pedrag.runtime.policy.compiled",
    "compile_theory": "pedrag.runtime.policy.theory_set",
    "TheorySet": "pedrag.runtime.policy.theory_set",
    "Tutor": "pedrag.runtime.turn.tutor",
    "Session": "pedrag.runtime.turn.tutor",
    "TurnResult": "pedrag.runtime.turn.tutor",
    "OfflineBackend": "pedrag.runtime.llm.offline",
    "LLMRequest": "pedrag.runtime.llm.interface",
    "OpenAIBackend": "pedrag.runtime.llm.openai_backend",
    "backend_from_env": "pedrag.runtime.llm.openai_backend",
    "AsyncTutor": "pedrag.runtime.turn.async_tutor",
    "MemoryStore": "pedrag.runtime.store.memory",
    "SessionStore": "pedrag.runtime.store.session_store",
    "Grade": "pedrag.runtime.learning.grader",
    "grade_exercise": "pedrag.runtime.learning.grader",
}

__all__ = sorted([*_EXPORTS, "__version__"])


__getattr__, __dir__ = lazy_exports("pedrag", globals(), _EXPORTS)
