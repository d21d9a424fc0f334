"""An independent reading of how much help a tutor reply gives: text features -> a rung.

Evaluation, per turn. Takes a reply, the exercise it is about and the learner's message; gives
:class:`ReplyFeatures` (does the reply state the answer or the solution, show code, leave
blanks in code, work a different example, give a procedure, ask a question, point to a concept,
restate the problem?) and the hint-ladder rung those features amount to (DESIGN, hint ladder:
H0 acknowledge .. H7 full solution).

Why a module of its own, written from the ladder's definitions alone: the evaluator must not
judge pedrag by pedrag's own wording. Nothing here reads the theories' action templates, the
generator's prompts or the runtime's detectors (tests/evaluate/test_learners.py pins the
imports and the import-linter contract), so a tutor cannot score well by reproducing its templates, and a reveal the runtime's
detector misses is not missed here for the same reason. The cue lists are deliberately plain
English phrases a reader would use to describe each rung; they are the rubric, not a model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pedrag.evaluate.answer_check import mentions_answer, numbers, shows_solution
from pedrag.evaluate.records import ExerciseCase

FULL_SOLUTION = 7
PSEUDOCODE = 6
WORKED_EXAMPLE = 5
PROCEDURE = 4
QUESTION = 3
CONCEPT = 2
RESTATEMENT = 1
ACKNOWLEDGEMENT = 0
LADDER: dict[int, str] = {
    ACKNOWLEDGEMENT: "acknowledge or encourage, no content",
    RESTATEMENT: "restate the problem or invite the learner to say more",
    CONCEPT: "point to the concept or fact that matters",
    QUESTION: "ask a leading question about the next step",
    PROCEDURE: "describe the procedure or method in words",
    WORKED_EXAMPLE: "work an example on a different problem",
    PSEUDOCODE: "give pseudocode or code with blanks, or most of the solution",
    FULL_SOLUTION: "state the answer or the full solution",
}
"""The hint ladder as this rubric reads it (DESIGN, hint ladder H0-H7), in its own words."""

_WORD = re.compile(r"[a-z0-9]+")
_FENCE = re.compile(r"```")
_CODE_LINE = re.compile(
    r"^\s*(def |class |for .+:|while .+:|if .+:|return\b|print\(|import |\w+\s*(\+|-)?=[^=])",
    re.MULTILINE,
)
_BLANK = re.compile(r"_{3,}|\.\.\.|…|\?\?\?|<[a-z ]+>")
_EXAMPLE = re.compile(
    r"\b(for example|for instance|e\.g\.|suppose|imagine|let's say|say you had|say we had"
    r"|similar (problem|example|one|case)|smaller (problem|example|case|number)"
    r"|parallel (problem|example)|worked example|another example|solved step by step"
    r"|try it with|take the case)\b",
    re.IGNORECASE,
)
# A worked example arrives at a result: numbers of its own, an equation, or a conclusion in
# words ("so the header is ...", "'Box' is singular, so: ..."), as examples outside arithmetic do.
_CONCLUDES = re.compile(
    r"\b(so|therefore|thus|which gives|that gives|we get|the result is|the answer (there|here)"
    r" is)\b",
    re.IGNORECASE,
)
_SEQUENCE = re.compile(
    r"\b(first(ly)?|then|next|after that|afterwards|finally|step \d|second(ly)?|lastly)\b"
    r"|^\s*\d[.)]\s",
    re.IGNORECASE | re.MULTILINE,
)
_METHOD = re.compile(
    r"\b(multiply|add( up)?|subtract|divide|split|break (it|this|the \w+) (up|down|into)"
    r"|carry|count|keep a running|loop over|go through each|find the subject|match the verb"
    r"|work out|combine|group|line up|check each)\b",
    re.IGNORECASE,
)
# A told step: a statement that opens with a method verb ("Split 47 into 40 and 7.").
_IMPERATIVE_METHOD = re.compile(
    r"(?:^|[.:!]\s+)(now )?(multiply|add|subtract|divide|split|break|carry|count|line up"
    r"|combine|group|keep a running|loop over|start (with|by))\b"
    r"|\bwe (should|need to|can|have to|must) (divide|multiply|add|subtract|find|figure out"
    r"|calculate|work out|use)\b|\bnext (calculation|step) (would be|is)\b",
    re.IGNORECASE | re.MULTILINE,
)
_CONCEPT = re.compile(
    r"\b(remember|recall|think about|the idea|concept|definition|the rule|means that"
    r"|look (again )?at|notice|key (idea|point|word|term)|what do you know about"
    r"|common (trap|mistake|error)|a trap|watch out for|be careful"
    r"|(mistake|error) (in|with) (your|the|one)|let'?s (re-?evaluate|re-?examine|recheck"
    r"|re-?calculate|reconsider|consider|look)|take a step back|think of"
    r"|you (will |'ll )?need|the key (is|here)|hint|focus on)\b",
    re.IGNORECASE,
)
# H3 is a leading question *about the next step* (DESIGN, hint ladder); an open invitation
# ("tell me more", "what do you think?") asks the learner to talk, not where to go: H1.
_QUESTION = re.compile(r"[^.!?\n]*\?")
_LEADING = re.compile(
    r"\b(next|step|first|start|begin|which (part|word|number|operation|one|gas|verb|value)"
    r"|what would (you|happen)|how would you|what do you get|what happens|what if|try"
    r"|what does (that|this) give|could you (do|try|check|find)|do first"
    r"|how many|how much|what is \d|multiply|add|subtract|divide|carry|loop|range|subject"
    r"|verb|equal|total)\b",
    re.IGNORECASE,
)
# An invitation to choose or to talk is H1 even when it names a step ("where would you like to
# start?"): it asks the learner where to go instead of pointing there.
# Asking for a self-explanation or a confidence rating ("in your own words", "how sure are
# you", "what could you check") also invites the learner to talk: it points at no step.
_INVITATION = re.compile(
    r"\b(would you like|do you want|tell me more|what do you think|in your own words"
    r"|how (confident|sure) are you|what could you check|what makes you think)\b",
    re.IGNORECASE,
)
RESTATED = 0.6  # share of the prompt's content words a restatement repeats
_STOPWORDS = frozenset(
    "a an the is are was were of in on to for and or what which this that it do does how "
    "you your i me my be with as at by from".split()
)


@dataclass(frozen=True)
class ReplyFeatures:
    """What a reply does, read from its text."""

    states_answer: bool = False
    states_solution: bool = False
    has_code: bool = False
    code_blanks: bool = False
    worked_example: bool = False
    procedure: bool = False
    leading_question: bool = False
    points_to_concept: bool = False
    open_question: bool = False
    restates_problem: bool = False

    @property
    def rung(self) -> int:
        """The highest rung the features reach."""
        if self.states_answer or self.states_solution:
            return FULL_SOLUTION
        if self.has_code:
            return PSEUDOCODE
        if self.worked_example:
            return WORKED_EXAMPLE
        if self.procedure:
            return PROCEDURE
        if self.leading_question:
            return QUESTION
        if self.points_to_concept:
            return CONCEPT
        if self.restates_problem or self.open_question:
            return RESTATEMENT
        return ACKNOWLEDGEMENT

    def names(self) -> list[str]:
        return [name for name, value in vars(self).items() if value]


def read_reply(reply: str, exercise: ExerciseCase, student: str = "") -> ReplyFeatures:
    """The features of ``reply``. Repeating an answer the learner already gave is a
    confirmation, not a reveal."""
    confirmed = mentions_answer(student, exercise)
    states_answer = not confirmed and mentions_answer(reply, exercise)
    code = bool(_FENCE.search(reply)) or len(_CODE_LINE.findall(reply)) >= 2
    questions = _QUESTION.findall(reply)
    statements = _QUESTION.sub(" ", reply)  # a procedure is told, not asked
    prompt_numbers = numbers(exercise.prompt)
    new_numbers = numbers(reply) - prompt_numbers
    return ReplyFeatures(
        states_answer=states_answer,
        states_solution=not confirmed and shows_solution(reply, exercise),
        has_code=code,
        code_blanks=code and bool(_BLANK.search(reply)),
        worked_example=bool(_EXAMPLE.search(reply))
        and (bool(new_numbers) or "=" in reply or bool(_CONCLUDES.search(reply))),
        procedure=len(_SEQUENCE.findall(statements)) >= 2
        or (bool(_SEQUENCE.search(statements)) and bool(_METHOD.search(statements)))
        or bool(_IMPERATIVE_METHOD.search(statements)),
        # Asking the exercise's own question again is a restatement (H1), not a lead.
        leading_question=any(
            _LEADING.search(question)
            and not _INVITATION.search(question)
            and _overlap(question, exercise.prompt) < RESTATED
            for question in questions
        ),
        points_to_concept=bool(_CONCEPT.search(reply)),
        open_question=bool(questions),
        restates_problem=_overlap(reply, exercise.prompt) >= RESTATED,
    )


def judge_rung(reply: str, exercise: ExerciseCase, student: str = "") -> int:
    return read_reply(reply, exercise, student).rung


def _normal(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _overlap(reply: str, prompt: str) -> float:
    wanted = {w for w in _WORD.findall(prompt.lower()) if w not in _STOPWORDS}
    if not wanted:
        return 0.0
    have = set(_WORD.findall(reply.lower()))
    return len(wanted & have) / len(wanted)
