"""pedrag: make LLM tutors behave the way a pedagogical theory says they should, and prove it.

The public API is exactly what this module exports (pinned by tests/test_public_api.py).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pedrag")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

from pedrag.dsl.diagnostics import Diagnostic, Severity  # noqa: E402
from pedrag.dsl.loader import LoadedFile, load_file, load_text  # noqa: E402

__all__ = ["Diagnostic", "LoadedFile", "Severity", "__version__", "load_file", "load_text"]
