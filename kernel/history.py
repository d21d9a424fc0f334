"""History functions (DESIGN, "History functions"): names, arguments, values, bounds and links.

Stage: kernel, standard library only. Takes a function's name, its window and (for the
functions that read a metric) the metric's range; gives what every layer needs to agree on:

- the names and argument kinds the front end accepts (`FUNCTIONS`, `NAMES`);
- the value a call takes over a history (`trend`, `mean`, `delta`, `count`, `streak`), which
  the runtime's generated code calls;
- how many history rows a call needs (`rows_needed`);
- the range its value can take (`value_range`), which the front end types the call with and
  the compiler gives the call's variable;
- what every run makes true of the value and the metric's current value (`link`), which the
  compiler encodes beside that variable.

Why: these were four lists in three packages (the runtime's code generator, the front end's
names and bounds, the compiler's encoding). One table here means a proof about a call is a
proof about the value the runtime computes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pedrag.kernel.errors import PedragError


class HistoryError(PedragError, ValueError):
    """A name that is not a history function, or a link asked of one that reads no metric."""


Rows = Sequence[Mapping[str, Any]]
Condition = Callable[[Rows, int], Any]

# -- values (the semantics the compiler's bounds and links assume) -----------------------------


def trend(values: Sequence[float]) -> float:
    """Least-squares slope per turn of `values` (oldest first); 0 for fewer than two values."""
    count = len(values)
    if count < 2:
        return 0.0
    x_mean = (count - 1) / 2
    y_mean = sum(values) / count
    numerator = 0.0
    denominator = 0.0
    for index, value in enumerate(values):
        dx = index - x_mean
        numerator += dx * (value - y_mean)
        denominator += dx * dx
    return numerator / denominator


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _last(rows: Rows, metric: str, default: Any, turns: int) -> list[Any]:
    return [row.get(metric, default) for row in rows[-turns:]]


def trend_of(rows: Rows, metric: str, default: Any, turns: int) -> float:
    """`trend` of `metric` over the last `turns` rows (`default` where a row lacks it)."""
    return trend(_last(rows, metric, default, turns))


def mean_of(rows: Rows, metric: str, default: Any, turns: int) -> float:
    """`mean` of `metric` over the last `turns` rows (`default` where a row lacks it)."""
    return mean(_last(rows, metric, default, turns))


def delta(rows: Rows, metric: str, default: Any, turns: int) -> Any:
    """Now minus the value `turns` turns ago (or the oldest available)."""
    past = rows[-1 - turns] if len(rows) > turns else rows[0]
    return rows[-1].get(metric, default) - past.get(metric, default)


def count(condition: Condition, rows: Rows, turns: int) -> int:
    """Turns among the last `turns` in which `condition` held."""
    end = len(rows)
    return sum(1 for index in range(max(0, end - turns), end) if condition(rows, index))


def streak(condition: Condition, rows: Rows, turns: int) -> int:
    """Consecutive most recent turns, at most `turns`, in which `condition` held."""
    held = 0
    index = len(rows) - 1
    while held < turns and index >= 0 and condition(rows, index):
        held += 1
        index -= 1
    return held


# -- the table ---------------------------------------------------------------------------------

Reads = Literal["metric", "condition"]


@dataclass(frozen=True)
class HistoryFunction:
    """One history function: `name(first, turns)`, `first` a numeric metric or a condition,
    `turns` a whole number of turns, at least 1."""

    name: str
    reads: Reads  # what the first argument is
    # The call's value: `(rows, metric, default, turns)` for a function that reads a metric,
    # `(condition, rows, turns)` for one that reads a condition (`condition(rows, index)`).
    value: Callable[..., Any]
    summary: str

    @property
    def reads_condition(self) -> bool:
        return self.reads == "condition"

    def signature(self) -> str:
        """How the call is written, e.g. `count(cond, turns)`."""
        return f"{self.name}({'cond' if self.reads_condition else 'metric'}, turns)"

    def example(self, turns: int = 3) -> str:
        """A call a designer could write, e.g. `count(frustration > 0.5, 3)`."""
        first = "frustration > 0.5" if self.reads_condition else "frustration"
        return f"{self.name}({first}, {turns})"


ARITY = 2  # every history function: (metric or condition, turns)

FUNCTIONS: dict[str, HistoryFunction] = {
    f.name: f
    for f in (
        HistoryFunction("trend", "metric", trend_of, "least-squares slope per turn of a metric"),
        HistoryFunction("mean", "metric", mean_of, "mean of a metric over the last n turns"),
        HistoryFunction("delta", "metric", delta, "a metric now minus its value n turns ago"),
        HistoryFunction("count", "condition", count, "turns among the last n a condition held"),
        HistoryFunction(
            "streak", "condition", streak, "consecutive most recent turns a condition held"
        ),
    )
}
NAMES: tuple[str, ...] = tuple(FUNCTIONS)


def function(name: str) -> HistoryFunction:
    found = FUNCTIONS.get(name)
    if found is None:
        raise HistoryError(f"unknown history function {name!r}; they are {', '.join(NAMES)}")
    return found


def reads_condition(name: str) -> bool:
    return function(name).reads_condition


# -- rows, ranges and links ---------------------------------------------------------------------


def rows_needed(name: str, turns: int, inner: int = 1) -> int:
    """History rows (current turn included) a call needs to give its full-history value;
    `inner`: the rows the calls nested in a condition need."""
    if name == "delta":
        return turns + 1
    if function(name).reads_condition:
        return turns - 1 + max(1, inner)
    return turns


def value_range(
    name: str, turns: int, low: Any = None, high: Any = None, integer: bool = False
) -> tuple[Any, Any, bool]:
    """(low, high, whole numbers only) of a call's value, given its window and, for a function
    that reads a metric, the metric's range and whether it is an int. Exact for the numbers it
    is given (ints, floats or `Fraction`s)."""
    if function(name).reads_condition:
        return 0, turns, True
    if low is None or high is None:
        raise HistoryError(f"`{name}` reads a metric: its range is needed")
    if name == "mean":
        return low, high, False
    width = high - low
    return -width, width, integer and name == "delta"


Comparison = tuple[str, int]  # (op, constant) on the call's value


@dataclass(frozen=True)
class Band:
    """`value_coefficient * value + now_coefficient * now` lies in [low, high], `value` the
    call's and `now` its metric's current value: what every run makes true of a call that
    reads a metric."""

    value_coefficient: int
    now_coefficient: int
    low: Any
    high: Any


@dataclass(frozen=True)
class Split:
    """What every run makes true of a call that reads a condition, split on whether the
    condition holds now: `value if_now[0] if_now[1]`, else `value if_not_now[0] ...`."""

    if_now: Comparison
    if_not_now: Comparison


def link(name: str, turns: int, low: Any = None, high: Any = None) -> Band | Split | None:
    """What every run makes true of a call's value beyond its range (None: nothing more)."""
    found = function(name)
    if turns < 1:
        return None
    if found.reads_condition:
        # The current turn is always in the window: it counts when the condition holds now.
        # A streak is the run of turns ending now: empty exactly when the condition fails.
        return Split((">=", 1), ("<", 1) if name == "streak" else ("<=", turns - 1))
    if low is None or high is None:
        raise HistoryError(f"`{name}` reads a metric: its range is needed")
    if name == "delta":  # now - past, the past value within the range
        return Band(-1, 1, low, high)
    if name == "mean":  # the current value and up to turns - 1 others in the range
        return Band(turns, -1, (turns - 1) * low, (turns - 1) * high)
    return None
