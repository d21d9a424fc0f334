"""An exercise's teaching material, what the tutor has already said, and the material check.

Runtime, generation input. Takes a curriculum exercise (its per-step hints, worked example on a
parallel problem, parallel item, common misconceptions and partly finished outline) and the
session's record of what the tutor said (``said``: hints given so far, fingerprints of recent
replies, the previous reply); gives this turn's material for the actor — the next hint in
order, the worked example, ... — and, after the reply, the updated record. The record lives in
the session state (``state.extra[SAID]``), never in the backend: a tutor process serves many
sessions.

The material check (:func:`material_diagnostics`) runs the answer-reveal detector over every
piece of material at load time (`TheorySet` loading a curriculum) and in `pedrag check`: a hint
or worked example that states the exercise's answer is an error at its file:line:column, because
the runtime would otherwise hand the answer out on the hint ladder's lower rungs.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pedrag.kernel.code_steps import Step, has_step, solution_step, steps
from pedrag.kernel.misconceptions import Signals, first_signalled
from pedrag.kernel.wording import MATERIAL_PLACEHOLDERS
from pedrag.runtime.detect.folding import stem
from pedrag.runtime.learning.working import asked_values, first_slip, step_values

if TYPE_CHECKING:
    from pedrag.compiler.check_cache import Memo
    from pedrag.dsl.diagnostics import Diagnostic

SAID = "said"  # state.extra key: what the tutor has said in this session
RECENT = 200  # replies remembered (as fingerprints): no reply is said twice in a session
# Material the learner has either had or not; a wording that carries one not yet given comes
# first (the hint is counted separately: the pathway is walked in order).
SHOWN_ONCE = (
    "example",
    "parallel",
    "outline",
    "misconception",
    "restatement",
    "concept",
    "solution",
)
# Shown-once material a learner recognises word for word when it comes again (a whole worked
# example, a partly worked outline): once given, a wording that carries it again is the last
# resort of its action, after every other wording (said or restated). Shorter material (the
# concept, a misconception, the restatement) is rephrased around by the wordings themselves.
SHOWN_IN_FULL = ("example", "outline")
CHECK = "material-reveals-answer"
# What the learner's message shows or asks this turn: always new.
ASKED = ("diagnosis", "slip", "unexplained", "elsewhere")
# Shown-once material a learner's request (the classified `request`, docs/runtime.md "The
# learner's requests") names: asked for this turn, it is new again, as the learner wants it
# ("can you show me an example?" after the worked example gets the worked example, not
# another question).
REQUESTED = {"example": "example"}
# The placeholders a wording may use, each filled from the material of the turn.
PLACEHOLDERS = MATERIAL_PLACEHOLDERS
PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


@dataclass(frozen=True)
class Material:
    """One exercise's teaching material, as the curriculum declares it."""

    prompt: str = ""
    hints: tuple[str, ...] = ()
    example: str = ""  # the worked example, problem and steps in one paragraph
    parallel: str = ""  # the parallel item's prompt
    misconceptions: tuple[str, ...] = ()
    outline: str = ""
    solution: str = ""
    restatement: str = ""  # the question in other words (H1)
    concept: str = ""  # the goal's concept explanation (H2)
    signals: tuple[Signals, ...] = ()  # what signals each misconception, in the same order
    # The concept explanations of the other goals of the same domain: a question about a term
    # one of them explains ("what is a for loop?" on an accumulator exercise) gets that one.
    related: tuple[str, ...] = ()
    # (topic as the learner reads it, concept) of the goals of the curriculum's other domains:
    # "what is a for loop?" on an arithmetic exercise is about the course, not outside it; the
    # reply names where it belongs and comes back to the exercise.
    elsewhere: tuple[tuple[str, str], ...] = ()
    # The worked solution's intermediate results ("28" in "7 x 8 = (7 x 4) x 2 = 28 x 2 = 56"):
    # a learner who states one has done a step, so a hint that refers back to "that result"
    # has its antecedent in the learner's own working.
    results: tuple[str, ...] = ()
    # Per hint of a programming exercise, the statement of the worked solution its step writes,
    # with its loop depth there (`kernel.code_steps`), or None: a learner whose code has it has
    # done that step.
    code_steps: tuple[Step | None, ...] = ()

    @classmethod
    def from_exercise(
        cls, exercise: Any, goal: Any = None, goals: Mapping[str, Any] | None = None
    ) -> Material:
        """The exercise's material; ``goal`` (its curriculum goal) gives the concept, ``goals``
        (the curriculum's, by id) the related concepts of the goal's domain."""
        worked = getattr(exercise, "worked_example", None)
        parallel = getattr(exercise, "parallel", None)
        misconceptions = tuple(getattr(exercise, "misconceptions", ()) or ())
        return cls(
            prompt=exercise.prompt,
            hints=tuple(getattr(exercise, "hints", ()) or ()),
            example=_worked_text(worked) if worked is not None else "",
            parallel=parallel.prompt if parallel is not None else "",
            misconceptions=tuple(_text(item) for item in misconceptions),
            outline=getattr(exercise, "outline", None) or "",
            solution=exercise.solution or "",
            restatement=getattr(exercise, "restatement", None) or "",
            concept=(getattr(goal, "concept", None) or "") if goal is not None else "",
            signals=tuple(getattr(item, "signals", Signals()) for item in misconceptions),
            related=_related_concepts(goal, goals or {}),
            elsewhere=_other_domains(goal, goals or {}),
            results=intermediate_results(
                exercise.solution or "",
                exercise.prompt,
                str(getattr(exercise, "answer", "") or ""),
                tuple(getattr(exercise, "hints", ()) or ()),
            ),
            code_steps=tuple(
                solution_step(text, exercise.solution or "") if text else None
                for text in getattr(exercise, "hint_code", ()) or ()
            ),
        )

    def concept_for(self, message: str) -> tuple[str, str, str]:
        """The concept explanation for ``message``; the term it asks about when no concept
        of the curriculum explains it (the reply then says so), else ""; and the topic of
        another domain whose concept explains it (the reply says it belongs there and comes
        back to the exercise), else "". A question about a term that is not the subject of
        this exercise's own concept gets the related concept that opens with it (or, failing
        that, mentions it); anything else this exercise's."""
        term = asked_term(message)
        if not term or not self.concept or _opens_with(self.concept, term):
            return self.concept, "", ""
        opening = next((text for text in self.related if _opens_with(text, term)), "")
        if opening or _mentions(self.concept, term):
            return opening or self.concept, "", ""
        mention = next((text for text in self.related if _mentions(text, term)), "")
        if mention:
            return mention, "", ""
        where = next((topic for topic, text in self.elsewhere if _opens_with(text, term)), "")
        where = where or next(
            (topic for topic, text in self.elsewhere if _mentions(text, term)), ""
        )
        return (self.concept, "", where) if where else (self.concept, term, "")

    def asks(self, hint: str) -> tuple[str, ...]:
        """The values ``hint`` asks the learner to work out (`working.asked_values`): its
        calculation's, or the worked solution's step it asks for without one. A value read
        from the solution is left out when a misconception declares it as its wrong answer
        ("64", what is left of 144 after ten eights, for 144 / 8): the author says that
        value, given, is the wrong answer, and a hint that does not calculate it ("How many
        eights make 144?") must not make it a step."""
        calculated = step_values(hint)
        if calculated:
            return calculated
        declared = {answer.strip() for signals in self.signals for answer in signals.answers}
        found = asked_values(hint, self.solution, self.results)
        return tuple(value for value in found if value not in declared)

    def diagnose(self, message: str, *, answer: bool = True) -> str:
        """The misconception the learner's message signals (its text), or "". ``answer=False``:
        the message is no answer (the grader's `NOT_ANSWERS`), so a wrong answer's words in it
        signal nothing; its reasoning (the patterns) still may."""
        index = first_signalled(self.signals, message, answers=answer) if message else None
        return self.misconceptions[index] if index is not None else ""


