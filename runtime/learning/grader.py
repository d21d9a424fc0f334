"""The grader: every student message, graded against the current exercise.

Runtime stage 2, beside the pre-classifier. Takes the student's message and the exercise
(its hidden answer, `accept:` spellings, ``tolerance:`` and ``units:``, and for programming
exercises its `tests:`); gives a :class:`Grade`: ``correct``, ``wrong`` (with the answer the
message commits to, echoed as the learner wrote it), ``none`` (the message commits to no answer:
a question, a negation, a list of candidates, a remark) or ``error`` (code that could not be
run), with the reason. The verdict is trusted state: it is written through the declared writers
(``correct_answer``, ``wrong_answer``, ``new_wrong_answer`` events), never inferred by a model,
and its facts go to the generator as facts to narrate (seed 2, §3.5).

What a message commits to is the answer reader's decision
(`pedrag.runtime.learning.answer_reader`); this module adds the key: exact equivalence of
numbers (a declared tolerance widens it), SymPy equivalence of expressions, typo-tolerant text,
and code run against its tests in a subprocess (`pedrag.runtime.learning.code_runner`).
`pedrag grade` calls :func:`grade` exactly as the tutor does.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from pedrag.kernel.code_rules import CodeTooDeep, forbidden_use, missing_structure
from pedrag.kernel.exact import decimal_fraction
from pedrag.runtime.detect.detector import AnswerKey
from pedrag.runtime.learning import answer_reader as reader
from pedrag.runtime.learning.code_runner import RunResult, run_tests
from pedrag.runtime.learning.generated_tests import generated_tests
from pedrag.runtime.learning.working import correct_step

Verdict = Literal["correct", "wrong", "none", "error"]
_FENCED = re.compile(r"```[a-zA-Z0-9_+-]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_CODE_LINE = re.compile(r"^\s*(def |class |return\b|for |while |if |import |from |\w+\s*=)")
_LIST = re.compile(r"\b(?:or|either|one\s+of|any\s+of|and/or)\b|/", re.IGNORECASE)
# Intents under which a message is not a wrong answer, whatever its words. A "question" is
# not among them: whether "is it Sydney?" is a tentative answer or a question about the term
# is the answer reader's decision, not a classifier's.
NOT_ANSWERS = frozenset({"solution_demand", "hostile", "injection", "exam_leak", "off_topic"})


@dataclass(frozen=True)
class Grade:
    verdict: Verdict
    candidate: str | None = None  # the answer graded, as the learner wrote it (a hash for code)
    facts: tuple[str, ...] = ()  # for the generation prompt, as facts to narrate
    run: RunResult | None = None
    reason: str = ""  # why this verdict, for `pedrag grade` and the audit
    tentative: bool = False  # "is it 56?": an attempt, graded as one
    work: bool = False  # the message's working is checkable and consistent (`shows_work`)
    value: Fraction | None = None  # a numeric answer's value: "55", "55.0" and "110/2" are one
    disowned: bool = False  # its answer taken back, negated or quoted (`Reading.disowned`)

    @property
    def answer_identity(self) -> str | None:
        """What makes two graded answers the same answer: a number's value, else the words up
        to case and spacing. The candidate as written is for echoing; counted as distinct,
        "55", "55.0", "55.00", "+55" and "110/2" were five new wrong answers (five attempts)."""
        if self.value is not None:
            return f"= {self.value}"
        if self.candidate is None:
            return None
        return " ".join(self.candidate.split()).casefold()

    @property
    def graded(self) -> bool:
        return self.verdict in ("correct", "wrong")


@dataclass(frozen=True)
class GradingRules:
    """An exercise's grading rules beside its key: a numeric ``tolerance``, the ``units`` an
    answer may carry, and how many of its tests (the first ones) are public examples."""

    tolerance: float | None = None
    units: tuple[str, ...] = ()
    public_tests: int = 0
    # A misconception's `answers:`: graded wrong as written, before the lenient text match
    # (which folds plurals and typos: "know" is no misspelling of "knows" in an agreement drill).
    wrong_answers: tuple[str, ...] = ()
    # Names the learner's code must not use (`forbid:`, "without calling sum()"): passing the
    # tests with `return sum(nums)` is not the exercise.
    forbid: tuple[str, ...] = ()
    # Loops the learner's code must contain (`require:`, "using a for loop"): passing the tests
    # with `math.fsum(nums)` or recursion is not the exercise either.
    require: tuple[str, ...] = ()


def grading_inputs(
    exercise: Any,
) -> tuple[AnswerKey, tuple[tuple[str, str], ...], GradingRules]:
    """The key, tests (public examples first) and rules of a curriculum exercise (its model,
    `pedrag.dsl.model.Exercise`): what the tutor and `pedrag grade` both grade against."""
    key = AnswerKey(
        answer=exercise.answer,
        accept=tuple(exercise.accept),
        solution=exercise.solution,
        prompt=exercise.prompt,
    )
    tests = list(getattr(exercise, "tests", ()) or ())
    ordered = [t for t in tests if getattr(t, "public", False)]
    ordered += [t for t in tests if not getattr(t, "public", False)]
    rules = GradingRules(
        getattr(exercise, "tolerance", None),
        tuple(getattr(exercise, "units", ()) or ()),
        len(ordered) - sum(1 for t in tests if not getattr(t, "public", False)),
        tuple(
            answer
            for item in getattr(exercise, "misconceptions", ()) or ()
            for answer in getattr(getattr(item, "signals", None), "answers", ()) or ()
        ),
        tuple(getattr(exercise, "forbid", ()) or ()),
        tuple(getattr(exercise, "require", ()) or ()),
    )
    return key, tuple((t.call, t.expect) for t in ordered), rules


def grade_exercise(message: str, exercise: Any, *, intent: str | None = None) -> Grade:
    """The grade of ``message`` on a curriculum exercise, exactly as the tutor grades it."""
    key, tests, rules = grading_inputs(exercise)
    return grade(message, key, tests=tests, intent=intent, rules=rules)


def learner_code(message: str) -> str | None:
    """The code in a message: a fenced block, or the run of lines that read as code."""
    fenced = _FENCED.search(message)
    if fenced:
        return fenced.group(1).strip("\n") or None
    lines = message.splitlines()
    if any(_CODE_LINE.match(line) for line in lines) and any(
        "def " in line or "return" in line for line in lines
    ):
        return message.strip("\n")
    return None


def grade(
    message: str,
    key: AnswerKey | None,
    *,
    tests: Sequence[tuple[str, str]] = (),
    context: str | None = None,
    intent: str | None = None,
    rules: GradingRules | None = None,
    tolerance: float | None = None,
    units: Sequence[str] = (),
    asked: Sequence[str] = (),
) -> Grade:
    """The grade of one student message. Never raises; code that cannot run is ``error``.
    ``rules`` (or ``tolerance`` and ``units`` alone): the exercise's grading rules; of
    ``tests`` only the first ``rules.public_tests`` may be quoted to the learner. ``asked``:
    the values of the calculation the tutor's last hint asked for ("what is 7 times 4?":
    "28"), from the runtime's record of the hints it showed (`material.asked_steps`), never
    from the message: a learner who answers the hint has done a step, not answered wrongly."""
    rules = rules or GradingRules(tolerance, tuple(units))
    if key is None:
        return Grade("none", reason="no exercise to grade against")
    code = learner_code(message) if tests else None
    if code is not None:
        return _grade_code(
            code, tests, rules.public_tests, rules.forbid, rules.require, key.solution
        )
    said = message.strip().strip(".!").strip()
    if _accepted_text(said, key):
        # The whole message is the key or an `accept:` spelling, as written: no reading needed
        # ("Neither the teacher nor the students were ready." is no negation).
        return _correct(
            said,
            reader.Reading(said, "an accepted spelling"),
            "an `accept:` spelling of the answer (the whole message)",
        )
    if _as_written(said, rules.wrong_answers):
        return _wrong(
            said,
            reader.Reading(said, "a misconception's answer"),
            "a misconception's `answers:` entry (the whole message)",
        )
    if _number_targets(key, context) is not None:
        result = _grade_number(message, key, context, rules.tolerance, rules.units, asked)
    elif _expression_key(key.answer):
        result = _grade_expression(message, key)
    else:
        result = _grade_text(message, key, rules.wrong_answers)
    if result.verdict == "wrong" and intent in NOT_ANSWERS:
        return Grade("none", reason=f"not an answer (the message reads as {intent})")
    return result


def answer_words_signal(result: Grade, intent: object) -> bool:
    """Whether the wrong answers a message names may signal a misconception (`Material.
    diagnose`'s ``answer``), by the grader's reading of it: not when it is no answer (its
    intent is one of `NOT_ANSWERS`) nor when the learner does not stand by the answer it names
    (``disowned``: taken back, negated, the tutor's words quoted). Before, "oxygen? no" was
    graded as no answer while the tutor still said "Plants do not take in oxygen..." to it, a
    diagnosis of an answer the learner had withdrawn."""
    return intent not in NOT_ANSWERS and not result.disowned


def _correct(
    answer: str, reading: reader.Reading, why: str, problem: frozenset[Fraction] | None = None
) -> Grade:
    return Grade(
        "correct",
        answer,
        (f"the learner's answer {answer!r} is correct",),
        reason=why,
        tentative=reading.tentative,
        work=consistent_work(reading, problem),
        value=reading.value,
    )


def _wrong(
    answer: str, reading: reader.Reading, why: str, problem: frozenset[Fraction] | None = None
) -> Grade:
    return Grade(
        "wrong",
        answer,
        (f"the learner's answer {answer!r} is not correct",),
        reason=why,
        tentative=reading.tentative,
        work=consistent_work(reading, problem),
        value=reading.value,
    )


@dataclass(frozen=True)
class _NumberTargets:
    """What a numeric key gives the reader, read from the key alone: the accepted values, the
    prompt's (and context's) other numbers, its own spellings of an accepted value, and the
    worked solution's intermediate values."""

    accepted: tuple[Fraction, ...]
    givens: tuple[Fraction, ...]
    restated: tuple[str, ...]
    steps: tuple[Fraction, ...]

    @functools.cached_property  # once per exercise, as the targets are (`_number_targets`)
    def problem(self) -> frozenset[Fraction]:
        """The numbers working on this problem starts from (:func:`consistent_work`): the
        givens, their digits and place-value parts (38 is 30 and 8, and 3 and 8: "30 + 40 =
        70", "3 + 4 = 7"), and the worked solution's values."""
        found = set(self.givens) | set(self.steps)
        for given in self.givens:
            if given.denominator != 1:
                continue
            digits = str(abs(given.numerator))
            for place, digit in enumerate(reversed(digits)):
                found |= {Fraction(int(digit)), Fraction(int(digit) * 10**place)}
        return frozenset(found)


_ASSIGNED_BEFORE = re.compile(r"(?<![\w.])[A-Za-z_]\w*\s*=\s*$")


@functools.lru_cache(maxsize=256)  # once per exercise (its key), not per message
def _number_targets(key: AnswerKey, context: str | None) -> _NumberTargets | None:
    """The key's :class:`_NumberTargets`; None when its answer is not one number."""
    target = reader.read_number(key.answer)
    if target is None:
        return None
    accepted = [target, *(v for v in map(reader.read_number, key.accept) if v is not None)]
    given_text = reader.canonical("\n".join(p for p in (key.prompt, context) if p))
    given = reader.numbers(given_text)
    givens = [n.value for n in given if n.value not in accepted]
    # the prompt's own spelling of an accepted value ("3/8" in "write 3/8 as a decimal") is no
    # answer; a value its code assigns is not that spelling ("a = 4" in var_copy's code: "it's
    # 4", "b is 4" and "it prints 4" committed to nothing, the right answer ungraded)
    restated = [
        n.text.replace(" ", "")
        for n in given
        if n.value in accepted and not _ASSIGNED_BEFORE.search(given_text, 0, n.start)
    ]
    steps = [
        n.value
        for n in reader.numbers(reader.canonical(key.solution or ""))
        if n.value not in accepted and n.value not in givens
    ]
    return _NumberTargets(tuple(accepted), tuple(givens), tuple(restated), tuple(steps))


def _grade_number(
    message: str,
    key: AnswerKey,
    context: str | None,
    tolerance: float | None,
    units: tuple[str, ...],
    asked: Sequence[str] = (),
) -> Grade:
    targets = _number_targets(key, context)
    assert targets is not None
    accepted, givens, steps = targets.accepted, targets.givens, targets.steps
    restated = targets.restated
    traced, rest = _traced(message, key, numeric=True)
    reading = reader.read_message(
        rest if traced else message, kind="number", givens=givens, steps=steps, restated=restated
    )
    problem = targets.problem
    if traced and not reading.committed:
        return _step_on_the_way(traced)
    if not reading.committed or reading.value is None:
        return Grade(
            "none",
            reason=reading.reason,
            work=consistent_work(reading, problem),
            disowned=reading.disowned,
        )
    answer = reading.answer or ""
    if units and reading.unit and not any(reader.same_text(reading.unit, unit) for unit in units):
        return _wrong(
            f"{answer} {reading.unit}",
            reading,
            f"unit {reading.unit!r} is not one of the exercise's units ({', '.join(units)})",
            problem,
        )
    if any(equal_numbers(reading.value, value, tolerance) for value in accepted):
        why = "equal to the answer" + (f" within {tolerance:g}" if tolerance else "")
        return _correct(answer, reading, f"{reading.reason}, {why}", problem)
    if reading.value in _values(asked):
        # "28" (or "7 times 4 is 28", "it's 28") right after the hint asked "what is 7 times
        # 4?": the learner did what the hint asked, a step done (`material.steps_done` counts
        # it), not a wrong answer. It was one: an attempt counted against them.
        return Grade(
            "none",
            facts=(f"the learner's step {answer!r} is right, a step on the way, not the answer",),
            reason=f"{reading.reason}: the value of the step the last hint asked for",
            work=consistent_work(reading, problem),
        )
    step = correct_step(message, answer) if reading.value in targets.steps else ""
    if step:
        # "7 x 4 = 28" for 7 x 8: a step of the worked solution, worked out right, is where
        # the learner is, not a wrong answer (it was one, an attempt counted against a learner
        # doing what the hint asked). A bare "28", or a step's value reached by wrong working,
        # commits as before.
        return Grade(
            "none",
            facts=(f"the learner's step {step!r} is right, a step on the way, not the answer",),
            reason=f"{reading.reason}: a step of the worked solution, worked out right",
            work=consistent_work(reading, problem),
        )
    return _wrong(answer, reading, f"{reading.reason}, not equal to the answer", problem)


def _step_on_the_way(step: str) -> Grade:
    return Grade(
        "none",
        facts=(f"the learner's step {step!r} is right, a step on the way, not the answer",),
        reason="a trace of the code: a value the exercise's code gives on the way",
    )


# What the exercise's code gives a variable: "x = 5" in the prompt or the worked solution, and
# the values a solution line's comment lists for the name the line assigns, prints or loops
# over ("total += n  # 2, then 6, then 12").
_ASSIGNED = re.compile(r"(?<![\w.'\"])([A-Za-z_]\w*)\s*([-+*/]?)=(?!=)\s*([^,\n#]*)")
_NAMED = re.compile(r"\bfor\s+([A-Za-z_]\w*)\s+in\b|\bprint\(\s*([A-Za-z_]\w*)\s*\)")
_OVER_A_LIST = re.compile(r"\bfor\s+([A-Za-z_]\w*)\s+in\s+\[([^\]\n]*)\]")
_LITERAL = re.compile(r"""^\s*(?:(-?\d+(?:\.\d+)?)|'([^']*)'|"([^"]*)")\s*$""")
_COMMENT_VALUE = re.compile(r"""'([^']*)'|"([^"]*)"|(?<![\w.])(-?\d+(?:\.\d+)?)(?![\w.])""")
# "x is 5", "x = 5", "x was 5 at first", "total becomes 6": a name, then its value
_TRACE_VERB = r"(?:is|was|=|equals|becomes|became|holds|stores|starts\s+(?:at|as)|is\s+still)"


@functools.lru_cache(maxsize=256)  # once per exercise (its key)
def _trace(key: AnswerKey) -> dict[str, frozenset[str]]:
    """Each variable of the exercise's code and the values it takes on the way (`_taken`), the
    answer's own values left out: stating the answer is answering."""
    answers = {_value_text(s) for s in (key.answer, *key.accept)}
    taken = _taken(key)
    return {name: v - answers for name, v in taken.items() if v - answers}


@functools.lru_cache(maxsize=256)  # once per exercise (its key)
def _taken(key: AnswerKey) -> dict[str, frozenset[str]]:
    """Each variable of the exercise's code and every value it takes, read from the prompt and
    the worked solution (the key's text, never the learner's): its literal assignments, the
    items of a list it loops over, the values a line's comment lists for it, and what a
    comment says it becomes ("# n becomes -2 after the fourth line")."""
    found: dict[str, set[str]] = {}
    for text in (key.prompt or "", key.solution or ""):
        for line in text.splitlines():
            code, _, comment = line.partition("#")
            names = []
            for assigned in _ASSIGNED.finditer(code):
                names.append(assigned.group(1))
                literal = _LITERAL.match(assigned.group(3))
                # "n -= 3" gives n no value 3; "total, k = 0, 1" gives k no value 0
                tuple_target = code[: assigned.start()].rstrip().endswith(",")
                if literal is not None and not assigned.group(2) and not tuple_target:
                    found.setdefault(assigned.group(1), set()).add(_spelled(literal))
            names += [m.group(1) or m.group(2) for m in _NAMED.finditer(code)]
            for loop in _OVER_A_LIST.finditer(code):
                # "for n in [2, 4, 6]": n takes each item ("n is 2 then 4 then 6, total is 12"
                # was a list of four numbers)
                items = [_LITERAL.match(item) for item in loop.group(2).split(",")]
                found.setdefault(loop.group(1), set()).update(
                    _spelled(item) for item in items if item is not None
                )
            for name in names if comment else ():
                values = {_spelled(m) for m in _COMMENT_VALUE.finditer(comment)}
                found.setdefault(name, set()).update(values)
            for said in _COMMENT_BECOMES.finditer(comment):
                if said.group(1) in found:  # a variable of the code, not any word
                    found[said.group(1)].add(_value_text(said.group(2)))
    return {name: frozenset(values) for name, values in found.items() if values}


# What a comment says a variable's value is ("# n becomes -2 after the fourth line").
_COMMENT_BECOMES = re.compile(
    rf"(?<![\w.])([A-Za-z_]\w*)\s+{_TRACE_VERB}\s+(-?\d+(?:\.\d+)?)(?![\w.])", re.IGNORECASE
)


def _spelled(match: re.Match[str]) -> str:
    return _value_text(next(g for g in match.groups() if g is not None))


def _value_text(text: str) -> str:
    """A value compared by what it says: a number by its value, a text by its letters."""
    if re.fullmatch(r"\s*-?\d+(?:\.\d+)?\s*", text):
        return f"= {Fraction(text.strip())}"
    return " ".join(text.strip(" '\"").split()).casefold()


def _of_the_variable(said: str, key: AnswerKey) -> str:
    """A text answer said as a variable's value ("greeting is Hi Ada" on var_concat, whose code
    assigns greeting): the value is the answer said. Read whole, the variable's name was taken
    for another item, a misconception's answer ("greeting"), and the right answer committed
    to nothing. An answer that is itself code ("result += n") is judged as written."""
    if any(reader.operators(spelling) for spelling in (key.answer, *key.accept)):
        return said
    texts = (key.prompt or "", key.solution or "")
    names = {m.group(1) for t in texts for m in _ASSIGNED.finditer(t)}
    # a loop's variable too ("i is 2 then 5 then 9" on range_output, whose code assigns none)
    names |= {m.group(1) for t in texts for m in _NAMED.finditer(t) if m.group(1)}
    found = re.match(rf"^\s*([A-Za-z_]\w*)\s+{_TRACE_VERB}\s+(\S.*)$", said, re.IGNORECASE)
    if found is None or found.group(1) not in names:
        return said
    return found.group(2).strip()


def _traced(message: str, key: AnswerKey, *, numeric: bool) -> tuple[str, str]:
    """The learner's first statement of a value the exercise's code gives a variable on the way
    ("x is 5" on var_update, whose code starts "x = 5"; "total is 6" after the second pass), as
    read, or ""; and the message with every such statement blanked out (canonical for a numeric
    key), which is what the learner commits to. Such a statement is a step of tracing the code,
    true of the code, not the printed answer: it was graded wrong ("x is 5" as the wrong answer
    5), and "x is 5 and then it prints 7" was a list of two numbers. A value the variable never
    takes ("x is 9") and the answer's own value ("x is 7") stay in the message, graded."""
    trace = _trace(key)
    if not trace:
        return "", message  # no code in the exercise (most): the message is read once, as sent
    text = reader.canonical(message) if numeric else message
    first, first_at, rest = "", 0, text
    for name, values in trace.items():
        for found in re.finditer(
            rf"(?<![\w.])({re.escape(name)})\s+{_TRACE_VERB}\s+['\"]?([^'\",;!?]+?)['\"]?"
            r"(?=\s*(?:$|[,.;!?]|\s(?:and|so|at|after|before|on|when|then|first|now)\b))",
            text,
            re.IGNORECASE,
        ):
            if _value_text(found.group(2).rstrip(".")) not in values:
                continue
            end = found.end()
            # the values it takes next, said on ("i is 2 then 5 then 8"): the same trace
            while (more := _NEXT_VALUE.match(text, end)) and _value_text(more.group(1)) in values:
                end = more.end()
            if not numeric and _goes_on_wrong(more, values):
                continue  # "i is 2 then 5 then 9": the learner's sequence, graded whole
            if not first or found.start() < first_at:
                first, first_at = text[found.start() : end].strip(), found.start()
            rest = rest[: found.start()] + " " * (end - found.start()) + rest[end:]
    if numeric:
        for run in _RUN.finditer(rest):
            run_end = _bare_trace_end(run, _taken(key), key)
            if run_end is None:
                continue
            if not first or run.start() < first_at:
                first, first_at = rest[run.start() : run_end].strip(" ,"), run.start()
            rest = rest[: run.start()] + " " * (run_end - run.start()) + rest[run_end:]
    return first, rest


# Two or more numbers said one after another ("10, 7, 4, 1, -2", "2 then 6 then 12"), none of
# them an operand.
_NUMBER_IN_RUN = r"-?\d+(?:\.\d+)?"
_RUN = re.compile(
    rf"(?<![\w.+*/^=-]){_NUMBER_IN_RUN}"
    rf"(?:(?:\s*,\s*(?:and\s+)?(?:then\s+)?|\s+(?:and\s+)?then\s+){_NUMBER_IN_RUN}){{1,}}"
    r"(?!\w|\.\d|\s*[-+*/^=x(])",
    re.IGNORECASE,
)


def _bare_trace_end(
    run: re.Match[str], taken: dict[str, frozenset[str]], key: AnswerKey
) -> int | None:
    """Where a bare trace of one variable ends, when ``run`` is one: each of its values is one
    the variable takes, the answer's own value included ("10, 7, 4, 1" on while_countdown:
    n takes 4, and 4 lines is the answer). Before, that 4 was a candidate beside the count
    after it, and "10, 7, 4, 1, -2 so 5 lines" was a list, ungraded. A last value that is the
    answer's stays in the message: a trace may end on what the code prints ("5 then 7")."""
    values = [(v.group(), v.end()) for v in re.finditer(_NUMBER_IN_RUN, run.group())]
    said = {_value_text(v) for v, _ in values}
    if not any(said <= v for v in taken.values()):
        return None
    answers = {_value_text(s) for s in (key.answer, *key.accept)}
    if _value_text(values[-1][0]) in answers:
        return run.start() + values[-2][1]
    return run.end()


def _goes_on_wrong(more: re.Match[str] | None, values: frozenset[str]) -> bool:
    """A trace of numbers that goes on with a number the variable never takes ("i is 2 then 5
    then 9" on range_output, whose answer is the values i takes, "2 5 8"): said for a text
    key, the whole run is the sequence the learner says the code gives, wrong at its end. Cut
    where the values stop, it was graded wrong as "9" alone, an echo of a number the learner
    never offered as the answer; for a number key the value after a trace is the one answer
    ("total is 2 then 6 then 13": 13), as before."""
    if more is None or not all(value.startswith("= ") for value in values):
        return False
    return re.fullmatch(r"-?\d+(?:\.\d+)?", more.group(1)) is not None


# A variable's next value in a trace, after its first: ", 5", " then 5", " and then 'Ada'".
_NEXT_VALUE = re.compile(
    r"""\s*,?\s*(?:and\s+)?(?:then\s+)?['"]?([^'",;!?\s]+?)['"]?(?=\s|$|[,.;!?])""",
    re.IGNORECASE,
)


def _values(asked: Sequence[str]) -> frozenset[Fraction]:
    """The asked steps' values (numbers written by the runtime from a hint's calculation)."""
    return frozenset(v for v in map(reader.read_number, asked) if v is not None)


def equal_numbers(value: Fraction, target: Fraction, tolerance: float | None) -> bool:
    """Exact equality, or within the exercise's declared ``tolerance`` (absolute)."""
    if tolerance is None:
        return value == target
    return abs(value - target) <= decimal_fraction(tolerance)


def _expression_key(answer: str) -> bool:
    parsed = reader.parse_expression(answer)
    return parsed is not None and bool(getattr(parsed, "free_symbols", None))


def _grade_expression(message: str, key: AnswerKey) -> Grade:
    """An algebraic answer ("2x + 6"): the last stated expression, equal to the key's under
    SymPy's simplification."""
    text = reader.statement(message)
    if reader.taken_back(text):
        return Grade("none", reason="an answer taken back", disowned=True)
    asked = [c for c in reader.clauses(text) if not reader.asks_about(c)]
    parts = [c for c in asked if not reader.negated(c, c.end)]
    if not parts:
        negated = bool(asked)  # "not 2x + 5": the learner's own words denied
        return Grade(
            "none", reason="a question about the term or a negated answer", disowned=negated
        )
    last = parts[-1]
    said = reader.answer_core(last.text.split("=")[-1])
    expression = reader.parse_expression(said)
    target = reader.parse_expression(key.answer)
    tentative = reader.said_tentatively(last, text)
    reading = reader.Reading(said, "the last stated expression", tentative=tentative)
    if expression is None or target is None:
        return Grade("none", reason="no expression stated")
    if any(_same_expression(expression, reader.parse_expression(a)) for a in key.accept) or (
        _same_expression(expression, target)
    ):
        return _correct(said, reading, "equal to the answer (SymPy)")
    return _wrong(said, reading, "not equal to the answer (SymPy)")


def _same_expression(left: object, right: object) -> bool:
    if left is None or right is None:
        return False
    from sympy import simplify

    try:
        return bool(simplify(left - right) == 0)  # type: ignore[operator]
    except (TypeError, ValueError, AttributeError, RecursionError):
        return False


def _accepted_text(message: str, key: AnswerKey) -> bool:
    """The whole message (trimmed) is one of the key's spellings (``accept:`` as written)."""
    return _as_written(message, (key.answer, *key.accept))


def _as_written(text: str, spellings: Sequence[str]) -> bool:
    return any(
        text.casefold() == spelling.strip().strip(".!").strip().casefold()
        or (bool(reader.operators(spelling)) and _unspaced(text) == _unspaced(spelling))
        for spelling in spellings
    )


def _unspaced(text: str) -> str:
    """Code or a formula as written, spacing aside ("not n%2" is "not n % 2")."""
    return re.sub(r"\s+", "", text.strip().rstrip(".!").casefold())


def _grade_text(message: str, key: AnswerKey, wrong_answers: Sequence[str] = ()) -> Grade:
    traced, rest = _traced(message, key, numeric=False)
    reading = reader.read_message(rest if traced else message, kind="text")
    if traced and not reading.committed:
        return _step_on_the_way(traced)
    if not reading.committed or reading.answer is None:
        return Grade("none", reason=reading.reason, disowned=reading.disowned)
    said = reading.answer
    if not reader.text_words(said) and not _as_written(said, (key.answer, *key.accept)):
        # brackets or punctuation alone ("(((", "?!") say nothing: were graded wrong, an attempt
        return Grade("none", reason="no word or number stated")
    if _as_written(said, wrong_answers):
        return _wrong(said, reading, f"{reading.reason}, a misconception's answer as written")
    spellings = (key.answer, *key.accept)
    said = _of_the_variable(said, key)
    if re.search(r"\d", said) and not any(re.search(r"\d", s) for s in spellings):
        return Grade("none", reason="a number does not answer a text question")
    if any(reader.same_text(said, spelling) for spelling in spellings):
        return _correct(said, reading, f"{reading.reason}, the answer or an accepted spelling")
    if any(_same_items(said, spelling) for spelling in spellings):
        return _correct(said, reading, f"{reading.reason}, the answer's items in another order")
    if _names(said, spellings) and not _other_numbers(said, spellings):
        if (
            _LIST.search(said)
            or _other_guesses(reading, spellings)
            or _names_a_wrong_answer(said, spellings, wrong_answers)
            or _names_more_than_the_answer(said, spellings)
            or _side_by_side(said, spellings, key.prompt)
        ):
            return Grade("none", reason="a list of candidates", tentative=reading.tentative)
        if _restates_the_prompt(reader.text_words(said), spellings, key.prompt):
            return Grade("none", reason="the question's own words, not one answer")
        naming = [p for p in reading.parts if _names(p, spellings)] or [said]
        answered = _before_reason(reading, spellings)
        if answered and _names(answered, spellings):
            naming = [answered]  # echoed without the reason given for it
        return _correct(naming[0], reading, f"{reading.reason}, names the answer")
    stated = reading.reason == "the stated answer"
    answered = _before_reason(reading, spellings)
    if answered is not None:
        said, stated = answered, True
    if not said:
        return Grade("none", reason="a reason without an answer")
    if len(said.split()) > reader.MAX_TEXT_ANSWER_WORDS or not stated or reader.is_remark(said):
        return Grade("none", reason="a remark, not a short answer")
    if _LIST.search(said):
        return Grade("none", reason="a list of candidates", tentative=reading.tentative)
    return _wrong(said, reading, f"{reading.reason}, not the answer or an accepted spelling")


def _before_reason(reading: reader.Reading, spellings: Sequence[str]) -> str | None:
    """The answer a learner gave a reason for, without the reason ("" when the message is a
    reason with no answer before it: "because plants"); None when no reason is given, or when
    the answer's own spellings use a connective (an exercise whose answer is "because").

    Why: a wrong answer with its reason was left ungraded as a remark (too long) while the
    right answer with a reason was graded right, so a learner who explains every wrong answer
    never had one counted and never reached the help a theory gives after wrong answers."""
    parts = reading.parts or (reading.answer or "",)
    for index, part in enumerate(parts):
        found = reader.REASON.search(part)
        if found is None:
            continue
        if any(reader.REASON.search(spelling) for spelling in spellings):
            return None
        kept = (*parts[:index], part[: found.start()])
        return " ".join(piece.strip() for piece in kept if piece.strip())
    return None


def _names(text: str, spellings: Sequence[str]) -> bool:
    words = reader.text_words(text)
    return any(
        _written_in(text, spelling)
        if reader.operators(spelling)
        else reader.mentions_text(words, spelling)
        for spelling in spellings
    )


def _written_in(text: str, spelling: str) -> bool:
    """A spelling with operators ("result += n") is named only as written, its operators
    included (white space aside): the words alone would name it in "result = n"."""
    pieces = re.findall(r"\w+|[^\w\s]", spelling.strip().rstrip(".!?"))
    if not pieces:
        return False
    body = r"\s*".join(re.escape(piece) for piece in pieces)
    # not part of a longer expression ("result = result += n"): no operator right before or
    # after it
    found = re.search(
        rf"(?<![\w{_OPERATORS}])(?<![{_OPERATORS}]\s){body}(?![\w{_OPERATORS}])(?!\s[{_OPERATORS}])",
        text,
        re.IGNORECASE,
    )
    return found is not None


# The operator characters, escaped for a character class: a spelling named inside a message
# may not touch one (nor a word character).
_OPERATORS = re.escape("".join(sorted(reader.OPERATOR_CHARACTERS | {"-"})))


def _names_a_wrong_answer(
    said: str, spellings: Sequence[str], wrong_answers: Sequence[str]
) -> bool:
    """The answer named together with a misconception's answer ("oxygen and carbon dioxide"
    for the gas plants take in): both candidates at once, not the answer. A misconception's
    answer that is part of the right one, or that the learner negates ("CO2, not oxygen"),
    does not count."""
    for wrong in wrong_answers:
        if not _names(said, (wrong,)) or _names(wrong, spellings):
            continue
        found = re.search(rf"\b{re.escape(wrong)}\b", said, re.IGNORECASE)
        if found is None:
            return True  # named in another spelling
        clause = next((c for c in reader.clauses(said) if c.start <= found.start() < c.end), None)
        if clause is None or not reader.negated(clause, found.start()):
            return True
    return False


# Words that join the items of a list ("glucose, oxygen and water", "CO2 plus water").
_ITEM_JOIN = re.compile(
    r"\s*(?:,|&|\+|\band\b|\bplus\b|\bas\s+well\s+as\b|\balong\s+with\b|"
    r"\btogether\s+with\b|\bwith\b)\s*",
    re.IGNORECASE,
)
# An item that describes the one before it rather than adding one ("chloroplasts, which
# contain chlorophyll").
_DESCRIPTION = re.compile(r"^(?:which|that|where|who|whose|because|since|so|as)\b", re.I)


def _items(text: str) -> list[str]:
    return [item for item in _ITEM_JOIN.split(text) if reader.text_words(item)]


def _same_items(said: str, spelling: str) -> bool:
    """A list answer given as the same items in any order or with any joining word ("oxygen &
    glucose", "glucose and also oxygen" for "glucose and oxygen"): each of the learner's items
    is one of the answer's, once, and every one of the answer's is there. Before, only the
    spellings as written matched, and these were graded wrong."""
    wanted = _items(spelling)
    given = _items(said)
    if len(wanted) < 2 or len(given) != len(wanted) or reader.operators(spelling):
        return False
    left = list(wanted)
    for item in given:
        match = next((w for w in left if reader.same_text(_unjoined(item), w)), None)
        if match is None:
            return False
        left.remove(match)
    return not left


def _unjoined(item: str) -> str:
    """An item without the adverb that joined it ("also oxygen", "then glucose")."""
    return re.sub(r"^(?:also|then|too|both)\s+", "", item.strip(), flags=re.IGNORECASE)


def _other_numbers(said: str, spellings: Sequence[str]) -> bool:
    """The answer's spelling has numbers and the message's statement (before any reason it
    gives) has other ones: "2 5 8 11" names "2 5 8" but says the loop prints four numbers.
    Before, naming the answer's numbers inside a longer run of them was correct."""
    reason = reader.REASON.search(said)
    statement = said[: reason.start()] if reason else said
    said_numbers = reader.DIGITS.findall(statement)
    named = [spelling for spelling in spellings if _names(statement, (spelling,))]
    return bool(named) and all(reader.DIGITS.findall(s) != said_numbers for s in named)


# A bracketed aside (`reader.ASIDE`): another item ("chloroplast (mitochondria)", graded
# correct before), or a description when it opens with a word that describes or places
# ("chloroplast (in the leaf)").
_DESCRIBING = re.compile(
    r"^\s*(?:which|that|where|who|whose|because|since|so|as|in|on|at|inside|of|from|the|a|an|"
    r"i\.?e\.?|e\.?g\.?|like|such|it|they|its|their)\b",
    re.IGNORECASE,
)


def _bracketed_item(found: re.Match[str]) -> str:
    return " " if _DESCRIBING.match(found.group(1)) else f", {found.group(1)}"


def _names_more_than_the_answer(said: str, spellings: Sequence[str]) -> bool:
    """The answer named in a list with something it does not contain ("glucose and oxygen and
    water" for the two products of photosynthesis, "carbon dioxide and nitrogen" for the gas
    plants take in): more than the answer, so not the answer. Before, any message that named
    the answer was correct, and listing every candidate with "and" earned the credit that
    "or" did not. A remark ("glucose and oxygen, I think") or a description of an item is not
    an item; a spelling with operators is judged as written, elsewhere."""
    if any(reader.operators(spelling) for spelling in spellings):
        return False
    answer_items = [
        item for spelling in spellings for item in _ITEM_JOIN.split(spelling) if item.strip()
    ]
    for item in _ITEM_JOIN.split(reader.ASIDE.sub(_bracketed_item, said)):
        words = reader.text_words(item)
        if not words or _DESCRIPTION.match(item.strip()) or reader.is_remark(item):
            continue
        if not _names(item, answer_items):
            return True
    return False


def _side_by_side(said: str, spellings: Sequence[str], prompt: str | None) -> bool:
    """The answer with other bare words beside it and nothing joining them ("Sydney Canberra
    Melbourne", "went goed gone", "oxygen carbon dioxide"): candidates listed with spaces, as
    "or" or "," would list them. Before, each was graded correct as naming the answer. A word
    of the question, a joining or placing word ("in the chloroplast of a plant cell") or a
    remark makes a phrase, not a list."""
    if reader.is_remark(said) or any(reader.operators(spelling) for spelling in spellings):
        return False
    words = reader.text_words(said)
    if any(word in _FUNCTION_WORDS or word in _ARTICLES for word in words):
        return False
    answer = {w for spelling in spellings for w in reader.text_words(spelling)}
    asked = set(reader.text_words(prompt or ""))
    rest = [
        word
        for word in words
        if word not in asked and not any(reader.same_text(word, a) for a in answer)
    ]
    return bool(rest)


_ARTICLES = frozenset({"a", "an", "the", "of", "my", "its", "their", "our", "your"})


def _other_guesses(reading: reader.Reading, spellings: Sequence[str]) -> bool:
    """Several statements of which one names the answer and another is a different short
    answer ("quick? gracefully?", "fox, jumped, gracefully, fence"): guesses in one message,
    which would let a learner name every candidate at once. One answer said twice, or an
    answer with a remark ("gracefully, I'm not sure"), is not."""
    if len(reading.parts) < 2:
        return False
    return any(
        not _names(part, spellings)
        and not reader.is_remark(part)
        and len(part.split()) <= reader.MAX_TEXT_ANSWER_WORDS
        for part in reading.parts
    )


#: Words of the question a stated answer may also hold ("in the chloroplast of a plant cell"
#: for "Where in a plant cell…"); more, and the message is the question copied back with the
#: answer somewhere in it ("The quick fox jumped gracefully over the fence.").
_PROMPT_WORDS_ALLOWED = 2
_FUNCTION_WORDS = frozenset(
    "in on at of to for by with from into over under and but is are was were be it its this "
    "that these those which what where when who whom why how does do did".split()
)


def _restates_the_prompt(
    words: Sequence[str], spellings: Sequence[str], prompt: str | None
) -> bool:
    if not prompt:
        return False
    answer_words = {w for spelling in spellings for w in reader.text_words(spelling)}
    asked = set(reader.text_words(prompt)) - answer_words - _FUNCTION_WORDS
    copied = {w for w in words if w in asked}
    return len(copied) > _PROMPT_WORDS_ALLOWED


def _grade_code(
    code: str,
    tests: Sequence[tuple[str, str]],
    public: int,
    forbid: Sequence[str] = (),
    require: Sequence[str] = (),
    solution: str | None = None,
) -> Grade:
    """Code graded by running it: the exercise's tests, then further tests on inputs its
    author did not write, valued by the worked ``solution`` (`generated_tests`): code written
    for the declared tests alone (a table of their answers) does not pass."""
    digest = hashlib.sha256(" ".join(code.split()).encode("utf-8")).hexdigest()[:12]
    try:
        used = forbidden_use(code, forbid)
        missing = missing_structure(code, require) if used is None else None
    except CodeTooDeep as too_deep:  # unreadable, so unchecked: no credit, and no attempt
        return Grade(
            "error",
            f"code:{digest}",
            (f"the learner's code could not be graded: {too_deep}",),
            reason="the code could not be read",
        )
    if used is not None:
        return Grade(
            "wrong",
            f"code:{digest}",
            (
                f"the learner's code uses {used}, which the exercise does not allow (rename a "
                "variable of that name)",
            ),
            reason=f"uses {used}, which the exercise forbids",
            work=True,
        )
    if missing is not None:
        return Grade(
            "wrong",
            f"code:{digest}",
            (f"the learner's code has no {missing} doing the work, which the exercise asks for",),
            reason=f"no {missing}, which the exercise requires",
            work=True,
        )
    result = run_tests(code, (*tests, *generated_tests(solution, tests, forbid)), forbid)
    if result.error is not None:
        return Grade(
            "error",
            f"code:{digest}",
            (f"the learner's code could not be graded: {result.error}",),
            result,
            reason="the code could not be run",
        )
    passed = sum(1 for o in result.outcomes if o.passed)
    facts = [f"the learner's code passes {passed} of {len(result.outcomes)} tests"]
    # Hidden tests are never quoted: only the public examples' calls and values are shown.
    facts += [
        f"example {o.call} {'passed' if o.passed else f'failed: got {o.got}, expected {o.expect}'}"
        for o in result.outcomes[:public]
    ]
    return Grade(
        "correct" if result.passed else "wrong",
        f"code:{digest}",
        tuple(facts),
        result,
        reason=f"{passed} of {len(result.outcomes)} tests pass",
        work=True,  # code that runs is checkable working
    )


def consistent_work(reading: reader.Reading, problem: frozenset[Fraction] | None = None) -> bool:
    """Whether a message's working is checkable and consistent: at least one arithmetic step
    that evaluates, and the committed answer follows from the steps (it is a step's result, or
    two step results combined by one operation or written side by side). Cue words ("because",
    "so") are not work: counting them lets a learner raise the ceiling by guessing (Baker et
    al. 2004). With the ``problem``'s numbers known (a numeric exercise), a step counts only on
    them or on an earlier step's result: any guess has a true step that ends in it ("54 + 1 =
    55", "55 x 1 = 55" for 7 x 8), and those counted as attempts."""
    true_steps = [step for step, holds in reading.steps if holds]
    if problem is not None:
        true_steps = _on_the_problem(true_steps, problem)
    if not true_steps:
        return False
    if reading.value is None:
        return True  # working with no answer yet: a step, not a guess
    results = [v for v in (reader.read_number(s.split("=")[-1]) for s in true_steps) if v]
    value = reading.value
    if value in results:
        return True
    for i, a in enumerate(results):
        for j, b in enumerate(results):
            combined = {a + b, a - b, a * b, *([a / b] if b else [])}
            # side by side: two steps' results ("7 and 15 as 715"), not one step's twice
            if value in combined or (i != j and str(value) == f"{a}{b}"):
                return True
    return False


def _on_the_problem(steps: Sequence[str], problem: frozenset[Fraction]) -> list[str]:
    """The steps that work on the problem: an operand is one of its numbers, or the result of
    an earlier such step (the chain "7 x 4 = 28, 28 + 28 = 56")."""
    known = set(problem)
    kept = []
    for step in steps:
        left = step.rpartition("=")[0]
        if {Fraction(n) for n in _OPERAND.findall(left)} & known:
            kept.append(step)
            known |= {Fraction(n) for n in _OPERAND.findall(step)}
    return kept


# A step's numbers one by one (a reader's number would take "156/12" as the fraction 13).
_OPERAND = re.compile(r"\d+(?:\.\d+)?")


def shows_work(message: str, result: Grade | None = None) -> bool:
    """Whether a message shows how its answer was reached: working that checks out, or code
    that ran. A bare or pseudo-justified guess ("because 10") does not."""
    if result is not None:
        return result.work
    return consistent_work(reader.read_message(message))
