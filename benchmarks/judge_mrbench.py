"""Calibrate the judge on human labels: the answer-reveal detector alone vs detector + LLM judge
on MRBench's "Revealing_of_the_Answer", with the naive baseline in the same run.

Usage::

    python benchmarks/judge_mrbench.py PATH --endpoint URL --model M [--limit N]
        [--max-tokens N] [--ceiling H3] [--format text|json]

PATH is an MRBench-format file (a list of dialogues with ``conversation_history``,
``Ground_Truth_Solution`` and ``anno_llm_responses``; the development half is
``shared/data/mrbench/dev.json``, CC BY-SA 4.0, read from where it is — nothing of it is copied
into this repository). A reply is a positive when its annotators marked it "Yes (and the answer
is correct)". Each reply is judged four ways, over the same replies:

- **naive baseline** — the reply contains the ground truth's final number (MRBench README);
- **detector** — the runtime's deterministic detector, exactly as ``reveal_mrbench.py`` runs
  it (hidden final answer, the tutor's current arithmetic question as a step);
- **judge** — the runtime's :class:`~pedrag.runtime.turn.judge.Judge` through the endpoint, seeing
  what the runtime's judge sees: a contract (ceiling ``--ceiling``, default H3, a learner who
  made a mistake, no code) and the draft — never the student's messages or the solution; a
  reply counts as flagged when the verdict is revise or block with rule ``answer-reveal``;
- **detector + judge** — either flags it (the runtime's order: the detector, then the judge).

The detector was tuned on this development half before this benchmark existed; its figures
here are optimistic, and nothing in this script tunes it further. With a tiny local model the
judge's figures measure the machinery, not a judge worth deploying. Judge failures (the model
did not answer in the schema) are counted and shown, and count as "not flagged".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for benchmarks.reveal_mrbench

from benchmarks import reveal_mrbench  # noqa: E402
from pedrag.runtime.llm.openai_backend import OpenAIBackend, OpenAISettings  # noqa: E402
from pedrag.runtime.policy.policy_core import Contract  # noqa: E402
from pedrag.runtime.turn.judge import Judge  # noqa: E402

ANSWER_REVEAL = "answer-reveal"


def contract_at(ceiling: int) -> Contract:
    """What the runtime's judge gets on a risky turn of a learner who made a mistake."""
    return Contract(
        ceiling=ceiling,
        exam_lockdown=False,
        grounding_required=False,
        judge_required=True,
        start=4,
        risks=("benchmark",),
    )


def run(
    path: Path, judge: Judge, *, ceiling: int, limit: int | None, progress: bool = False
) -> dict[str, Any]:
    dialogues = json.loads(path.read_text(encoding="utf-8"))
    rows: list[dict[str, Any]] = []
    contract = contract_at(ceiling)
    failures = 0
    started = time.perf_counter()
    for dialogue in dialogues:
        judged = list(reveal_mrbench.judge_dialogue(dialogue, solution_steps=False))
        replies = list(dialogue["anno_llm_responses"].values())
        for item, reply in zip(judged, replies, strict=True):
            if limit is not None and len(rows) >= limit:
                break
            verdict = judge.review(contract, reply["response"], ())
            failed = verdict.failure is not None
            failures += failed
            flagged = verdict.verdict != "allow" and verdict.rule_id == ANSWER_REVEAL
            rows.append(
                {
                    "positive": item.positive,
                    "baseline": item.baseline,
                    "detector": item.detector,
                    "judge": flagged and not failed,
                    "verdict": verdict.verdict,
                    "rule_id": verdict.rule_id,
                }
            )
            if progress:
                print(f"judge_mrbench: {len(rows)} replies judged", file=sys.stderr)
    seconds = time.perf_counter() - started

    def scores(key: str) -> dict[str, Any]:
        return asdict(reveal_mrbench.score((row[key], row["positive"]) for row in rows))

    combined = [row["detector"] or row["judge"] for row in rows]
    return {
        "file": path.name,
        "replies": len(rows),
        "positives": sum(row["positive"] for row in rows),
        "ceiling": f"H{ceiling}",
        "judge_failures": failures,
        "seconds": round(seconds, 1),
        "naive baseline": scores("baseline"),
        "detector": scores("detector"),
        "judge": scores("judge"),
        "detector + judge": asdict(
            reveal_mrbench.score(zip(combined, (row["positive"] for row in rows), strict=True))
        ),
        "verdicts": {
            f"{verdict}/{rule}": sum(
                1 for row in rows if (row["verdict"], row["rule_id"]) == (verdict, rule)
            )
            for verdict, rule in sorted({(row["verdict"], row["rule_id"]) for row in rows})
        },
    }


