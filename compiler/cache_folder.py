"""Where pedrag keeps what it computes between runs: the check cache, the check server's
socket and log.

Compiler helper. Takes the environment; gives the folder. A module of its own, importing
nothing heavy, because `pedrag check`'s thin client (`pedrag.commands._check_client`) looks
for the check server there before it imports anything else, and `compiler.check_cache`
(pickle, tempfile, re) was a third of that client's imports.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_CACHE_DIR = "PEDRAG_CACHE_DIR"
RELATIVE = (
    "a relative $PEDRAG_CACHE_DIR is taken from the project's root (the closest folder with a "
    "pyproject.toml, else the working folder), once per process"
)
"""How a relative setting is read, in the words the commands' --help use."""

_RESOLVED: dict[str, Path] = {}
"""Each setting read by this process, resolved when first read (`default_folder`)."""


def project_root(folder: Path) -> Path:
    """The project `folder` is in: the closest folder with a pyproject.toml, else `folder`.
    The check server is found and keyed by it, and a relative cache folder is read from it."""
    for candidate in (folder, *folder.parents):
        if (candidate / "pyproject.toml").is_file():
            return candidate
    return folder


def default_folder() -> Path:
    """`$PEDRAG_CACHE_DIR`, else the platform's user cache folder (platformdirs).

    A relative setting is resolved once, when this process first reads it, from the project's
    root (`project_root` of the working folder then; `RELATIVE`). Read relative to the working
    folder at each use, `PEDRAG_CACHE_DIR=.cache` gave `pedrag check` run in two folders of a
    project two caches, a client in a subfolder did not find the check server started at the
    root (its socket is in this folder), and the check server, which checks in each client's
    folder, read and wrote a cache under every one of them."""
    configured = os.environ.get(ENV_CACHE_DIR, "").strip()
    if configured:
        found = _RESOLVED.get(configured)
        if found is None:
            path = Path(configured).expanduser()
            if not path.is_absolute():
                path = project_root(Path.cwd().resolve()) / path
            found = _RESOLVED[configured] = path
        return found
    import platformdirs

    return Path(platformdirs.user_cache_dir("pedrag", appauthor=False))
