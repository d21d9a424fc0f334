"""pedrag.kernel: the one place the language's semantics live (DESIGN, "One semantics").

Standard library only, and the lowest layer: the front end, the compiler, `why`, `diff` and
the runtime all call it, so a proof about a theory is a proof about the turn the runtime runs.

- ``ceiling`` — how ceiling steps apply, and the runtime's own steps (exam lockdown, conduct
  restriction) declared as data the compiler reads like any other step;
- ``sources`` — metric sources, the trust rule, and who writes each metric;
- ``selection`` — eligibility under a ceiling, weighted and priority selection;
- ``canonical`` — canonical JSON and the policy hash;
- ``history`` — history functions: names, argument kinds, values, the rows a call needs, the
  range of its value and what every run makes true of it (the compiler's links);
- ``exact`` — exact arithmetic: a number as the rational it prints as;
- ``rungs`` — the hint ladder: rung names, parsing, the ladder's text, whether code is allowed;
- ``errors`` — `PedragError`, the root of every exception pedrag raises on purpose.
- ``suggest`` — "did you mean": the closest known name and the one wording of a suggestion.
- ``code_rules`` — what a programming exercise's `forbid:` and `require:` mean in code.
"""

if __name__ != "pedrag.kernel":  # DESIGN, layout: one import name per module
    raise ImportError(f"import this package as pedrag.kernel, not {__name__}")
