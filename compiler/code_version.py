"""The version of pedrag's own code a cached result was made by, for the check cache's keys.

Compiler helper. Takes packages (or pedrag as a whole); gives a digest of their modules'
names, sizes and modification times. A working tree whose code changed without a new version
number must not read results an older tree kept (`driver.front_end_code`,
`driver.checker_code`, the kept report's key in `pedrag.commands.check`). Stating the files
costs about a millisecond per hundred modules; hashing their bytes would cost far more on
every check. Each folder is listed once per process, however many digests read it.

The libraries that decide answers are part of that version too (`library_versions`): z3
decides every rule's status, PyYAML composes the files and words their syntax errors,
pydantic validates them and words its errors, lark words a condition's syntax error. A
`pip install -U z3-solver` must not serve a report another solver computed.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from importlib.util import find_spec
from pathlib import Path
from typing import Any


def code_of(*packages: Any) -> str:
    """A digest of every `.py` and `.lark` file under the packages' folders."""
    return _digest([str(folder) for package in packages for folder in package.__path__])


def pedrag_code() -> str:
    """`code_of` all of pedrag: its own folder and each subpackage it reaches through a
    symbolic link (`pedrag/compiler -> ../compiler`), which a recursive glob does not enter."""
    import pedrag

    root = Path(pedrag.__path__[0])
    linked = sorted(p for p in root.iterdir() if p.is_symlink() and p.is_dir())
    return _digest([str(root), *map(str, linked)])


def _digest(folders: list[str]) -> str:
    found = [entry for folder in folders for entry in _listing(folder)]
    return hashlib.sha256("\n".join(found).encode("utf-8")).hexdigest()


@functools.cache
def _listing(folder: str) -> tuple[str, ...]:
    found = []
    for path in sorted(Path(folder).rglob("*")):
        if path.suffix in (".py", ".lark") and path.is_file():
            stat = path.stat()
            found.append(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return tuple(found)


LIBRARIES = {
    "z3": ("z3-solver", "get_version_string"),
    "yaml": ("PyYAML", "__version__"),
    "pydantic": ("pydantic", "VERSION"),
    "pydantic_core": ("pydantic-core", "__version__"),
    "lark": ("lark", "__version__"),
}
"""Each library whose version a cached answer depends on: its import name, its distribution's
name and the attribute that gives its version once imported (`library_versions`)."""


@functools.cache
def library_versions() -> tuple[tuple[str, str], ...]:
    """(import name, version) of each of `LIBRARIES` as this process would import it.

    Read from the distribution's metadata folder (`z3_solver-4.13.0.0.dist-info`) beside the
    package Python would import, without importing it: a re-check that prints a kept report
    imports neither z3 nor pydantic nor PyYAML (together 0.2 s), and `importlib.metadata`
    alone costs 0.04 s. A library installed without such a folder is imported and asked."""
    return tuple((name, _installed_version(name)) for name in LIBRARIES)


def _installed_version(name: str) -> str:
    try:
        spec = find_spec(name)
    except (ImportError, ValueError):  # a stand-in without a spec in `sys.modules`
        return "unknown"
    if spec is None or spec.origin is None:
        return "absent"
    distribution, attribute = LIBRARIES[name]
    module = Path(spec.origin).parent  # the package's folder, or a module's own
    site = module.parent if spec.submodule_search_locations is not None else module
    wanted = _normalized(distribution)
    try:
        entries = _entries(str(site))
    except OSError:
        entries = ()
    found = sorted(entry for entry in entries if _normalized(entry.split("-", 1)[0]) == wanted)
    if found:
        return f"{site}:{','.join(found)}"
    import importlib

    try:
        value = getattr(importlib.import_module(name), attribute)
        return f"{spec.origin}:{value() if callable(value) else value}"
    except Exception as error:  # a broken install: the check itself will say so
        return f"{spec.origin}:{type(error).__name__}"


@functools.cache
def _entries(folder: str) -> tuple[str, ...]:
    return tuple(
        entry for entry in os.listdir(folder) if entry.endswith((".dist-info", ".egg-info"))
    )


def _normalized(distribution: str) -> str:
    return re.sub(r"[-_.]+", "_", distribution).lower()
