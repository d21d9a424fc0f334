"""Static types of condition expressions, for the resolver's type checking.

A `Ty` says what an expression denotes: a truth value, a number with known bounds (so
constants can be checked against a metric's range and history functions get bounded
domains), an enum value of a given metric, a rung, an action, the tag set, a string, or a
bare word whose meaning depends on what it is compared with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["bool", "num", "enum", "rung", "action", "tags", "string", "word", "list", "error"]


@dataclass(frozen=True)
class Ty:
    kind: Kind
    low: float = float("-inf")
    high: float = float("inf")
    integer: bool = False
    values: tuple[str, ...] = ()
    metric: str | None = None  # for enums and metric references

    def describe(self) -> str:
        if self.kind == "num":
            if self.metric:
                return f"number (metric `{self.metric}`, range [{self.low:g}, {self.high:g}])"
            return "number"
        if self.kind == "enum":
            return f"enum `{self.metric}` ({', '.join(self.values)})"
        return {
            "bool": "true/false value",
            "rung": "rung (H0..H7)",
            "action": "action",
            "tags": "tag set",
            "string": "string",
            "word": "name",
            "list": "list",
            "error": "invalid",
        }[self.kind]


BOOL = Ty("bool")
RUNG = Ty("rung")
ACTION = Ty("action")
TAGS = Ty("tags")
STRING = Ty("string")
WORD = Ty("word")
ERROR = Ty("error")


def number(low: float = float("-inf"), high: float = float("inf"), integer: bool = False) -> Ty:
    return Ty("num", low=low, high=high, integer=integer)
