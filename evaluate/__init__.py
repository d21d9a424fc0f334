"""pedrag.evaluate: simulated sessions -> BHR, fidelity, mastery, significance, gates G1-G4.

The last stage (DESIGN, "Evaluation"); nothing below imports it. It judges the tutor with
code that shares nothing with it: it imports nothing from ``pedrag.runtime``,
``pedrag.compiler``, ``pedrag.kernel`` or ``pedrag.dsl`` and drives the pedrag arm through the
public API (``from pedrag import Tutor``) only — the import-linter contract "evaluate judges
with its own code" pins it (issue 28). One module per concept:

- ``records`` — the exercise, turn and session records every other module reads;
- ``answer_check`` — the evaluator's own answer check (reveals, worked steps, correct answers);
- ``distress`` — the evaluator's own reading of distress and of acknowledging it;
- ``simulated_tutor`` — a caricature of a tutor LLM for the two chat arms offline;
- ``configs`` — the three arms: ``baseline``, ``prompt_only``, ``pedrag``;
- ``learners`` — simulated learners with a hidden knowledge state (an LLM voices them with an
  endpoint), who can give up and who sit a post-test;
- ``rung_rubric`` — an independent reading of a reply's rung from its text;
- ``evaluator`` — the rubric against the theory's written principles, and the LLM evaluator;
- ``mrbench`` — the rubric's agreement with MRBench's human labels;
- ``sensitivity`` — the outcomes under other settings of the learner model's assumptions;
- ``metrics`` — BHR, fidelity, post-test mastery, tables, effect sizes, confidence intervals
  and significance across independent sessions;
- ``gates`` — seed 2's G1-G4 and the over-help ladder;
- ``run`` — the seeded grid runner; ``results`` — the resumable results file;
- ``estimate`` — calls, tokens and cost of a grid before it runs against an endpoint;
- ``report`` — JSON, rich tables, the figures (matplotlib, optional).
"""

if __name__ != "pedrag.evaluate":  # DESIGN, layout: one import name per module
    raise ImportError(f"import this package as pedrag.evaluate, not {__name__}")
