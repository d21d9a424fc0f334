"""The version of pedrag's own code a cached result was made by, for the check cache's keys.

Compiler helper. Takes packages (or pedrag as a whole); gives a digest of their modules'
names, sizes and modification times. A working tree whose code changed without a new version
number must not read results an older tree kept (`driver.front_end_code`,
`driver.checker_code`, the kept report's key in `pedrag.commands.check`). Stating the files
costs about a millisecond per hundred modules; hashing their bytes would cost far more on
every check. Each folder is listed once per process, however many digests read it.
"""

from __future__ import annotations

import functools
import hashlib
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