_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w])")


def intermediate_results(
    solution: str, prompt: str, answer: str, hints: Sequence[str]
) -> tuple[str, ...]:
    """The numbers of the worked solution that are neither given (in the prompt or a hint) nor
    the answer: what a learner computes on the way, in the solution's order."""
    given = {*_NUMBER.findall(prompt), *_NUMBER.findall(answer)}
    for hint in hints:
        given.update(_NUMBER.findall(hint))
    found: list[str] = []
    for number in _NUMBER.findall(solution):
        if number not in given and number not in found:
            found.append(number)
    return tuple(found)


# A hint that points back at what the step before it produced ("Now double that result",
# "add the ones that are left to that total", "How many more twelves fit into what is left?",
# "Is that nearer subject singular or plural?"): said on its own, before the learner has done
# that step, it refers to a result the learner never saw.
_REFERS_BACK = re.compile(
    r"\bthat\s+(?:result|total|text|thing|value|number|sum|answer|list|nearer|subject|word)\b"
    r"|\bto that\b\s*[.?!,]|\bwhat is left\b|\bthe remaining\b|\bthat are left\b"
    r"|\bthe (?:two )?(?:partial products|parts|results)\b",
    re.I,
)


def refers_back(hint: str) -> bool:
    """Whether ``hint`` presupposes the result of the step before it."""
    return _REFERS_BACK.search(hint) is not None


