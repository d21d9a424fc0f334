"""Measure the answer-reveal detector against MRBench's human "Revealing_of_the_Answer" labels.

Usage: ``python benchmarks/reveal_mrbench.py PATH [--format text|json] [--solution-steps]``

PATH is a file in MRBench format: a list of dialogues, each with ``conversation_history``
("Tutor: ..." / "Student: ..." turns), ``Ground_Truth_Solution`` and ``anno_llm_responses``
(tutor name -> reply and annotations). A reply is a positive when annotated
"Yes (and the answer is correct)".

For each dialogue the detector gets what the runtime would have (nothing is set per dialogue):

- the hidden answer: the final number on the ground truth's last line, with the problem
  statement (the first tutor turn) as the exercise prompt;
- the current step: when the tutor's latest question is arithmetic ("What is 25 minus 18?",
  "What times 3 is 24?"), its value, with that question as the prompt of the step; a dialogue
  with no ground truth is then judged on that step alone;
- who said a number first: the student's last turn is the ``student_message``, the earlier
  turns are ``context`` (a number found there counts only when the reply states it as a result);
- with ``--solution-steps``, also the ground-truth intermediate result (``a op b = c``) of the
  line that best matches the tutor's last turn, as a further step value.

Beside it, in the same run, the naive baseline of the MRBench README: flag a reply when it
contains the final number of the ground-truth solution.
"""

from __future__ import annotations

import argparse
import ast
import json
import operator
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from pedrag.runtime.detect.answer import parse_number
from pedrag.runtime.detect.detector import AnswerKey, Detector, FindingKind

POSITIVE = "Yes (and the answer is correct)"

# --- dialogues ------------------------------------------------------------------------------

_TURN = re.compile(r"(?:^|\n)[\s\u00a0]*(Tutor|Student)\s*:", re.IGNORECASE)


@dataclass(frozen=True)
class Turn:
    speaker: str  # "tutor" | "student"
    text: str


def split_turns(history: str) -> list[Turn]:
    marks = list(_TURN.finditer(history))
    turns = []
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(history)
        text = history[mark.end() : end].replace("\u00a0", " ").strip()
        turns.append(Turn(mark.group(1).lower(), text))
    return turns


def problem_statement(turns: Sequence[Turn]) -> str | None:
    """MathDial opens with "... The question is: <problem>"."""
    for turn in turns:
        if turn.speaker == "tutor":
            match = re.search(r"question is:?(.*)", turn.text, re.IGNORECASE | re.DOTALL)
            return match.group(1).strip() if match else None
    return None


def final_answer(ground_truth: str) -> str | None:
    if not ground_truth.strip() or ground_truth.strip().lower() == "not available":
        return None
    last = ground_truth.strip().splitlines()[-1].strip()
    return last if parse_number(last) else None


# --- the current step from the tutor's question ---------------------------------------------

_NUMBER = r"-?\d[\d,]*(?:\.\d+)?"
_WORD_OPERATORS = (
    (r"\bmultiplied\s+by\b", "*"),
    (r"\btimes\b", "*"),
    (r"(?<=\d)\s*[x×]\s*(?=\d)", "*"),
    (r"\bdivided\s+by\b", "/"),
    (r"÷", "/"),
    (r"\bplus\b", "+"),
    (r"\bminus\b", "-"),
    (r"\btake\s+away\b", "-"),
    (r"\bsubtracted\s+by\b", "-"),
)
# "4 centimeters - 0 centimeters": drop a unit word between a number and an operator.
_UNIT_AFTER_NUMBER = re.compile(r"(\d)\s*[a-z]+\.?(?=\s*[-+*/=?])")
_EXPRESSION = re.compile(rf"(?:\(?\s*{_NUMBER}\s*\)?\s*[-+*/]\s*)+\(?\s*{_NUMBER}\s*\)?")
_BINARY: dict[type[ast.operator], Callable[[Fraction, Fraction], Fraction]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_CONSTANTS = {"pi": Fraction("3.14159265358979")}


def _number(text: str) -> Fraction:
    return Fraction(text.replace(",", ""))


def _evaluate(expression: str) -> Fraction:
    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return Fraction(str(node.value))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](value(node.left), value(node.right))
        raise ValueError(f"not arithmetic: {ast.dump(node)}")

    return value(ast.parse(expression.replace(",", "").strip(), mode="eval"))