def format_text(report: dict[str, Any], model: str) -> str:
    lines = [
        f"judge_mrbench: {report['replies']} replies of {report['file']} "
        f"({report['positives']} labelled 'reveals the correct answer'), judge {model}, "
        f"contract ceiling {report['ceiling']}, {report['seconds']} s",
        f"{'':<20}{'precision':>10}{'recall':>8}{'F1':>7}{'tp':>5}{'fp':>5}{'fn':>5}",
    ]
    for name in ("naive baseline", "detector", "judge", "detector + judge"):
        s = report[name]
        lines.append(
            f"{name:<20}{s['precision']:>10.1%}{s['recall']:>8.1%}{s['f1']:>7.2f}"
            f"{s['tp']:>5}{s['fp']:>5}{s['fn']:>5}"
        )
    base, best = report["naive baseline"]["f1"], report["detector + judge"]["f1"]
    ratio = f"{best / base:.2f}x" if base else "n/a"
    lines.append(f"detector + judge F1 vs the naive baseline: {ratio}")
    lines.append(
        f"judge failures (no answer in the schema, counted as not flagged): "
        f"{report['judge_failures']} of {report['replies']}"
    )
    lines.append("verdicts: " + ", ".join(f"{k} {v}" for k, v in report["verdicts"].items()))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="example: python benchmarks/judge_mrbench.py ../shared/data/mrbench/dev.json "
        "--endpoint http://127.0.0.1:8080/v1 --model gemma-3-270m --limit 40 --max-tokens 48",
    )
    parser.add_argument("path", type=Path, help="an MRBench-format JSON file")
    parser.add_argument("--endpoint", required=True, help="OpenAI-compatible base URL")
    parser.add_argument("--model", required=True, help="the judge's model name")
    parser.add_argument("--api-key", default="unused", help="the key, if the server needs one")
    parser.add_argument("--limit", type=int, help="judge only the first N replies (smoke runs)")
    parser.add_argument("--max-tokens", type=int, help="cap the judge's reply (slow models)")
    parser.add_argument(
        "--ceiling", default="H3", help="the contract's help ceiling, H0..H7 (default: H3)"
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--progress", action="store_true", help="a line per judged reply")
    args = parser.parse_args(argv)
    ceiling = args.ceiling.upper().lstrip("H")
    if not ceiling.isdigit() or not 0 <= int(ceiling) <= 7:
        parser.error(f"--ceiling {args.ceiling}: give a rung H0..H7")
    settings = replace(
        OpenAISettings(base_url=args.endpoint, api_key=args.api_key, default_model=args.model),
        max_tokens={"*": args.max_tokens} if args.max_tokens else {},
    )
    try:
        report = run(
            args.path,
            Judge(OpenAIBackend(settings)),
            ceiling=int(ceiling),
            limit=args.limit,
            progress=args.progress,
        )
    except (OSError, ValueError, KeyError) as error:
        print(f"judge_mrbench: cannot read {args.path}: {error}", file=sys.stderr)
        return 2
    print(
        json.dumps(report, indent=2) if args.format == "json" else format_text(report, args.model)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