# A wording that presents itself as saying again what the tutor said before ("Let me put it
# another way: ...", "In other words: ..."): as the session's first reply it rephrases a reply
# the learner never had. One list of those phrases, read anywhere in a wording and as its
# opening words (which can go).
_REPHRASING = r"put it (?:another|a different) way|in other words|said differently|put differently"
_REPHRASES = re.compile(rf"\b(?:{_REPHRASING}|to rephrase|let me rephrase)\b", re.I)
_REPHRASING_OPENER = re.compile(
    rf"^\s*(?:let me |to )?(?:{_REPHRASING}|rephrase)\s*[:,;.\u2014-]\s*", re.I
)


def rephrases(wording: str) -> bool:
    """Whether ``wording`` says again, in other words, something said before it."""
    return _REPHRASES.search(wording) is not None


def first_reply_wordings(wordings: Sequence[str], said: Mapping[str, Any]) -> list[str]:
    """``wordings`` as the session's first reply may use them: none that rephrases an earlier
    reply (there is none); when every one does (an action whose only wording without material
    is "Let me put it another way: ..."), each without its rephrasing opening words. Later
    replies keep them all. The one rule for the offline actor's wordings and the fail-closed
    replies alike."""
    if int(said.get("count", 0) or 0) or said.get("last_fp"):
        return list(wordings)
    kept = [text for text in wordings if not rephrases(text)]
    return kept or [_without_opener(text) for text in wordings]


def _without_opener(text: str) -> str:
    rest = _REPHRASING_OPENER.sub("", text, count=1)
    if rest == text or not rest:
        return text
    return rest[0].upper() + rest[1:]


def shows_step(material: Material | None, message: str) -> bool:
    """Whether the learner's message states one of the solution's intermediate results (a step
    of their own working done)."""
    if material is None or not message or not material.results:
        return False
    return bool(set(_NUMBER.findall(message)) & set(material.results))


