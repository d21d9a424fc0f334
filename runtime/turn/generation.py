"""Stage 6's input over the turn context: what the actor is told this turn.

Takes the turn context after the action stage; gives the
:class:`~pedrag.runtime.turn.generator.GenerationInput` the generator builds the actor's prompt
from (``pedrag.runtime.turn.generator``): the theory's identity, the action's guidance and
template, the metrics, the contract, the exercise, the bounded conversation history, this
turn's teaching material and what the tutor had said before. The hidden answer is not in it.
"""

from __future__ import annotations

from pedrag.kernel.sources import REQUEST_METRIC
from pedrag.runtime.learning.material import fresh_names, requested
from pedrag.runtime.turn.context import HISTORY, TurnContext
from pedrag.runtime.turn.generator import GenerationInput


def generation_input(context: TurnContext) -> GenerationInput:
    state, policy, choice = context.state, context.policy, context.choice
    action, contract, said = context.action, context.contract, context.said
    info = context.exercise
    request = str(state.metrics.get(REQUEST_METRIC) or "")  # a theory may not declare it
    asked = requested(context.material, request) if info is not None else []
    return GenerationInput(
        theory_name=policy.theory_name,
        theory_description=(policy.description or "").strip(),
        action=choice.action,
        action_description=action.description,
        guidance=action.guidance or "",
        template=action.template or "",
        rung=choice.rung,
        metrics=state.metrics,
        contract=contract,
        topic=info.topic if info else "",
        exercise_prompt=info.prompt if info else "",
        student_message=context.text,
        grader_facts=context.assessment.grade.facts,
        grounding=context.grounding,
        history=tuple(
            (str(student), str(tutor)) for student, tutor in state.extra.get(HISTORY, ())
        ),
        variants=tuple(getattr(action, "variants", ())),
        material=context.material if info is not None else None,
        said={
            "fresh": fresh_names(context.material, said, info.material if info else None, request),
            **({"requested": asked} if asked else {}),
            "recent": list(said.get("recent", ())),
            "last": str(said.get("last", "")),
            "last_fp": str(said.get("last_fp", "")),
            "count": int(said.get("count", 0)),
        },
    )
