"""The audit record's plain form is exactly a JSON round trip's, without the text (issue 30:
no JSON round trips on the turn's hot path)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Any

import pytest

from pedrag.runtime.store.plain import plain


class Colour(StrEnum):
    RED = "red"


class Level(IntEnum):
    HIGH = 3


@dataclass(frozen=True)
class Thing:
    name: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "tags": ("a", "b")}


def _round_trip(record: Any) -> Any:
    def default(value: Any) -> Any:
        if hasattr(value, "to_dict"):
            return value.to_dict()
        if isinstance(value, frozenset | set):
            return sorted(value)
        raise TypeError(type(value).__name__)

    return json.loads(json.dumps(record, default=default, allow_nan=False))


RECORDS = [
    {"turn": 3, "x": 0.1, "neg": -0.0, "big": 10**30, "t": (1, (2, [3])), "none": None},
    {"enum": Colour.RED, "level": Level.HIGH, "flag": True, "set": frozenset({"b", "a"})},
    {1: "int key", False: "bool key", None: "none key", 2.5: "float key", Colour.RED: 1},
    {"thing": Thing("x"), "nested": {"deep": [Thing("y"), {"k": (True, False)}]}},
    {"text": "naïve — “quoted” \u0000 control", "empty": {}, "list": []},
]


@pytest.mark.parametrize("record", RECORDS)
def test_plain_equals_a_json_round_trip(record: dict[Any, Any]) -> None:
    got = plain(record)
    assert got == _round_trip(record)
    assert json.dumps(got, sort_keys=True) == json.dumps(_round_trip(record), sort_keys=True)
    assert all(type(key) is str for key in got)


@pytest.mark.parametrize("bad", [{"x": math.nan}, {"x": [math.inf]}])
def test_a_non_finite_number_is_refused_as_json_refuses_it(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        plain(bad)


def test_an_unknown_type_is_refused() -> None:
    with pytest.raises(TypeError, match="not JSON-able: object"):
        plain({"x": object()})
    with pytest.raises(TypeError, match="keys must be"):
        plain({(1, 2): "tuple key"})