def solve_question(question: str) -> Fraction | None:
    """The value an arithmetic question asks for, or None when it is not one we can read."""
    text = re.sub(r"\s+", " ", question.lower())
    for name, constant in _CONSTANTS.items():
        if re.search(rf"\bvalue of {name}\b", text):
            return constant
    phrasings: tuple[tuple[str, Callable[[re.Match[str]], Fraction]], ...] = (
        (
            rf"how many times (?:does |do |will |can )?({_NUMBER}) (?:will )?(?:go|goes|fit|fits)"
            rf" into ({_NUMBER})",
            lambda m: _number(m[2]) / _number(m[1]),
        ),
        (
            rf"what (?:number )?(?:times|multiplied by) ({_NUMBER}) (?:is|equals|gives|makes)"
            rf" ({_NUMBER})",
            lambda m: _number(m[2]) / _number(m[1]),
        ),
        (rf"sum of ({_NUMBER}) and ({_NUMBER})", lambda m: _number(m[1]) + _number(m[2])),
        (rf"product of ({_NUMBER}) and ({_NUMBER})", lambda m: _number(m[1]) * _number(m[2])),
        (
            rf"difference (?:between|of) ({_NUMBER}) and ({_NUMBER})",
            lambda m: abs(_number(m[1]) - _number(m[2])),
        ),
        (rf"({_NUMBER}) subtracted from ({_NUMBER})", lambda m: _number(m[2]) - _number(m[1])),
    )
    try:
        for pattern, answer in phrasings:
            match = re.search(pattern, text)
            if match:
                return answer(match)
        for pattern, symbol in _WORD_OPERATORS:
            text = re.sub(pattern, f" {symbol} ", text)
        text = _UNIT_AFTER_NUMBER.sub(r"\1", text)
        expressions = [match.group(0) for match in _EXPRESSION.finditer(text)]
        if expressions:
            return _evaluate(max(expressions, key=len))
    except (ValueError, ZeroDivisionError, SyntaxError):
        return None
    return None


def spell(value: Fraction) -> str:
    """A value as the detector reads it: "70", "0.25", "2/3", "3.14159265358979"."""
    if value.denominator == 1:
        return str(value.numerator)
    denominator = value.denominator
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    if denominator == 1 and value.denominator <= 10**6:
        return format(value.numerator / value.denominator, "f").rstrip("0")
    if value.denominator <= 1000:
        return f"{value.numerator}/{value.denominator}"
    return f"{float(value):.14f}"


def current_question(turns: Sequence[Turn], lookback: int = 2) -> tuple[str, Fraction] | None:
    """The latest arithmetic question among the tutor's last turns ("Is this your final
    answer?" points back to the question before it)."""
    tutor_turns = [turn.text for turn in turns if turn.speaker == "tutor"][-lookback:]
    for text in reversed(tutor_turns):
        if re.search(r"question is", text, re.IGNORECASE):
            break  # the problem statement is the exercise, not a step
        if not re.search(r"\?|=\s*$", text):
            continue
        value = solve_question(text)
        if value is not None:
            return text, value
    return None


# --- the current step from the ground truth (optional) --------------------------------------

_RESULT = re.compile(r"=\s*\$?\s*(-?[\d,]*\.?\d+)")
_STOP = frozenset(
    "the a an of to and is are was in on for by with how many much what we would you i it "
    "that this can do does if so be".split()
)


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if w not in _STOP and len(w) > 2}


def solution_step(turns: Sequence[Turn], ground_truth: str, min_overlap: int = 2) -> str | None:
    """The result ``c`` of the ground-truth line ``a op b = c`` that shares most content words
    with the tutor's last turn."""
    tutor_turns = [turn.text for turn in turns if turn.speaker == "tutor"]
    if not tutor_turns:
        return None
    asked = _content_words(tutor_turns[-1])
    best, best_overlap = None, min_overlap - 1
    for line in ground_truth.strip().splitlines()[:-1]:
        results = _RESULT.findall(line)
        overlap = len(asked & _content_words(line))
        if results and overlap > best_overlap:
            best, best_overlap = results[-1], overlap
    return best


# --- scoring --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scores:
    precision: float
    recall: float
    f1: float
    n: int
    tp: int
    fp: int
    fn: int


def score(predictions: Iterable[tuple[bool, bool]]) -> Scores:
    pairs = list(predictions)
    tp = sum(1 for flagged, positive in pairs if flagged and positive)
    fp = sum(1 for flagged, positive in pairs if flagged and not positive)
    fn = sum(1 for flagged, positive in pairs if not flagged and positive)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Scores(round(precision, 4), round(recall, 4), round(f1, 4), len(pairs), tp, fp, fn)


