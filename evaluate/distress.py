"""The evaluator's own reading of distress in a learner's message, and of a reply that
acknowledges it.

Evaluation, judging. Takes a message (the learner's) or a reply (the tutor's); gives
:func:`in_distress` (frustration or anxiety, from plain cue phrases a reader would point at)
and :func:`acknowledges` (the reply names the feeling or lowers the stakes).

Why its own cue lists: the tutor's context analyzer infers affect to decide what to do, so
judging the tutor's handling of affect with the analyzer's own reading would grade pedrag by
its own judgement (issue 28). These lists were written from the principles' wording
("frustration or anxiety is high", "acknowledge it and lower the stakes"), not from the
analyzer's.
"""

from __future__ import annotations

import re

_FRUSTRATED = re.compile(
    r"\b(ugh+|argh+|so hard|too hard|i give up|give up|hate (this|it|maths?|math)|stupid|pointless"
    r"|stuck again|i can'?t do (this|it)|this is impossible|annoy(ed|ing)|sick of|fed up"
    r"|don'?t get (it|this|\w+ at all)|makes no sense|frustrat\w*)\b"
    r"|!{2,}",
    re.IGNORECASE,
)
_ANXIOUS = re.compile(
    r"\b(worried|worry|nervous|scared|afraid|anxious|panic\w*|stress(ed)?|freaking out"
    r"|i'?ll (get|fail)|going to fail|what if i'?m wrong|sorry, i'?m not sure)\b",
    re.IGNORECASE,
)
_ACKNOWLEDGES = re.compile(
    r"\b(frustrat\w*|i (can )?(see|hear|understand)|understandabl\w|that'?s (okay|ok|fine|normal)"
    r"|it'?s (okay|ok|fine|normal)|no (rush|pressure|penalty|worries)|don'?t worry|take your time"
    r"|deep breath|one (small )?step at a time|mistakes are|it'?s hard|this is hard|tricky"
    r"|nervous|worried|anxious|you'?re not alone|lots of (people|learners|students))\b",
    re.IGNORECASE,
)


def in_distress(message: str) -> bool:
    """Does the learner's message show frustration or anxiety?"""
    return bool(_FRUSTRATED.search(message) or _ANXIOUS.search(message))


def acknowledges(reply: str) -> bool:
    """Does the reply acknowledge the feeling or lower the stakes?"""
    return bool(_ACKNOWLEDGES.search(reply))
