"""Writing a command's output file: parent folders created, replaced atomically, errors as text.

`pedrag compile -o build/policy.json` should work in a fresh checkout (no `build/` yet) and a
failed write must neither leave half a policy behind nor end in a traceback.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path


def silence_stdout() -> None:
    """After a reader closed the pipe (`pedrag check ... | head -1`): point standard output at
    the null device, so the interpreter's last flush neither fails nor prints a warning."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real descriptor (a test's captured stdout)
        pass


def write_output(path: str, data: bytes) -> str | None:
    """Write `data` to `path`; return None on success, else a one-line reason for the user.
    A symbolic link is written through: the file it points to is replaced, the link stays."""
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    if target.is_dir():
        return f"{path} is a folder; give a file name, e.g. {Path(path) / 'policy.json'}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            # mkstemp makes the file private; keep a replaced file's mode, else the usual one.
            if target.exists():
                os.chmod(temporary, stat.S_IMODE(target.stat().st_mode))
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(temporary, 0o666 & ~umask)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    return None
