"""The grader and its code runner: one committed candidate, code graded by running it in a
sandbox that fails closed."""

from __future__ import annotations

import re

import pytest

from pedrag.runtime.detect.detector import AnswerKey
from pedrag.runtime.learning.code_runner import run_tests
from pedrag.runtime.learning.grader import GradingRules, grade, grade_exercise, shows_work
from pedrag.runtime.learning.mastery import Tracing, update
from tests.runtime.tutor_fixtures import shipped

MULT = AnswerKey(answer="56", accept=("fifty-six",), prompt="What is 7 times 8?")
ORGANELLE = AnswerKey(answer="chloroplast", prompt="Where does photosynthesis take place?")
TESTS = (("total([1, 2, 3])", "6"), ("total([])", "0"))


@pytest.mark.parametrize(
    ("message", "verdict", "candidate"),
    [
        ("I think it's 56.", "correct", "56"),
        ("fifty-six", "correct", "fifty-six"),
        ("I think it is 54", "wrong", "54"),
        ("is it 7 times 8?", "none", None),  # only givens: no candidate
        ("is it one of 50, 51, 52?", "none", None),  # a list commits to nothing
        ("between 55 and 57", "none", None),
        ("ok, let me think", "none", None),
    ],
)
def test_a_numeric_answer_is_graded_on_the_one_candidate_it_commits_to(
    message: str, verdict: str, candidate: str | None
) -> None:
    result = grade(message, MULT)
    assert (result.verdict, result.candidate) == (verdict, candidate)


def test_a_text_answer_is_graded_only_on_a_short_statement() -> None:
    assert grade("the chloroplast", ORGANELLE).verdict == "correct"
    assert grade("mitochondria", ORGANELLE, intent="attempt").verdict == "wrong"
    assert grade("is it the nucleus?", ORGANELLE, intent="attempt").verdict == "wrong"
    assert grade("what is the nucleus?", ORGANELLE, intent="question").verdict == "none"
    assert grade("because 38+47 is 85", ORGANELLE, intent="attempt").verdict == "none"
    assert (
        grade("I really have no idea what this is about", ORGANELLE, intent="attempt").verdict
        == "none"
    )


ADVERB = AnswerKey(
    answer="gracefully",
    prompt="Which word is the adverb in this sentence: 'The quick fox jumped gracefully over "
    "the fence.'?",
)


@pytest.mark.parametrize(
    "message",
    [
        "quick? gracefully?",
        "is it quick? is it gracefully?",
        "fox, jumped, gracefully, fence",
        "quick. gracefully. fence.",
        "maybe quick? no, gracefully",
        "The quick fox jumped gracefully over the fence.",  # the question's sentence back
    ],
)
def test_naming_every_candidate_at_once_is_not_a_correct_answer(message: str) -> None:
    assert grade(message, ADVERB, intent="attempt").verdict == "none"


@pytest.mark.parametrize(
    ("message", "candidate"),
    [
        ("gracefully? I think it's gracefully", "gracefully"),  # one answer said twice
        ("gracefully, I am not sure", "gracefully"),  # an answer and a remark
        ("I think it is gracefully", "gracefully"),
    ],
)
def test_one_answer_with_remarks_is_correct_and_echoed_alone(message: str, candidate: str) -> None:
    result = grade(message, ADVERB, intent="attempt")
    assert (result.verdict, result.candidate) == ("correct", candidate)


def test_an_answer_may_hold_a_few_of_the_questions_words() -> None:
    cell = AnswerKey(
        answer="chloroplast",
        prompt="In which part of a plant cell does photosynthesis take place?",
    )
    assert grade("in the chloroplast of a plant cell", cell).verdict == "correct"
    assert grade("mitochondria? chloroplast?", cell).verdict == "none"


def test_the_grader_facts_never_carry_the_hidden_answer_of_a_wrong_attempt() -> None:
    assert all("56" not in fact for fact in grade("I think it is 54", MULT).facts)


def test_work_shows_only_when_its_steps_evaluate_and_lead_to_the_answer() -> None:
    assert not shows_work("I think it's 3") and not shows_work("maybe 5?")
    # cue words are not work, nor is a step that does not evaluate
    assert not shows_work("because 10") and not shows_work("because 11, since then so")
    assert not shows_work("7*8=54") and not shows_work("I added 7 eight times and got 54")
    # a true step unrelated to the answer is pseudo-justification
    assert not shows_work("1+1=2, so 10")
    assert shows_work("7 x 4 = 28, 28 + 28 = 56") and shows_work("30+40=70 and 8+7=15, so 85")
    assert shows_work("3+4=7 and 8+7=15, so 715")  # a misconception, worked consistently


