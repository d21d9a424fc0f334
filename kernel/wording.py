"""What an action's wordings may be filled with (DESIGN, "Actions": `template`, `variants`).

`{topic}` is filled everywhere. The other placeholders are filled only in an action's
`variants`, from the current exercise's teaching material (`hints`, `worked_example`, ...);
the template is also the fail-closed reply, which has no material to fill in. The resolver
reports any other placeholder, and the runtime fills exactly these.

Four of them hand the learner the current exercise's own help, whatever the action's `tags:`
say: an action whose wordings fill one carries its tag (`derived_tags`), so an invariant such as
`never: "last_answer_correct and 'hint' in tags"` is proved over every action that can give a
hint, not only over those whose designer remembered to say so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

TEMPLATE_PLACEHOLDERS = ("topic",)
MATERIAL_PLACEHOLDERS = (
    "topic",
    "prompt",
    "restatement",
    "concept",
    "hint",
    "example",
    "parallel",
    "misconception",
    "outline",
    "solution",
    "solved",
    "diagnosis",
    "slip",
    "unexplained",
    "elsewhere",
)

# The placeholders filled from the exercise's path to its answer (`turn_material`: its next hint
# from H3, worked example from H5, partly worked outline from H6, solution in explain mode at
# H7), each with the tag an action that fills one carries. The others are not help towards
# this exercise's answer: the question itself or restated, the goal's concept, a common
# misconception, another item, the learner's own working or question.
HELP_TAGS = {
    "hint": "hint",
    "example": "example",
    "outline": "partial_solution",
    "solution": "reveal",
}
_HELP = re.compile(r"\{(" + "|".join(HELP_TAGS) + r")\}")


def derived_tags(wordings: Iterable[str | None]) -> dict[str, str]:
    """The tags an action carries because its wordings fill help placeholders, each with the
    placeholder that gives it (`{"hint": "hint", "partial_solution": "outline"}`), in
    `HELP_TAGS` order, so a listing of them reads the same on every run."""
    filled = {name for text in wordings for name in _HELP.findall(text or "")}
    return {HELP_TAGS[name]: name for name in HELP_TAGS if name in filled}


def shown_tags(declared: Iterable[str], derived: Mapping[str, str]) -> list[str]:
    """An action's tags as a designer reads them (the language server's hover, `pedrag why`):
    the declared ones, then each one only a wording gives, with its placeholder
    (`hint (derived: fills `{hint}`)`), so a proof or a decision about `'hint' in tags` says
    where the hint comes from when `tags:` never said it."""
    declared = list(declared)
    return [
        *declared,
        *(
            f"{tag} (derived: fills `{{{placeholder}}}`)"
            for tag, placeholder in derived.items()
            if tag not in declared
        ),
    ]
