"""A scripted extraction model for the fake OpenAI server.

Each corpus passage carries a marker (`PASSAGE-A` ...); the model answers a fragment request
with the fragment scripted for the marker it finds, and a repair request with the scripted
repair. Embeddings are one-hot by action description, so actions with equal descriptions are
exact duplicates (cosine 1) and all others are orthogonal (cosine 0).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fake_openai import FakeOpenAI, RecordedRequest, Reply

ASK = "Ask a question that leads the learner toward the next step."

FRAGMENTS: dict[str, Any] = {
    "PASSAGE-A": {
        "metrics": {
            "confusion": {"type": "float", "source": "inferred", "range": [0, 0.8]},
            "affect": {"type": "enum", "source": "inferred", "values": ["calm", "perplexed"]},
        },
        "actions": {"ask_leading_question": {"rung": "H3", "priority": 7, "description": ASK}},
        "rules": [{"id": "confused", "when": "confusion >= 0.5", "then": "ask_leading_question"}],
        "principles": [
            {"id": "ask_do_not_tell", "text": "Ask the learner; do not tell the answer."}
        ],
    },
    # Duplicates A's action under another name, and A's rule once re-pointed; widens
    # `confusion`; and names an action nobody declares (fixed by the repair round).
    "PASSAGE-B": {
        "metrics": {
            "confusion": {"type": "float", "source": "inferred", "range": [0, 1]},
            "affect": {"type": "enum", "source": "inferred", "values": ["calm", "frustrated"]},
        },
        "actions": {
            "pose_guiding_question": {"rung": "H3", "priority": 6, "description": ASK},
            "encourage": {
                "rung": "H0",
                "priority": 5,
                "description": "Acknowledge the difficulty and encourage the learner.",
            },
        },
        "rules": [
            {"id": "confused_guide", "when": "confusion>=0.5", "then": "pose_guiding_question"},
            {"id": "perplexed", "when": "affect == perplexed", "then": "give_torpedo_shock"},
        ],
    },
    # Invalid twice: a rung off the ladder and no priority.
    "PASSAGE-C": {"actions": {"lecture": {"rung": "H9", "description": "Explain at length."}}},
}

REPAIR = {"rules": [{"id": "perplexed", "when": "affect == perplexed", "then": "encourage"}]}


def write_corpus(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for marker, name in (("PASSAGE-A", "a.txt"), ("PASSAGE-B", "b.txt"), ("PASSAGE-C", "c.txt")):
        path = folder / name
        path.write_text(
            f"{marker}\nSOCRATES: Tell me, boy, do you know that a figure like this "
            "is a square?\nBOY: I do.\n",
            encoding="utf-8",
        )
        paths.append(path)
    return paths


def schema_name(request: RecordedRequest) -> str:
    return str(request["response_format"]["json_schema"]["name"])


def answer(request: RecordedRequest) -> Any:
    if schema_name(request) == "theory_repair":
        return REPAIR
    passage = request.messages[1]["content"]
    for marker, fragment in FRAGMENTS.items():
        if marker in passage:
            return fragment
    return {}


def embed(request: RecordedRequest) -> Reply:
    texts = request["input"]
    descriptions = list(dict.fromkeys(text.split(": ", 1)[-1] for text in texts))
    vectors = []
    for text in texts:
        vector = [0.0] * max(len(descriptions), 2)
        vector[descriptions.index(text.split(": ", 1)[-1])] = 1.0
        vectors.append(vector)
    return Reply.embedding(vectors)


def install(fake: FakeOpenAI) -> FakeOpenAI:
    fake.always(answer)
    fake.always(embed, endpoint="embeddings")
    return fake