def test_work_on_an_exercise_starts_from_its_numbers() -> None:
    exercises = {e.id: e for c in shipped().curricula.values() for e in c.model.exercises}

    def work(exercise: str, message: str) -> bool:
        return grade_exercise(message, exercises[exercise]).work

    # a true step unrelated to the problem, or one result written twice, is no working
    assert not work("mult_7x8", "54 + 1 = 55") and not work("mult_7x8", "55 x 1 = 55")
    assert not work("mult_7x8", "8 - 3 = 5 so 55") and not work(
        "long_mult_23x47", "1000 + 81 = 1081"
    )
    # the givens, their place-value parts and digits, and a chain of results are
    assert work("add_38_47", "30+40=70 and 8+7=15, so 85") and work(
        "add_38_47", "3+4=7 and 8+7=15, so 715"
    )
    assert work("long_mult_23x47", "23 x 40 = 820, 23 x 7 = 161, 820 + 161 = 981")
    assert work("mult_7x8", "7 x 4 = 28, 28 + 28 = 56") and work("div_156_12", "156/12 = 13")


def test_code_is_graded_by_running_its_tests() -> None:
    good = "def total(xs):\n    r = 0\n    for x in xs:\n        r += x\n    return r"
    assert run_tests(good, TESTS).passed
    wrong = run_tests("def total(xs):\n    return 1", TESTS)
    assert wrong.error is None and not wrong.passed
    assert [o.passed for o in wrong.outcomes] == [False, False]
    result = grade(f"```python\n{good}\n```", MULT, tests=TESTS)
    assert result.verdict == "correct" and "passes 2 of 2 tests" in result.facts[0]


@pytest.mark.parametrize(
    "code",
    [
        "import socket\ndef total(xs): return 6",
        "open('leak.txt', 'w').write('x')\ndef total(xs): return 6",
        "import os\nos.system('true')\ndef total(xs): return 6",
        "import subprocess\ndef total(xs): return 6",
        "def total(xs):\n    while True:\n        pass",
        "big = [0] * 10**10\ndef total(xs): return 6",
        "raise SystemExit(3)",
    ],
)
def test_code_that_reaches_outside_or_runs_away_fails_closed(code: str) -> None:
    result = run_tests(code, TESTS)
    assert not result.passed
    verdict = grade(f"```python\n{code}\n```", MULT, tests=TESTS).verdict
    assert verdict in ("error", "wrong")


def test_code_that_floods_its_output_costs_the_grader_no_memory() -> None:
    """stdout is not the channel: before, it was captured, and a loop of prints put 2 GB in the
    grading (tutor, service) process within the time limit."""
    import resource

    flood = "import sys\ndef total(xs): return 6\nwhile True:\n    sys.stdout.write('x' * 10**6)"
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    result = run_tests(flood, TESTS)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert not result.passed and result.error is not None
    assert grown < 200 * 1024, f"the grading process grew by {grown // 1024} MB"


def test_a_true_is_not_a_one() -> None:
    assert not run_tests("def f(): return True", (("f()", "1"),)).passed
    assert run_tests("def f(): return 2.0", (("f()", "2"),)).passed


def test_knowledge_tracing_rises_on_correct_and_falls_on_wrong_answers() -> None:
    tracing = Tracing(prior=0.3, learn=0.2, slip=0.1, guess=0.2)
    up = update(0.3, True, tracing)
    down = update(0.3, False, tracing)
    assert down < 0.3 < up < 1
    p = 0.3
    for _ in range(3):
        p = update(p, True, tracing)
    assert p > 0.95


def test_an_answer_with_its_working_shown_is_graded_on_the_result() -> None:
    # The steps of the learner's own working are not rival candidates.
    key = AnswerKey(answer="85", prompt="What is 38 + 47?")
    right = grade("I added 38 and 47: 30+40=70 and 8+7=15, so 85", key)
    assert (right.verdict, right.candidate) == ("correct", "85")
    wrong = grade("30+40=70 and 8+7=14, so 84", key)
    assert (wrong.verdict, wrong.candidate) == ("wrong", "84")
    assert grade("is it one of 80, 81, 82, 83, 84, 85?", key).verdict == "none"


