"""The root of every exception pedrag raises on purpose (STYLE: one small hierarchy, as Jinja2's
``TemplateError``).

Kernel, standard library only, so every layer can subclass it. An application embedding pedrag
catches :class:`PedragError` to tell pedrag's own failures (a theory that does not load, a store
that is down, a model call that failed closed) from bugs; each subclass keeps the builtin base it
had (``ValueError`` for bad values), so existing ``except ValueError`` code still works. The
public names are re-exported by ``pedrag.errors``.
"""

from __future__ import annotations


class PedragError(Exception):
    """Something pedrag raised on purpose, with a message meant for a person."""
