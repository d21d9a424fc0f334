"""Stage 11, the audit: one record per turn, and the readable trace ``pedrag audit`` prints.

Takes what every stage of the turn returned; gives a plain JSON dict (the store saves it in the
same transaction as the new state) with: the budget decision, the classification and
inference (labels and numbers, never the student's text unless the deployment keeps
transcripts), the contract and which step set it, matched and eligible rules, the chosen action
and why, the detector and judge verdicts with reasons, the fallback and revision flags, metric
deltas, the adaptation, latency, tokens, cost and every failure.

Why a reason on everything: seed 2, §4.4 — recording the judge's *reason*, not just its
verdict, is what turned an ambiguous pass rate into a diagnosis.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

AUDIT_VERSION = 1


def metric_deltas(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, list[Any]]:
    """``{name: [before, after]}`` for every metric whose value changed."""
    deltas: dict[str, list[Any]] = {}
    for name, value in after.items():
        old = before.get(name)
        if old != value:
            deltas[name] = [_rounded(old), _rounded(value)]
    return deltas


def _rounded(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value


def format_trace(records: Iterable[Mapping[str, Any]], *, session: str = "") -> str:
    """A readable per-turn trace: state, contract and which step set it, rules, action and
    why, verdicts and reasons, failures."""
    lines = [f"session {session}"] if session else []
    for record in records:
        contract = record.get("contract", {})
        choice = record.get("choice", {})
        lines.append("")
        lines.append(
            f"turn {record.get('turn')}  theory {record.get('theory')}  "
            f"{record.get('latency_ms', 0):.1f} ms  tokens {record.get('tokens', 0)}  "
            f"${record.get('cost_usd', 0):.4f}"
        )
        if "student" in record:
            lines.append(f"  student   {record['student']!r}")
        classified = ", ".join(f"{k}={v}" for k, v in record.get("classified", {}).items())
        lines.append(f"  classified {classified or '-'}")
        inferred = ", ".join(f"{k}={_short(v)}" for k, v in record.get("inferred", {}).items())
        lines.append(f"  inferred  {inferred or '-'}")
        trusted = ", ".join(f"{k}={_short(v)}" for k, v in record.get("trusted", {}).items())
        lines.append(f"  trusted   {trusted or '-'}")
        lines.append(
            f"  contract  ceiling {contract.get('ceiling')} (start {contract.get('start')}, "
            f"set by {contract.get('set_by')}); exam lockdown {contract.get('exam_lockdown')}; "
            f"judge {'required' if contract.get('judge_required') else 'not required'}"
            + (f" ({', '.join(contract.get('risks', []))})" if contract.get("risks") else "")
        )
        for step in contract.get("step_trace", []):
            lines.append(
                f"            {step['step']}: {step['effect']} ({step['before']} -> {step['after']})"
            )
        lines.append(f"  matched   {', '.join(choice.get('matched', [])) or '-'}")
        lines.append(f"  eligible  {', '.join(choice.get('eligible', [])) or '-'}")
        lines.append(
            f"  action    {choice.get('action')} ({choice.get('rung')}): {choice.get('reason')}"
        )
        detector = record.get("detector", {})
        lines.append(
            f"  detector  {'FLAGGED ' + ', '.join(detector.get('rule_ids', [])) if detector.get('flagged') else 'clear'}"
            f": {detector.get('reason', '')}"
        )
        for attempt in record.get("drafts", []):
            if attempt.get("judge") not in (None, "allow"):
                lines.append(
                    f"            draft {attempt.get('n')} rejected by the judge "
                    f"[{attempt.get('judge_rule_id')}]: {attempt.get('judge_reason')}"
                )
            elif attempt.get("support"):
                lines.append(
                    f"            draft {attempt.get('n')} rejected by the support check "
                    f"[grounding]: {attempt.get('support')}"
                )
            elif attempt.get("flagged"):
                lines.append(
                    f"            draft {attempt.get('n')} rejected: {attempt.get('reason')}"
                )
        grounding = record.get("grounding")
        if grounding:
            shown = ", ".join(item["citation"] for item in grounding.get("shown", [])) or "none"
            cited_ = ", ".join(grounding.get("cited", [])) or "none"
            lines.append(
                f"  grounding {grounding.get('kind')} in course {grounding.get('course')}: "
                f"shown {shown}; cited {cited_}"
                + (
                    f"; {grounding['withheld']} withheld (state the answer)"
                    if grounding.get("withheld")
                    else ""
                )
            )
        judge = record.get("judge")
        if judge:
            lines.append(f"  judge     {judge['verdict']} [{judge['rule_id']}]: {judge['reason']}")
        else:
            lines.append("  judge     not consulted (no risk)")
        lines.append(
            f"  outcome   {'FALLBACK (templated reply)' if record.get('fallback') else 'sent'}"
            + (", revised once" if record.get("revised") else "")
        )
        if "tutor" in record:
            lines.append(f"  tutor     {record['tutor']!r}")
        adaptation = record.get("adaptation") or {}
        if adaptation.get("fired"):
            lines.append(
                f"  monitors  {', '.join(adaptation['fired'])}: {adaptation.get('reason')}"
            )
        deltas = record.get("metric_deltas", {})
        if deltas:
            shown = ", ".join(f"{k} {_short(v[0])}->{_short(v[1])}" for k, v in deltas.items())
            lines.append(f"  deltas    {shown}")
        for failure in record.get("failures", []):
            lines.append(f"  FAILURE   {failure['stage']}: {failure['error']}")
    return "\n".join(lines).lstrip("\n") + "\n"


def _short(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)
