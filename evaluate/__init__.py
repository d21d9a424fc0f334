"""pedrag.evaluate: simulated sessions -> BHR, fidelity, mastery, significance, gates G1-G4.

The last stage (DESIGN, "Evaluation"); it may import ``dsl``, ``compiler`` and ``runtime``,
and nothing below imports it. One module per concept:

- ``records`` — the exercise, turn and session records every other module reads;
- ``simulated_tutor`` — the offline stand-in for the tutor LLM (over-helps under pressure);
- ``configs`` — the three arms: ``baseline``, ``prompt_only``, ``pedrag``;
- ``learners`` — simulated learners with a hidden knowledge state (an LLM voices them with an
  endpoint), who can give up and who sit a post-test;
- ``reference`` — the reference contract, from trusted state through the policy core;
- ``rung_rubric`` — an independent reading of a reply's rung from its text;
- ``evaluator`` — the rubric evaluator and the LLM evaluator;
- ``metrics`` — BHR, fidelity, post-test mastery, tables, effect sizes, confidence intervals
  and significance across independent sessions;
- ``gates`` — seed 2's G1-G4 and the over-help ladder;
- ``run`` — the seeded grid runner; ``results`` — the resumable results file;
- ``estimate`` — calls, tokens and cost of a grid before it runs against an endpoint;
- ``report`` — JSON, rich tables, the figures (matplotlib, optional).
"""

if __name__ != "pedrag.evaluate":  # DESIGN, layout: one import name per module
    raise ImportError(f"import this package as pedrag.evaluate, not {__name__}")
