"""pedrag.evaluate: simulated sessions -> BHR, fidelity, mastery, significance, gates G1-G4.

The last stage (DESIGN, "Evaluation"); it may import ``dsl``, ``compiler`` and ``runtime``,
and nothing below imports it. One module per concept:

- ``records`` — the exercise, turn and session records every other module reads;
- ``simulated_tutor`` — the offline stand-in for the tutor LLM (over-helps under pressure);
- ``configs`` — the three arms: ``baseline``, ``prompt_only``, ``pedrag``;
- ``students`` — scripted personas and the LLM student role, with their understanding;
- ``evaluator`` — the reference contract, the rubric evaluator and the LLM evaluator;
- ``metrics`` — BHR, fidelity, mastery, tables, permutation and Fisher tests;
- ``gates`` — seed 2's G1-G4 and the over-help ladder;
- ``run`` — the seeded grid runner; ``report`` — JSON, rich tables, optional plot.
"""

if __name__ != "pedrag.evaluate":  # DESIGN, layout: one import name per module
    raise ImportError(f"import this package as pedrag.evaluate, not {__name__}")
