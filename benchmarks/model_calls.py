"""Model calls per tutoring turn as a deployment pays for them: calls, round trips, prompt
tokens and the share of each prompt a server's prefix cache can reuse.

Runs ordinary turns of the shipped socratic theory through the offline backend's answers, sent
through a backend that stands in for a model endpoint (it is not in-process, so the tutor
treats it as a model: the classifier and the analyzer are sent at once) and records each
call's prompt and when it started and ended. Reports, per turn:

- model calls and sequential round trips (the longest chain of calls each started after the
  previous one ended; goal <= 2: the classifier and analyzer pair, then the actor);
- prompt tokens (estimated at 4 characters a token), next to a one-call chatbot that sends a
  fixed system prompt, the same history and the message (the baseline of the same run);
- the cached-prefix share per role: how much of a call's prompt, rendered as a chat template
  would render it, is identical to the previous call of that role in the session as a prefix
  (what llama.cpp's prompt cache and OpenAI's automatic prefix caching reuse).

Counts and shares are exact, not timed; the script's own CPU time is printed for the record.

    python benchmarks/model_calls.py [--sessions 6] [--turns 10] [--format json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from pedrag.runtime.llm.interface import LLMRequest, LLMResponse
from pedrag.runtime.llm.offline import OfflineBackend
from pedrag.runtime.llm.personas import PERSONAS
from pedrag.runtime.policy.theory_set import TheorySet
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.tutor import Tutor

CURRICULUM = (
    Path(__file__).resolve().parent.parent / "tests" / "data" / "runtime" / "curriculum.yaml"
)
CHARS_PER_TOKEN = 4
CHATBOT_SYSTEM = "You are a helpful tutor. Do not give away answers."


def render(messages: tuple[tuple[str, str], ...]) -> str:
    """A prompt as a chat template lays it out: what a server's prefix cache compares."""
    return "".join(f"<|{role}|>\n{content}<|end|>\n" for role, content in messages)


def common_prefix(left: str, right: str) -> int:
    size = min(len(left), len(right))
    index = 0
    while index < size and left[index] == right[index]:
        index += 1
    return index


class Endpoint:
    """The offline backend's answers from a backend the tutor takes for a model endpoint."""

    def __init__(self, latency_s: float) -> None:
        self.inner = OfflineBackend()
        self.latency_s = latency_s
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._clock = 0

    def _tick(self) -> int:
        with self._lock:
            self._clock += 1
            return self._clock

    def complete(self, request: LLMRequest) -> LLMResponse:
        call: dict[str, Any] = {"role": request.role, "prompt": render(request.messages)}
        call["started"] = self._tick()
        with self._lock:
            self.calls.append(call)
        time.sleep(self.latency_s)  # a model's time to answer: overlapping calls overlap here
        response = self.inner.complete(request)
        call["ended"] = self._tick()
        return LLMResponse(response.text, response.parsed, role=request.role)


def depths(calls: list[dict[str, Any]]) -> list[int]:
    """Each call's place in the longest chain of calls each started after the previous ended."""
    depth: list[int] = []
    for index, call in enumerate(calls):
        before = [depth[i] for i in range(index) if calls[i]["ended"] < call["started"]]
        depth.append(1 + max(before, default=0))
    return depth


def round_trips(calls: list[dict[str, Any]]) -> int:
    return max(depths(calls), default=0)


def trips_to_actor(calls: list[dict[str, Any]]) -> int:
    """Round trips up to the actor's first draft: what an ordinary turn (no judge) waits for."""
    return next(d for d, call in zip(depths(calls), calls, strict=True) if call["role"] == "actor")


