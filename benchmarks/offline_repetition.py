"""How often the offline tutor repeats itself, over every persona x every shipped exercise.

Runs `pedrag simulate`'s loop (the scripted personas of `pedrag.runtime.llm.personas`, offline
backend, in-memory store) for each persona on each exercise of the shipped curriculum, under one
theory, and counts per session: replies identical to an earlier reply of the same session
("repeated") and replies identical to the one just before ("back-to-back"). Also counts
sessions whose goal mastery reached the curriculum's threshold, and how many of those had a
correct graded answer (the acceptance: mastery only on graded evidence). The baseline measured in
the same run is the action template alone (what the offline tutor said before the curriculum's
teaching material): the same selection, the reply replaced by the filled template.

Also the distinct-reply ratio (issue 27): distinct replies per session over turns (1.0 when no
reply repeats within its session), the share of distinct replies over the whole run, and the
sentences said most often across all sessions (stock sentences).

    python benchmarks/offline_repetition.py [--theory socratic|all] [--turns 20] [--format json]
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter, defaultdict
from typing import Any

from pedrag.runtime.llm.personas import PERSONAS
from pedrag.runtime.store.memory import MemoryStore
from pedrag.runtime.turn.generator import template_reply
from pedrag.runtime.turn.tutor import Tutor

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def measure(theory: str = "socratic", turns: int = 20, seed: int = 7) -> dict[str, Any]:
    tutor = Tutor(store=MemoryStore())
    everything: Counter[str] = Counter()
    sentences: Counter[str] = Counter()
    repeated_examples: list[dict[str, str]] = []
    curriculum = tutor.curriculum
    goals = {goal.id: goal for goal in curriculum.goals}
    threshold = {goal.id: goal.mastery_threshold for goal in curriculum.goals}
    totals: dict[str, int] = defaultdict(int)
    by_domain: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    by_persona: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    back_examples: list[dict[str, str]] = []
    worst: list[tuple[float, str, str]] = []
    for exercise in curriculum.exercises:
        if exercise.exam:
            continue
        domain = goals[exercise.goal].domain
        for name, persona in PERSONAS.items():
            session = tutor.start(theory, exercise.id, seed=seed)
            topic = session.exercise.topic if session.exercise else "this problem"
            replies: list[str] = []
            templates: list[str] = []
            graded_correct = False
            for message in persona.messages(turns, topic=topic):
                policy = tutor.theories[session.state.theory_id].policy
                result = tutor.turn(session, message)
                replies.append(result.tutor)
                action = policy.actions.get(result.action)
                templates.append(template_reply(action, topic) if action else result.tutor)
                graded_correct |= result.audit["grade"]["verdict"] == "correct"
            repeated = sum(reply in replies[:i] for i, reply in enumerate(replies))
            everything.update(replies)
            sentences.update(part for reply in replies for part in _SENTENCE.split(reply) if part)
            for i, reply in enumerate(replies):
                if reply in replies[:i] and len(repeated_examples) < 3:
                    repeated_examples.append(
                        {"persona": name, "exercise": exercise.id, "reply": reply}
                    )
            back = sum(replies[i] == replies[i - 1] for i in range(1, len(replies)))
            base_rep = sum(t in templates[:i] for i, t in enumerate(templates))
            base_back = sum(templates[i] == templates[i - 1] for i in range(1, len(templates)))
            mastered = any(
                record.get("mastery", 0.0) >= threshold.get(goal, 1.0)
                for goal, record in session.state.extra.get("goal_records", {}).items()
            )
            for i in range(1, len(replies)):
                if replies[i] == replies[i - 1] and len(back_examples) < 3:
                    back_examples.append(
                        {"persona": name, "exercise": exercise.id, "reply": replies[i]}
                    )
            for bucket in (totals, by_domain[domain], by_persona[name]):
                bucket["sessions"] += 1
                bucket["turns"] += len(replies)
                bucket["repeated"] += repeated
                bucket["distinct"] += len(set(replies))
                bucket["back_to_back"] += back
                bucket["baseline_repeated"] += base_rep
                bucket["baseline_back_to_back"] += base_back
            totals["mastered"] += mastered
            totals["mastered_without_correct"] += mastered and not graded_correct
            worst.append((repeated / len(replies), name, exercise.id))
    worst.sort(reverse=True)
    return {
        "theory": theory,
        "turns_per_session": turns,
        "exercises": sum(1 for e in curriculum.exercises if not e.exam),
        "personas": len(PERSONAS),
        "totals": dict(totals),
        "by_domain": {domain: dict(counts) for domain, counts in sorted(by_domain.items())},
        "by_persona": {name: dict(counts) for name, counts in by_persona.items()},
        "back_to_back_examples": back_examples,
        "repeated_examples": repeated_examples,
        "distinct_ratio": round(totals["distinct"] / totals["turns"], 4) if totals["turns"] else 0,
        "distinct_overall": round(len(everything) / totals["turns"], 4) if totals["turns"] else 0,
        "stock_sentences": [
            {"sentence": text, "count": count} for text, count in sentences.most_common(5)
        ],
        "worst_sessions": [
            {"persona": p, "exercise": e, "repeated_share": round(s, 3)} for s, p, e in worst[:5]
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--theory", default="socratic", help="a theory id, or `all`")
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--format", choices=["text", "json"], default="text")
    args = parser.parse_args()
    theories = (
        ["socratic", "constructivism", "direct_instruction", "srl"]
        if args.theory == "all"
        else [args.theory]
    )
    if args.format == "json":
        reports = [measure(theory, args.turns) for theory in theories]
        print(json.dumps(reports if len(reports) > 1 else reports[0], indent=2))
        return
    for theory in theories:
        _print(measure(theory, args.turns))  # each theory as soon as it is measured


def _print(report: dict[str, Any]) -> None:
    t = report["totals"]
    print(
        f"{report['theory']}: {report['personas']} personas x {report['exercises']} exercises x "
        f"{report['turns_per_session']} turns = {t['turns']} turns"
    )

    def pct(n: int, d: int) -> str:
        return f"{100 * n / d:.1f}%" if d else "n/a"

    print(
        f"  repeated replies: {t['repeated']} ({pct(t['repeated'], t['turns'])}); "
        f"back-to-back: {t['back_to_back']}"
    )
    print(
        f"  distinct-reply ratio: {report['distinct_ratio']:.3f} within sessions, "
        f"{report['distinct_overall']:.3f} over the run"
    )
    for item in report["repeated_examples"]:
        print(f"  repeated: {item['persona']} on {item['exercise']}: {item['reply']!r}")
    for item in report["stock_sentences"]:
        print(f"  most said: {item['count']:5d}x {item['sentence']!r}")
    print(
        f"  baseline (template alone): repeated {t['baseline_repeated']} "
        f"({pct(t['baseline_repeated'], t['turns'])}); back-to-back {t['baseline_back_to_back']}"
    )
    for domain, c in report["by_domain"].items():
        print(
            f"  {domain:12s} sessions {c['sessions']:3d}  repeated {pct(c['repeated'], c['turns']):>6s}"
            f"  back-to-back {c['back_to_back']}"
        )
    for name, c in report["by_persona"].items():
        print(
            f"  {name:18s} repeated {pct(c['repeated'], c['turns']):>6s}"
            f"  back-to-back {c['back_to_back']}"
        )
    for item in report["back_to_back_examples"]:
        print(f"  back-to-back: {item['persona']} on {item['exercise']}: {item['reply']!r}")
    print(
        f"  sessions reaching mastery: {t.get('mastered', 0)} "
        f"(without a correct graded answer: {t.get('mastered_without_correct', 0)})"
    )
    for item in report["worst_sessions"]:
        print(f"  worst: {item['persona']} on {item['exercise']}: {item['repeated_share']}")


if __name__ == "__main__":
    main()