def steps_done(said: Mapping[str, Any], material: Material | None, message: str) -> int:
    """How many of the hints (steps) the learner's working covers: the hints given when their
    working last showed a step (this turn's ``message`` included). Kept in the session's record
    (``said["done"]``), which only the runtime writes. A hint whose calculation's value the
    learner stated ("23 x 40 = 920" for "Work out 23 times 40") is done with those before it.
    On a programming exercise only the learner's latest code tells (:func:`latest_code`): its
    numbers are constants of the code, not results of a step, and a step an earlier version
    had and this one lost is not done."""
    done = int(said.get("done", 0))
    if material is None:
        return done
    code = latest_code(said, material, message)
    if code is not None:
        return min(code, len(material.hints))
    if not message:
        return done
    if shows_step(material, message):
        done = max(done, int(said.get("hints", 0)))
    stated = set(_NUMBER.findall(message))
    for index, hint in enumerate(material.hints):
        if stated & set(material.asks(hint)):  # the value of the calculation this step asks for
            done = max(done, index + 1)
    return min(done, len(material.hints))


def latest_code(said: Mapping[str, Any], material: Material, message: str) -> int | None:
    """How many of the first hints of a programming exercise the learner's latest code has
    done (:func:`code_steps_done` on this turn's ``message``, else the record's
    ``said["code"]``), or None before the learner has shown code that parses: the hint to
    show is then the first step that code has not done, whatever hints came before it."""
    if not material.code_steps:
        return None
    code = code_steps_done(material, message) if message else None
    if code is None and "code" in said:
        code = int(said["code"])
    return code


def code_steps_done(material: Material, message: str) -> int | None:
    """How many of the first hints of a programming exercise the learner's code has written
    (`kernel.code_steps`), up to the first it has not: that one is their next step, whatever
    later steps their code has (a product started at 0 has its update, not its start). None
    when the message holds no code that parses."""
    if not material.code_steps:
        return None
    from pedrag.runtime.learning.grader import learner_code  # the one reader of code in a message

    code = learner_code(message)
    found = steps(code) if code else []
    if not found:
        return None
    done = 0
    for step in material.code_steps:
        if step is None or not has_step(step, found):
            break
        done += 1
    return done


def hint_index(material: Material, said: Mapping[str, Any], message: str = "") -> int:
    """The index of the hint to show: on a programming exercise whose learner has shown code,
    the first step their latest code has not done (a hint given before is said again while
    the code still lacks its step, and never one the code has done); otherwise the next one
    in order, skipping the steps the learner's working has done. The last stays once all
    are given or done."""
    done = steps_done(said, material, message)
    if latest_code(said, material, message) is not None:
        return min(done, len(material.hints) - 1)
    return min(max(int(said.get("hints", 0)), done), len(material.hints) - 1)


def next_step(material: Material, said: Mapping[str, Any], message: str = "") -> str:
    """The hint to show: the next one in order, skipping the steps the learner's working has
    done (the last stays once all are given), preceded by
    the steps it refers back to that the learner's working has not done ("what is 7 times 4?
    Now double that result"), so no hint points at a result the learner has not had."""
    hints = material.hints
    done = steps_done(said, material, message)
    given = int(said.get("hints", 0))
    index = hint_index(material, said, message)
    start = index
    while start > 0 and start > done and refers_back(hints[start]):
        start -= 1
    if start == index:
        return hints[index]
    if index < given:
        # given already, after its step, and the learner has still not done that step: the
        # step is their next one, said on its own (not the same sentences again)
        return hints[start]
    # The step it follows comes first, quoted as one sentence with it: said again right after
    # the learner had it alone, it is not the same sentence twice in a row.
    steps = " ".join(_sentence(hint) for hint in hints[start:index])
    return f'Building on the step "{steps}": {hints[index]}'


def reader_topic(goal: Any) -> str:
    """A goal's topic as the learner reads it: its ``topic_name``, else its topic id with
    spaces ("python_loops" -> "python loops")."""
    return getattr(goal, "topic_name", None) or goal.topic.replace("_", " ")