def test_a_step_of_the_worked_solution_is_not_graded_wrong() -> None:
    key = AnswerKey("56", ("fifty-six",), "7 x 8 = (7 x 4) x 2 = 28 x 2 = 56", "What is 7 times 8?")
    assert grade("Okay, so 7 times 4 first?", key).verdict == "none"
    assert grade("that's 28, then I double it", key).verdict == "none"
    assert grade("I think it is 54", key).verdict == "wrong"
    assert grade("so it's 56", key).verdict == "correct"


# -- code the learner cannot forge (issue 24) ----------------------------------------------

ATTACKS = {
    "rigged __eq__": (
        "class Always(int):\n"
        "    def __eq__(self, other): return True\n"
        "    __hash__ = int.__hash__\n"
        "def total(xs): return Always(0)"
    ),
    "rigged list": (
        "class Always(list):\n"
        "    def __eq__(self, other): return True\n"
        "def total(xs): return Always()"
    ),
    "printed report": (
        "import json, statistics\n"  # importing from the standard library works
        "print(json.dumps({'results': [{'call': 'total([1, 2, 3])', 'passed': True, "
        "'got': '6', 'expect': '6'}, {'call': 'total([])', 'passed': True, 'got': '0', "
        "'expect': '0'}]}))\n"
        "def total(xs): return -1"
    ),
    "listed descriptors": (
        "import os\nfds = os.listdir('/proc/self/fd')\ndef total(xs): return -1"
    ),
    "report written to every descriptor": (
        "import os\n"
        "for fd in range(3, 256):\n"
        "    try: os.write(fd, b\"{'results': [{'value': '6'}, {'value': '0'}]}\")\n"
        "    except OSError: pass\n"
        "def total(xs): return -1"
    ),
    "report file rewritten": ("open('report', 'w').write('x')\ndef total(xs): return -1"),
    "harness frame": (
        "try:\n    raise ValueError\nexcept ValueError as e:\n"
        "    f = e.__traceback__.tb_frame.f_back\n"
        "def total(xs): return -1"
    ),
    "frame walk": ("import sys\nharness = sys._getframe(0).f_back\ndef total(xs): return -1"),
    "report sent through the harness's frame": (
        "import os, sys\n"
        "try:\n    frame = sys._getframe(1)\nexcept ValueError:\n    frame = None\n"
        "while frame is not None and 'send' not in frame.f_locals:\n    frame = frame.f_back\n"
        "if frame is not None:\n"
        "    frame.f_locals['send']({'results': [{'value': '6'}, {'value': '0'}]})\n"
        "    os._exit(0)\n"
        "def total(xs): return -1"
    ),
    "harness frame from a generator": (
        "def walk():\n    yield\n"
        "g = walk()\nnext(g)\nharness = g.gi_frame.f_back\ndef total(xs): return -1"
    ),
    "code swapped": (
        "def total(xs): return -1\ndef right(xs): return sum(xs)\ntotal.__code__ = right.__code__"
    ),
    "rebound builtins": (
        "import builtins\nbuiltins.type = lambda x: int\nbuiltins.repr = lambda x: '6'\n"
        "def total(xs): return -1"
    ),
    "exit before the report": "import os\ndef total(xs): return os._exit(0)",
}


# What the standard library needs frames or class attributes for (issue 24's leftover: the
# sandbox refused `sys._getframe`, so `namedtuple()` failed): each is graded on its result.
LIBRARY_USES = {
    "collections.namedtuple": (
        "from collections import namedtuple\n"
        "Acc = namedtuple('Acc', 'sum count')\n"
        "def total(xs):\n    acc = Acc(0, 0)\n    for x in xs:\n"
        "        acc = acc._replace(sum=acc.sum + x, count=acc.count + 1)\n    return acc.sum"
    ),
    "typing.NamedTuple class": (
        "from typing import NamedTuple\n"
        "class Acc(NamedTuple):\n    sum: int = 0\n"
        "def total(xs):\n    acc = Acc()\n    for x in xs:\n        acc = Acc(acc.sum + x)\n"
        "    return acc.sum"
    ),
    "typing.NamedTuple call and TypeVar": (
        "from typing import NamedTuple, TypeVar\nT = TypeVar('T')\n"
        "Acc = NamedTuple('Acc', [('sum', int)])\n"
        "def total(xs):\n    return Acc(sum(xs)).sum"
    ),
    "enum call": (
        "from enum import Enum\nOp = Enum('Op', 'ADD SUB')\n"
        "def total(xs, op=Op.ADD):\n    return sum(xs) if op is Op.ADD else -sum(xs)"
    ),
    "dataclass": (
        "from dataclasses import dataclass\n"
        "@dataclass\nclass Acc:\n    sum: int = 0\n"
        "def total(xs):\n    acc = Acc()\n    for x in xs:\n        acc.sum += x\n    return acc.sum"
    ),
}


