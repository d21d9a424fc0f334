"""What an action's wordings may be filled with (DESIGN, "Actions": `template`, `variants`).

`{topic}` is filled everywhere. The other placeholders are filled only in an action's
`variants`, from the current exercise's teaching material (`hints`, `worked_example`, ...);
the template is also the fail-closed reply, which has no material to fill in. The resolver
reports any other placeholder, and the runtime fills exactly these.
"""

from __future__ import annotations

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