def measure(sessions: int, turns: int, latency_s: float = 0.02) -> dict[str, Any]:
    theories = TheorySet.shipped()
    messages = [m for p in PERSONAS.values() for m in p.messages(topic="arithmetic")]
    calls_per_turn: list[int] = []
    trips_per_turn: list[int] = []
    to_actor: list[int] = []
    tokens_per_turn: list[int] = []
    chatbot_tokens: list[int] = []
    shares: dict[str, list[float]] = defaultdict(list)
    roles: Counter[str] = Counter()
    chatbot_shares: list[float] = []
    for number in range(sessions):
        endpoint = Endpoint(latency_s)
        tutor = Tutor(theories, endpoint, CURRICULUM, MemoryStore())
        session = tutor.start(theory="socratic", exercise="mult_7x8", seed=number)
        previous: dict[str, str] = {}
        history: list[tuple[str, str]] = []
        chatbot_previous = ""
        for index in range(turns):
            message = messages[(number * turns + index) % len(messages)]
            endpoint.calls.clear()
            reply = tutor.turn(session, message).tutor
            calls = list(endpoint.calls)
            roles.update(call["role"] for call in calls)
            calls_per_turn.append(len(calls))
            trips_per_turn.append(round_trips(calls))
            to_actor.append(trips_to_actor(calls))
            tokens_per_turn.append(sum(len(c["prompt"]) for c in calls) // CHARS_PER_TOKEN)
            for call in calls:
                earlier = previous.get(call["role"])
                if earlier is not None:
                    share = common_prefix(earlier, call["prompt"]) / len(call["prompt"])
                    shares[call["role"]].append(share)
                previous[call["role"]] = call["prompt"]
            chatbot = render(
                (
                    ("system", CHATBOT_SYSTEM),
                    *(m for s, t in history for m in (("user", s), ("assistant", t))),
                    ("user", message),
                )
            )
            chatbot_tokens.append(len(chatbot) // CHARS_PER_TOKEN)
            if chatbot_previous:
                chatbot_shares.append(common_prefix(chatbot_previous, chatbot) / len(chatbot))
            chatbot_previous = chatbot
            history = [*history, (message, reply)][-tutor.history_turns :]  # a sliding window
    return {
        "turns": len(calls_per_turn),
        "calls_by_role": dict(sorted(roles.items())),
        "calls_per_turn_median": statistics.median(calls_per_turn),
        "calls_per_turn_max": max(calls_per_turn),
        "round_trips_to_first_draft_max": max(to_actor),
        "round_trips_per_turn_median": statistics.median(trips_per_turn),
        "round_trips_per_turn_max": max(trips_per_turn),
        "turns_over_two_round_trips": sum(1 for t in trips_per_turn if t > 2),
        "prompt_tokens_per_turn_median": statistics.median(tokens_per_turn),
        "chatbot_prompt_tokens_per_turn_median": statistics.median(chatbot_tokens),
        "cached_prefix_share_median": {
            role: round(statistics.median(values), 3) for role, values in sorted(shares.items())
        },
        "cached_prefix_share_min": {
            role: round(min(values), 3) for role, values in sorted(shares.items())
        },
        "chatbot_cached_prefix_share_median": round(statistics.median(chatbot_shares), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--format", choices=("text", "json"), default="text")
    args = parser.parse_args()
    started = time.process_time()
    result = measure(args.sessions, args.turns)
    result["cpu_s"] = round(time.process_time() - started, 2)
    if args.format == "json":
        print(json.dumps(result, indent=2))
        return 0
    to_draft = result["round_trips_to_first_draft_max"]
    print(f"model calls per turn ({result['turns']} turns, socratic, offline answers):")
    print(f"  calls by role: {result['calls_by_role']}")
    print(
        f"  calls per turn: median {result['calls_per_turn_median']:g}, max "
        f"{result['calls_per_turn_max']} (a judged draft adds the judge; a revision, an actor)"
    )
    print(
        f"  sequential round trips up to the first draft: max {to_draft}; goal <= 2 (the "
        f"classifier and analyzer pair, then the actor): {'met' if to_draft <= 2 else 'NOT met'}"
    )
    print(
        f"  sequential round trips per whole turn: median "
        f"{result['round_trips_per_turn_median']:g}, max {result['round_trips_per_turn_max']} "
        f"({result['turns_over_two_round_trips']} turns over 2: judge and revisions)"
    )
    print(
        f"  prompt tokens per turn: median {result['prompt_tokens_per_turn_median']:g} "
        f"(one-call chatbot with the same history: "
        f"{result['chatbot_prompt_tokens_per_turn_median']:g})"
    )
    print("  cached-prefix share (identical to the role's previous prompt, as a prefix):")
    for role, share in result["cached_prefix_share_median"].items():
        lowest = result["cached_prefix_share_min"][role]
        print(f"    {role}: median {share:.1%}, min {lowest:.1%}")
    print(
        f"    one-call chatbot (baseline): median "
        f"{result['chatbot_cached_prefix_share_median']:.1%}"
    )
    print(f"  CPU {result['cpu_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