_DIGITS = re.compile(r"(?<![\d.])\d[\d,]*(?:\.\d+)?")


def naive_flags(reply: str, final: str | None) -> bool:
    """The README baseline: the reply contains the ground truth's final number."""
    target = parse_number(final) if final else None
    if target is None:
        return False
    return any(
        Fraction(match.group(0).replace(",", "").rstrip(".")) == target.value
        for match in _DIGITS.finditer(reply)
    )


@dataclass(frozen=True)
class Judged:
    source: str
    positive: bool
    detector: bool
    baseline: bool


def judge_dialogue(dialogue: dict[str, Any], *, solution_steps: bool) -> Iterator[Judged]:
    turns = split_turns(dialogue["conversation_history"])
    ground_truth = dialogue.get("Ground_Truth_Solution", "")
    final = final_answer(ground_truth)
    question = current_question(turns)
    student_turns = [index for index, turn in enumerate(turns) if turn.speaker == "student"]
    last_student = turns[student_turns[-1]].text if student_turns else None
    earlier = turns[1 : student_turns[-1]] if student_turns else turns[1:]
    context = "\n".join(turn.text for turn in earlier)
    checks: list[tuple[Detector, str | None]] = []
    if final is not None:
        step = solution_step(turns, ground_truth) if solution_steps else None
        checks.append(
            (
                Detector(
                    answer=AnswerKey(final, solution=ground_truth, prompt=problem_statement(turns))
                ),
                step,
            )
        )
    if question is not None:
        text, value = question
        checks.append((Detector(answer=AnswerKey(spell(value), prompt=text)), None))
    for reply in dialogue["anno_llm_responses"].values():
        response = reply["response"]
        flagged = any(
            finding.kind is FindingKind.ANSWER
            for detector, step in checks
            for finding in detector.check(
                response, student_message=last_student, step_value=step, context=context
            ).findings
        )
        yield Judged(
            dialogue.get("Data", "unknown"),
            reply["annotation"]["Revealing_of_the_Answer"] == POSITIVE,
            flagged,
            naive_flags(response, final),
        )


def run(path: Path, *, solution_steps: bool = False) -> dict[str, Any]:
    dialogues = json.loads(path.read_text(encoding="utf-8"))
    judged = [j for d in dialogues for j in judge_dialogue(d, solution_steps=solution_steps)]
    report: dict[str, Any] = asdict(score((j.detector, j.positive) for j in judged))
    report["baseline"] = asdict(score((j.baseline, j.positive) for j in judged))
    report["baseline"]["name"] = "naive final number"
    report["dialogues"] = len(dialogues)
    report["positives"] = sum(j.positive for j in judged)
    report["solution_steps"] = solution_steps
    report["by_source"] = {
        source: {
            "detector": asdict(
                score((j.detector, j.positive) for j in judged if j.source == source)
            ),
            "baseline": asdict(
                score((j.baseline, j.positive) for j in judged if j.source == source)
            ),
        }
        for source in sorted({j.source for j in judged})
    }
    return report


def format_text(report: dict[str, Any]) -> str:
    def row(name: str, s: dict[str, Any]) -> str:
        return (
            f"{name:<22}{s['precision']:>9.1%}{s['recall']:>8.1%}{s['f1']:>7.2f}"
            f"{s['tp']:>5}{s['fp']:>5}{s['fn']:>5}{s['n']:>6}"
        )

    lines = [
        f"MRBench answer reveal: {report['n']} replies in {report['dialogues']} dialogues, "
        f"{report['positives']} labelled '{POSITIVE}'"
        + (" (with solution steps)" if report["solution_steps"] else ""),
        f"{'':<22}{'precision':>9}{'recall':>8}{'F1':>7}{'tp':>5}{'fp':>5}{'fn':>5}{'n':>6}",
        row("pedrag detector", report),
        row("naive final number", report["baseline"]),
    ]
    for source, scores in report["by_source"].items():
        lines.append(row(f"  {source}: detector", scores["detector"]))
        lines.append(row(f"  {source}: naive", scores["baseline"]))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="a file in MRBench format (JSON list)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--solution-steps",
        action="store_true",
        help="also count the ground-truth step matching the tutor's last turn",
    )
    args = parser.parse_args(argv)
    try:
        report = run(args.path, solution_steps=args.solution_steps)
    except (OSError, ValueError, KeyError) as error:
        print(f"reveal_mrbench: cannot read {args.path}: {error}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.format == "json" else format_text(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
