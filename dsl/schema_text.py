"""What every key of the file formats means: one text for the JSON Schema, editors' hovers and
the help lines of the loader's type errors.

Keyed by the pydantic model and its field. `docs/theory-format.md`'s key tables say the same
(a test compares them), so the reference, the schema and the diagnostics cannot drift.
"""

from __future__ import annotations

from pedrag.kernel.rungs import LADDER

RUNGS = LADDER  # the ladder's text lives with the rungs (pedrag.kernel.rungs)

SOURCES = {
    "trusted": "written only by the system (mastery, exam state, attempt counts, instructor toggles)",
    "classified": "a narrow enum or bool from the pre-classifier",
    "inferred": "from the LLM context analyzer",
    "observed": "from the response monitor (the tutor's own replies)",
    "computed": "a pure function of metric history in the condition language",
}

KEYS: dict[str, dict[str, str]] = {
    "Theory": {
        "pedrag": "format version, `1`",
        "theory": "`id` (`[a-z][a-z0-9_]*`, unique across a theory set), `name`, `description`, `principles`, `sources`",
        "selection": "`weighted`: random among eligible rules, probability ∝ `weight × priority`, seeded per session; `priority`: highest priority wins, ties by weight",
        "metrics": "name → metric",
        "actions": "name → action",
        "rules": "list of rules",
        "ceiling": "the per-turn help ceiling",
        "invariants": "properties proved over (state, selected action)",
        "monitors": "name → condition: behavioural failure patterns",
        "adaptation": "`escalate`, `alternatives`, `switch`",
        "ignore": "check names not reported for this file",
        "kind": "`theory` (the default); a curriculum says `kind: curriculum`",
    },
    "TheoryInfo": {
        "id": "the theory's id, `[a-z][a-z0-9_]*`, unique across a theory set",
        "name": "the theory's human-readable name",
        "description": "free text about the theory",
        "principles": "the theory's core principles: the evaluator's rubric",
        "sources": "provenance: the documents the theory comes from, cited by any item's `source:`",
    },
    "Principle": {
        "id": "the principle's id",
        "text": "the principle, one sentence the evaluator scores replies against",
        "source": "source id(s) from `theory.sources`",
    },
    "Source": {
        "id": "the source's id, cited by `source:` on any item",
        "title": "the document's title",
        "locator": "where in the document, e.g. `pp. 3-5`",
        "author": "the document's author(s)",
        "year": "the year of publication",
        "document": "the file or URL of the document",
        "page": "the page the item comes from",
    },
    "Metric": {
        "type": "`int`, `float`, `bool` or `enum`",
        "source": "who writes it — the trust boundary (below)",
        "range": "`[low, high]`, inclusive; int bounds are whole numbers",
        "values": "distinct lower_snake_case labels",
        "default": "inside the domain; default: the range's low end, `false`, the first enum value",
        "compute": "a history expression; its possible values must lie inside `range`",
        "provenance": "source id(s) from `theory.sources` the metric comes from (`source:` is taken: it is the trust category)",
        "writer": "which runtime events write it (below); conventional names have a default",
        "description": "free text about the metric",
        "ignore": "checks not reported on this metric",
    },
    "Action": {
        "rung": "the action's rung on the hint ladder, H0 (encourage) .. H7 (full solution)",
        "priority": "1 (lowest) .. 10 (highest); a rule's default priority",
        "description": "what the action does, one sentence",
        "guidance": "implementation guidance handed to the generator",
        "tags": "free labels, readable in invariants (`'probe' in tags`)",
        "template": "the offline and fallback wording (`{topic}` is filled in)",
        "variants": (
            "further wordings of the same move, rotated so the tutor does not repeat itself; "
            "they may use the exercise's teaching material: `{prompt}`, `{hint}`, `{example}`, "
            "`{parallel}`, `{misconception}`, `{outline}`, `{solution}`, `{solved}`"
        ),
        "conflicts": "actions that must never be eligible together with this one",
        "source": "source id(s) from `theory.sources`",
        "ignore": "checks not reported on this action",
    },
    "Rule": {
        "id": "the rule's id, unique in the file",
        "when": "a condition over the metrics (the condition language)",
        "then": "the action the rule chooses",
        "weight": "a positive number, default 1; weighted selection draws ∝ `weight × priority`",
        "priority": "1 .. 10; default: the action's priority",
        "description": "free text about the rule",
        "source": "source id(s) from `theory.sources`",
        "ignore": "checks not reported on this rule",
    },
    "Ceiling": {
        "start": "the ceiling before any step applies, a rung (default H7)",
        "steps": "applied in order; each has `when` and one of `at_most`, `at_least`, `set`",
    },
    "CeilingStep": {
        "when": "a condition over trusted and classified metrics only",
        "at_most": "ceiling = min(ceiling, this rung)",
        "at_least": "ceiling = max(ceiling, this rung)",
        "set": "ceiling = this rung",
    },
    "Invariant": {
        "id": "the invariant's id",
        "never": "a condition that must never hold for a state and its selected action",
        "always": "a condition that must always hold for a state and its selected action",
        "description": "free text about the invariant",
    },
    "Adaptation": {
        "escalate": "action → the next action up when a monitor fires (intra-strategy)",
        "alternatives": "action → other actions to try (inter-strategy)",
        "switch": "theory switching: `{when, to}` with `to` another theory id in the set",
    },
    "Switch": {
        "when": "the condition that switches theory",
        "to": "the id of another theory in the set",
    },
    "Curriculum": {
        "pedrag": "format version, `1`",
        "kind": "`curriculum`",
        "id": "the curriculum's id",
        "name": "the curriculum's human-readable name",
        "goals": "learning goals with their prerequisites (a DAG)",
        "exercises": "exercises with their hidden answers",
        "ignore": "check names not reported for this file",
    },
    "Goal": {
        "id": "the goal's id",
        "domain": "the subject, e.g. `mathematics`",
        "topic": "the topic, e.g. `arithmetic`",
        "description": "free text about the goal",
        "requires": "prerequisites (goal ids); must form a DAG",
        "topic_name": "the topic as the learner reads it (default: the topic with spaces), e.g. `English grammar`",
        "concept": "a short explanation of the goal's concept, answering concept questions at H2",
        "mastery_threshold": "the mastery at which the goal counts as mastered, 0..1 (default 0.8)",
        "knowledge_tracing": "Bayesian Knowledge Tracing parameters of the goal's mastery estimate",
    },
    "KnowledgeTracing": {
        "prior": "the chance the goal is known before any graded answer (default 0.2)",
        "learn": "the chance of learning it at each graded answer (default 0.15)",
        "slip": "the chance of a wrong answer although it is known, below 0.5 (default 0.1)",
        "guess": "the chance of a right answer although it is not known, below 0.5 (default 0.2)",
    },
    "CodeTest": {
        "call": "a Python expression calling the learner's code, e.g. `total([1, 2])`",
        "expect": "the Python literal the call must return",
    },
    "Exercise": {
        "id": "the exercise's id",
        "goal": "the goal it practises",
        "prompt": "what the learner is asked",
        "answer": "hidden; the detector catches it in any spelling",
        "accept": "further spellings of the answer",
        "solution": "shown only at H7",
        "language": "programming exercises: the solution is code in this language",
        "exam": "exam exercises run under lockdown",
        "tests": "programming exercises: calls the grader runs against the learner's code",
        "practises": (
            "further goals the exercise practises; with several goals in scope the most "
            "permissive mastery band sets the ceiling"
        ),
        "hints": "the ordered hint pathway, one step per hint, given in order; none may state the answer",
        "hint_code": (
            "programming exercises: for each hint, the statement of `solution` its step writes "
            '(`result = ___`, `___` for any expression, or "" for none); a learner whose code '
            "has it at the same loop depth, with any names, is not given that step"
        ),
        "restatement": "the question in other, plainer words (H1), for a learner who does not understand it",
        "worked_example": "a parallel problem worked step by step (shown at H5); must not state the answer",
        "parallel": "a similar item with its own answer, to practise on",
        "misconceptions": (
            "common misconceptions, each with its correction and the wrong answers or patterns "
            "that signal it; none may state the answer"
        ),
        "outline": "a partly finished solution with blanks (shown at H6); must not state the answer",
    },
    "Misconception": {
        "text": "the misconception named and corrected, as the learner is told it (H2)",
        "answers": "wrong answers that signal it (whole words or numbers, case ignored)",
        "patterns": "regular expressions over the learner's message that signal it (case ignored)",
    },
    "WorkedExample": {
        "problem": "the parallel problem (not the exercise itself)",
        "steps": "its solution, one step per entry",
    },
    "ParallelItem": {
        "prompt": "the similar item's question",
        "answer": "its answer (different from the exercise's)",
    },
}


def describe(model: str, key: str) -> str | None:
    return KEYS.get(model, {}).get(key)
