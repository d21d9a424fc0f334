"""A `pedrag check` report kept whole, by everything it is made from.

Compiler helper (for `pedrag.commands.check`). Takes a check's command-line options and
paths; gives the bytes that name its inputs (`report_inputs`), under which, with pedrag's
code (`code_version.pedrag_code`), `CheckCache.kept_reports` keeps the report's text and exit
status. A re-check of unchanged files then prints the kept text: it imports neither the front
end nor the checks, and reads one entry.

Why it is sound: a report is a function of
- the files checked, found as the check finds them (`discovery.discover`: the paths, the
  YAML files under folders, which of them are pedrag files), by name and bytes;
- each file's configuration: the text of the `pyproject.toml` whose `[tool.pedrag]` table it
  uses (`config.find_pyproject`, the lookup `ConfigFinder` makes), and the working folder
  (a path that is not absolute, and `files` globs where no pyproject says where they start);
- the options (format, selection, fail-on, quiet, colour as resolved for this terminal);
- pedrag's code (every module's name, size and modification time, `code_version`) and
  version, the Python version and the versions of the libraries that decide answers (z3,
  PyYAML, pydantic, lark: `code_version.library_versions`), as every kept front end and
  findings file is (`check_cache._versions`).
Nothing else is read by the check (no clock in a JSON, text or GitHub report; a SARIF log
is kept without its invocation, the run's command line, times and exit code, which each run
adds, `sarif.with_invocation`; `--statistics`' count of damaged cache records is not kept,
nor is a `--fix`, `--diff` or stdin check). A report is not kept when a solver question was left
undecided (a timeout may be decided next time), the compiler failed on a file, or the
inputs read after the check differ from those read before it (a file saved meanwhile).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pedrag.compiler.config import ConfigFinder, find_pyproject
from pedrag.compiler.discovery import discover
from pedrag.kernel.errors import PedragError


def report_inputs(paths: list[str], pedrag_only: bool, options: Any) -> bytes | None:
    """The bytes a report is a function of (see the module docstring), or None when they
    cannot all be read (a missing path, an unreadable file or configuration: the check itself
    then says why)."""
    finder = ConfigFinder()  # discovery reads only the `files` globs, checked by the check
    skipped: list[Path] = []
    try:
        found = discover(paths, skipped, pedrag_only, finder)
        head = (os.getcwd(), options, [str(p) for p in found], [str(p) for p in skipped])
        parts = [repr(head).encode("utf-8")]
        for path in found:
            config = find_pyproject(path.resolve().parent)
            parts.append(path.read_bytes())
            parts.append(b"" if config is None else str(config).encode("utf-8"))
            parts.append(b"" if config is None else config.read_bytes())
    except (OSError, PedragError, ValueError):
        return None
    return b"".join(len(part).to_bytes(8, "little") + part for part in parts)
