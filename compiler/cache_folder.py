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


def default_folder() -> Path:
    """`$PEDRAG_CACHE_DIR`, else the platform's user cache folder (platformdirs)."""
    configured = os.environ.get(ENV_CACHE_DIR, "").strip()
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("pedrag", appauthor=False))