@pytest.mark.parametrize("name", sorted(LIBRARY_USES))
def test_code_using_the_standard_librarys_class_builders_is_graded(name: str) -> None:
    result = run_tests(LIBRARY_USES[name], TESTS)
    assert result.error is None and result.passed, (name, result)


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_code_cannot_forge_its_grade(name: str) -> None:
    result = run_tests(ATTACKS[name], TESTS)
    assert not result.passed, name
    verdict = grade(f"```python\n{ATTACKS[name]}\n```", MULT, tests=TESTS).verdict
    assert verdict in ("wrong", "error"), name


def test_feedback_on_code_never_quotes_a_hidden_test() -> None:
    hidden = (("total([1, 2, 3])", "6"), ("total([40, 2])", "42"), ("total([-7])", "-7"))
    wrong = "```python\ndef total(xs):\n    return len(xs)\n```"
    for public in (0, 1):
        result = grade(wrong, MULT, tests=hidden, rules=GradingRules(public_tests=public))
        assert result.verdict == "wrong"
        said = " ".join((*result.facts, result.reason))
        assert "passes 0 of 3 tests" in said or "passes 1 of 3 tests" in said
        for call, expect in hidden[public:]:
            assert call not in said and f"expected {expect}" not in said
        if public:
            assert "total([1, 2, 3])" in said  # the public example may be shown


# -- the shipped "choose the correct verb (a / b)" exercises -------------------------------


def _two_option_exercises() -> list[tuple[str, object, str, str]]:
    """(id, exercise, right option, wrong option) of every shipped exercise whose prompt
    offers two options "(a / b)"; the right one is the option the answer sentence uses."""
    found = []
    for curriculum in shipped().curricula.values():
        for exercise in curriculum.model.exercises:
            offered = re.search(r"\(([\w']+) / ([\w']+)\)", exercise.prompt)
            if offered is None:
                continue
            options = offered.groups()
            used = [o for o in options if re.search(rf"\b{o}\b", exercise.answer, re.I)]
            assert len(used) == 1, exercise.id
            (right,) = used
            (wrong,) = [o for o in options if o != right]
            found.append((exercise.id, exercise, right, wrong))
    return found


TWO_OPTIONS = _two_option_exercises()


@pytest.mark.parametrize(
    "exercise, right, wrong", [row[1:] for row in TWO_OPTIONS], ids=[row[0] for row in TWO_OPTIONS]
)
def test_choosing_an_option_is_graded_on_that_option_alone(
    exercise: object, right: str, wrong: str
) -> None:
    # The learner answers with the option, in a sentence, or with the whole sentence; the
    # wrong option is wrong however close its spelling ("know" for "knows" is no typo).
    answer = exercise.answer  # type: ignore[attr-defined]
    wrong_sentence = re.sub(rf"\b{right}\b", wrong, answer, count=1, flags=re.I)
    for message in (right, f"I think {right}", f"{right.capitalize()}.", answer):
        assert grade_exercise(message, exercise).verdict == "correct", message
    for message in (wrong, f"I think {wrong}", wrong_sentence):
        assert grade_exercise(message, exercise).verdict == "wrong", message


def test_a_keys_numbers_are_read_once_per_key_value_and_each_key_keeps_its_own() -> None:
    """The grader reads a numeric key's givens once per exercise (cached by the key's value):
    a key that differs only in its prompt must not be graded with the other's givens."""
    from pedrag.runtime.learning.grader import _number_targets

    plain = AnswerKey("56", prompt="What is 7 times 8?")
    restating = AnswerKey("56", prompt="Is 56 the product of 7 and 8?")
    assert _number_targets(AnswerKey("56", prompt="What is 7 times 8?"), None) is (
        _number_targets(plain, None)
    )
    assert _number_targets(restating, None).restated == ("56",)
    assert _number_targets(plain, None).restated == ()
    assert _number_targets(AnswerKey("Paris"), None) is None
    # each key is graded with its own prompt's numbers, whichever was read first
    for _ in range(2):
        assert grade("it's 56", plain).verdict == "correct"
        assert grade("it's 56", restating).verdict == "none"  # copying the prompt's 56 out
        assert grade("54", plain).verdict == "wrong"
