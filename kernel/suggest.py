"""Did you mean: the one rule for suggesting a known name in place of one that matched nothing.

Kernel, standard library only, so every layer calls it (the front end's unknown names and keys,
the compiler's check names and configuration, the CLI's options, the language server's quick
fix). Takes the name that was written and the names that exist; gives the closest one (difflib's
similarity ratio at least 0.6, the best one only) and the phrase every message words it with.
Why one place: the rule (cutoff, how many, the wording the language server parses back) was
written out ten times, and a copy that drifts makes one command suggest what another does not.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Literal

CUTOFF = 0.6
"""How alike a known name must be (difflib's ratio) to be suggested."""

Quote = Literal["code", "repr"]
"""How the suggestion is quoted: `code` in backticks (diagnostics, Markdown), `repr` as Python
writes a string ('name', the CLI's usage messages)."""

_PHRASE = re.compile(r"did you mean `([^`]+)`\?")


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The known name closest to `name`, or None when none is alike enough."""
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=CUTOFF)
    return matches[0] if matches else None


def phrase(meant: str, *, quote: Quote = "code") -> str:
    """`did you mean `meant`?`: the wording of every suggestion."""
    shown = repr(meant) if quote == "repr" else f"`{meant}`"
    return f"did you mean {shown}?"


def did_you_mean(
    name: str, candidates: Iterable[str], *, quote: Quote = "code", lead: str = ""
) -> str:
    """`lead` + the suggestion's phrase, or "" when no known name is close to `name`."""
    meant = closest(name, candidates)
    return lead + phrase(meant, quote=quote) if meant is not None else ""


def suggested(help: str) -> str | None:
    """The name a help line that is exactly a suggestion suggests (the language server's quick
    fix replaces the flagged text with it), or None."""
    found = _PHRASE.fullmatch(help)
    return found.group(1) if found else None