def _other_domains(goal: Any, goals: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    domain = getattr(goal, "domain", None)
    if goal is None or domain is None:
        return ()
    return tuple(
        (reader_topic(other), other.concept)
        for other in goals.values()
        if getattr(other, "domain", None) not in (None, domain) and getattr(other, "concept", None)
    )


def _related_concepts(goal: Any, goals: Mapping[str, Any]) -> tuple[str, ...]:
    domain = getattr(goal, "domain", None)
    if goal is None or domain is None:
        return ()
    return tuple(
        other.concept
        for other in goals.values()
        if other is not goal
        and getattr(other, "domain", None) == domain
        and getattr(other, "concept", None)
    )


# "what is a for loop?", "what are accumulators?", "what does range mean?", "define a tense":
# the term a concept question asks about (a few words, nothing else of the message).
_ASKED_TERM = re.compile(
    r"^\s*(?:so\s+|and\s+|but\s+)?(?:what(?:'s|\s+is|\s+are)|define|explain)\s+"
    r"(?:an?\s+|the\s+)?(?P<term>[a-z][a-z0-9_() -]{1,40}?)\s*(?:\?|\.|!|$)"
    r"|^\s*what\s+(?:does|do)\s+(?:an?\s+|the\s+)?(?P<term2>[a-z][a-z0-9_() -]{1,40}?)\s+mean\b",
    re.I,
)
_TERM_WORD = re.compile(r"[^\W_]+")
_ARTICLE = re.compile(r"^(?:an?|the)\s+", re.I)


def asked_term(message: str) -> str:
    """The term a "what is X?" question asks about, in lower case, or ""."""
    match = _ASKED_TERM.search(message.strip())
    if match is None:
        return ""
    term = (match.group("term") or match.group("term2") or "").strip().lower()
    term = re.sub(r"\s+(please|again|exactly)$", "", term)
    return "" if term in {"it", "this", "that", "the answer", "the question"} else term


def _stems(text: str) -> list[str]:
    """The text's words as stems, in order ("for loops" -> ["for", "loop"], "carrying" ->
    ["carri"], as "carried")."""
    return [stem(word) for word in _TERM_WORD.findall(text.lower())]


def _opens_with(concept: str, term: str) -> bool:
    wanted = _stems(term)
    return bool(wanted) and _stems(_ARTICLE.sub("", concept.strip()))[: len(wanted)] == wanted


def _mentions(concept: str, term: str) -> bool:
    wanted, said = _stems(term), _stems(concept)
    return bool(wanted) and any(
        said[start : start + len(wanted)] == wanted for start in range(len(said))
    )


def _text(item: Any) -> str:
    """A misconception's text (a curriculum model's, or a bare string)."""
    return item if isinstance(item, str) else str(item.text)


def _worked_text(worked: Any) -> str:
    steps = " ".join(_sentence(step) for step in worked.steps)
    return f"{_sentence(worked.problem)} {steps}"


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?", ":")) else text + "."


def fingerprint(text: str) -> str:
    """A short stable fingerprint of a reply (case and spacing ignored)."""
    folded = " ".join(text.lower().split())
    return hashlib.sha256(folded.encode("utf-8")).hexdigest()[:16]


def turn_material(
    material: Material | None,
    said: Mapping[str, Any],
    *,
    rung: int,
    explain: bool,
    solved: str = "",
    ceiling: int | None = None,
    message: str = "",
    answer: bool = True,
) -> dict[str, str]:
    """The material this turn may use, by placeholder name.

    Content comes in the order the hint ladder allows it: the restatement from H1, the goal's
    concept and misconceptions from H2, hints from H3 (the next one not yet given, walking the
    curriculum's order; the last stays available once all are given), the worked example and
    the parallel item from H5, the outline from H6, the solution only in explain mode.
    ``solved`` is the prompt of an exercise the learner's records say they solved (for "you
    solved a similar problem" — said only when true). ``message`` (the learner's, when not
    graded correct) is diagnosed first: a misconception it signals is this turn's
    ``diagnosis``, and the first wrong step of its working (``pedrag.runtime.learning.working``)
    its ``slip``, whenever the ``ceiling`` (default: ``rung``) allows H2, whatever the action
    (issue 27: diagnosis before probing). ``answer=False``: the message is no answer (a demand
    for it), so it is not diagnosed by the wrong answers it happens to contain."""
    out: dict[str, str] = {}
    if material is None:
        return out
    out["prompt"] = material.prompt
    if solved:
        out["solved"] = solved
    if rung >= 1 and material.restatement:
        out["restatement"] = material.restatement
    if rung >= 2 and material.concept:
        # The term the learner asked about; one no concept of the curriculum explains is named,
        # one another domain's concept explains is placed there.
        out["concept"], unexplained, elsewhere = material.concept_for(message)
        if unexplained:
            out["unexplained"] = unexplained  # ... that no concept of the curriculum explains
        if elsewhere:
            out["elsewhere"] = elsewhere  # ... the topic, in another domain, that explains it
    diagnosis = material.diagnose(message, answer=answer)
    allowed = (rung if ceiling is None else ceiling) >= 2
    if diagnosis and allowed:
        out["diagnosis"] = diagnosis
    slip = first_slip(message) if allowed else ""
    if slip:
        out["slip"] = slip  # the first step of the learner's working that does not check out
    if rung >= 2 and material.misconceptions:
        index = int(said.get("misconceptions", 0)) % len(material.misconceptions)
        out["misconception"] = diagnosis or material.misconceptions[index]
    if rung >= 3 and material.hints:
        out["hint"] = next_step(material, said, message)
    if rung >= 5 and material.example:
        out["example"] = material.example
    if rung >= 5 and material.parallel:
        out["parallel"] = material.parallel
    if rung >= 6 and material.outline:
        out["outline"] = material.outline
    if explain and rung >= 7 and material.solution:
        out["solution"] = material.solution
    return out


def fresh(name: str, said: Mapping[str, Any], material: Material | None, request: str = "") -> bool:
    """Whether the placeholder ``name`` would give the learner something not yet given, or
    what their ``request`` this turn asks for (:data:`REQUESTED`)."""
    if material is None:
        return False
    if name in ASKED or REQUESTED.get(request) == name:
        return True  # what the learner's message shows or asks this turn
    if name == "hint":
        return max(int(said.get("hints", 0)), int(said.get("done", 0))) < len(material.hints)
    if name in SHOWN_ONCE:
        return name not in said.get("shown", ())
    return False


def requested(values: Mapping[str, str], request: str) -> list[str]:
    """The placeholder of this turn's material (``values``) the learner's ``request`` names
    (:data:`REQUESTED`), when the turn has it: a reply answers with it."""
    name = REQUESTED.get(request, "")
    return [name] if values.get(name) else []


def fresh_names(
    values: Mapping[str, str],
    said: Mapping[str, Any],
    material: Material | None,
    request: str = "",
) -> list[str]:
    """The placeholders of this turn's material (``values``) that give the learner something new.
    A term they asked about that no concept explains (``unexplained``), or that another
    domain's does (``elsewhere``), is answered first, so the other new material waits a turn
    (a wording that says so is put before the others). ``request``: the learner's classified
    request this turn."""
    names = [name for name in values if fresh(name, said, material, request)]
    if "unexplained" in names or "elsewhere" in names:
        names = [name for name in names if name in ASKED]
    return names


def after_reply(
    said: Mapping[str, Any],
    reply: str,
    used: Mapping[str, str],
    material: Material | None,
    *,
    keep_text: bool = True,
    message: str = "",
) -> dict[str, Any]:
    """The record of what was said, after ``reply``: a piece of material counts as given only
    when the reply the learner saw contains it. ``keep_text=False`` (transcripts off) keeps
    only fingerprints: a reply can echo the learner's own words ("Not quite: 54 isn't it").
    ``message`` (the learner's, when not graded correct) moves the steps their working has
    done (:func:`steps_done`): only the count is kept, never the text (``said["code"]``: the
    steps their latest code has done, on a programming exercise)."""
    folded = " ".join(reply.split())
    new: dict[str, Any] = {
        "hints": int(said.get("hints", 0)),
        "done": steps_done(said, material, message),
        "misconceptions": int(said.get("misconceptions", 0)),
        "shown": list(said.get("shown", ())),
        "recent": [*said.get("recent", ()), fingerprint(reply)][-RECENT:],
        "last": reply if keep_text else "",
        "last_fp": fingerprint(reply),
        "count": int(said.get("count", 0)) + 1,
    }
    code = latest_code(said, material, message) if material is not None else None
    if code is not None:
        new["code"] = code
    asked = asked_steps(said)
    for name, text in used.items():
        if " ".join(text.split()) not in folded:
            continue
        if name == "hint":
            # what the hint the learner now sees asks them to work out
            asked = material.asks(text) if material is not None else step_values(text)
        if name == "hint" and material is not None and new["hints"] < len(material.hints):
            # the step shown was the first the learner had not done
            shown = hint_index(material, said, message) + 1
            new["hints"] = min(len(material.hints), max(new["hints"], shown))
        elif name == "misconception":
            new["misconceptions"] += 1
        if name in SHOWN_ONCE and name not in new["shown"]:
            new["shown"].append(name)
    if asked:
        new["asked"] = list(asked)  # kept only while there is one (`asked_steps`)
    return new


def asked_steps(said: Mapping[str, Any]) -> tuple[str, ...]:
    """The values of the calculation the last hint shown on this exercise asks for ("what is
    7 times 4?": "28"; `working.step_values`), for the grader: a learner who answers it has
    done a step, not given a wrong answer. Written by :func:`after_reply` from the hint's
    own text (the curriculum's), kept until another hint is shown or the exercise changes;
    never read from the learner's message."""
    return tuple(str(value) for value in said.get("asked", ()))


def exercise_start(said: Mapping[str, Any]) -> dict[str, Any]:
    """A new exercise: its material starts again; the memory of recent replies stays."""
    return {
        "recent": list(said.get("recent", ())),
        "last": said.get("last", ""),
        "last_fp": said.get("last_fp", ""),
        "count": int(said.get("count", 0)),
    }


# -- the material check ------------------------------------------------------------------------


def _pieces(exercise: Any, concept: str = "") -> Iterator[tuple[tuple[str | int, ...], str, str]]:
    """(path inside the exercise, what it is, text) for every piece shown to a learner;
    ``concept`` (its goal's concept explanation, shown at H2 on this exercise) has the path
    ``("concept",)``."""
    if concept:
        yield ("concept",), "the concept of its goal", concept
    for index, hint in enumerate(getattr(exercise, "hints", ()) or ()):
        yield ("hints", index), f"hint {index + 1}", hint
    worked = getattr(exercise, "worked_example", None)
    if worked is not None:
        yield ("worked_example", "problem"), "the worked example's problem", worked.problem
        for index, step in enumerate(worked.steps):
            yield ("worked_example", "steps", index), f"worked-example step {index + 1}", step
    parallel = getattr(exercise, "parallel", None)
    if parallel is not None:
        yield ("parallel", "prompt"), "the parallel item", parallel.prompt
        yield ("parallel", "answer"), "the parallel item's answer", parallel.answer
    for index, item in enumerate(getattr(exercise, "misconceptions", ()) or ()):
        yield ("misconceptions", index, "text"), f"misconception {index + 1}", _text(item)
    outline = getattr(exercise, "outline", None)
    if outline:
        yield ("outline",), "the outline", outline
    restatement = getattr(exercise, "restatement", None)
    if restatement:
        yield ("restatement",), "the restatement", restatement


def material_findings(exercise: Any, concept: str = "") -> list[tuple[tuple[str | int, ...], str]]:
    """(path inside the exercise, message) for each piece of material that states the answer
    (``concept``: the goal's concept explanation, which the exercise shows too)."""
    from pedrag.runtime.detect.detector import AnswerKey, CodeMode, Detector

    key = AnswerKey(
        answer=exercise.answer,
        accept=tuple(exercise.accept),
        solution=exercise.solution,  # the key the runtime's detector checks each reply against
        prompt=exercise.prompt,
    )
    detector = Detector(code_mode=CodeMode.OPEN, answer=key)
    found: list[tuple[tuple[str | int, ...], str]] = []
    for path, what, text in _pieces(exercise, concept):
        verdict = detector.check(text)
        if verdict.flagged:
            found.append(
                (
                    path,
                    f"{what} of exercise `{exercise.id}` states its answer ({verdict.reason})",
                )
            )
    return found


def material_key(exercise: Any, concept: str = "") -> str:
    """What an exercise's material findings depend on, as text: its id (it is in the
    messages), its answer key and every piece of its material."""
    return repr(
        (
            exercise.id,
            exercise.answer,
            tuple(exercise.accept),
            exercise.solution,
            exercise.prompt,
            tuple(_pieces(exercise, concept)),
        )
    )


def material_diagnostics(loaded: Any, memo: Memo | None = None) -> list[Diagnostic]:
    """The material check over a loaded curriculum file (`pedrag.dsl.loader.LoadedFile`).
    `memo`: earlier findings by `material_key` (`pedrag check` passes its on-disk check cache;
    the detector is not even imported when every exercise's material is unchanged)."""
    from pedrag.compiler.check_cache import remembered
    from pedrag.dsl.diagnostics import error  # only when checking a file: not on the turn path

    curriculum = getattr(loaded, "curriculum", None)
    positions = getattr(loaded, "positions", None)
    if curriculum is None:
        return []
    out: list[Diagnostic] = []
    goals = {goal.id: (index, goal) for index, goal in enumerate(curriculum.model.goals)}
    for index, exercise in enumerate(curriculum.model.exercises):
        goal_index, goal = goals.get(exercise.goal, (-1, None))
        concept = (getattr(goal, "concept", None) or "") if goal is not None else ""
        key = material_key(exercise, concept) if memo is not None else ""
        found = remembered(memo, key, functools.partial(material_findings, exercise, concept))
        for path, message in found:
            where: tuple[str | int, ...] = (
                ("goals", goal_index, "concept")
                if path == ("concept",)
                else ("exercises", index, *path)
            )
            span = positions.span(where) if positions is not None else None
            out.append(
                error(
                    CHECK,
                    message,
                    span,
                    items=(f"exercise:{exercise.id}",),
                    help="reword it so it points the way without giving the result",
                )
            )
    return out


def placeholders(text: str) -> list[str]:
    return PLACEHOLDER.findall(text)


def fill(text: str, values: Mapping[str, str]) -> str | None:
    """``text`` with every placeholder filled, or None when one has no value this turn. A
    sentence said twice in a row (a hint that ends "What do you get?" in a wording that asks
    it too) is said once."""
    missing = [name for name in placeholders(text) if not values.get(name)]
    if missing:
        return None
    return _REPEATED_SENTENCE.sub(
        r"\1", PLACEHOLDER.sub(lambda match: values[match.group(1)], text)
    )


# A sentence (from a word start to its end mark) followed by itself, once or more.
_REPEATED_SENTENCE = re.compile(r"(?<!\S)([^.!?\s][^.!?]*[.!?])(?:\s+\1)+(?!\S)")


def wordings(template: str | None, variants: Sequence[str]) -> tuple[str, ...]:
    return tuple(text for text in (template or "", *variants) if text)
