"""`pedrag replay --theory-file NEW.yaml`: what an edited theory would have changed in the
sessions already recorded.

Command (designer tool). Takes the session database's audit records (read through
`runtime/store/session_store.SessionStore`, never written) and an edited theory file; gives,
per recorded turn of that theory, the ceiling, eligible rules and choice (each action's
probability) under the theory the session ran (the old side) and under the edited one, and
totals: how many turns and sessions would have gone differently, by rule.

How a turn is re-run: the audit holds the state the policy core and the rule engine read
(trusted, classified and inferred metrics); each policy computes its own computed metrics
and history calls from the session's turns so far, as the turn loop does, and the turn goes
through `runtime/policy/policy_core.compute_contract` and `RuleEngine.choose` with no model
(the offline fallback selector) and no adaptation plan. Both sides take that same path, so
a difference is the edit's and not the replay's. The old side is the theory the record names,
from `--old-theory-file`, `--theories DIR` or the shipped set; a turn whose recorded ceiling
or eligible rules that theory does not reproduce is counted as such (the theory was edited
since, or the record is from another version) and left out of the comparison.

Why: before shipping an edit, a designer asks what it would have changed in last week's
sessions; `pedrag diff` answers over the whole state space, this over the states that occur.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pedrag.commands._options import add_db_option, add_format_option
from pedrag.commands.diff import probability_text
from pedrag.kernel.errors import PedragError
from pedrag.kernel.rungs import rung_name

NAME = "replay"
ORDER = 33
HELP = "re-run recorded sessions' turns under an edited theory: which turns would differ"
DESCRIPTION = """\
Re-run every recorded turn of a theory (the trusted, classified and inferred metrics its audit
record holds; computed metrics and history calls recomputed) through the edited theory's
compiled policy and through the theory the session ran, and report per turn the old and new
ceiling, eligible rules and choice (each action's probability), and totals: how many turns and
sessions would have gone differently, by rule. No model is called: with no eligible rule the
offline fallback selector chooses, and the behavioural monitor's plan is not applied.

The old theory is --old-theory-file, else the theory of the record's id in --theories DIR or
the shipped set. Turns whose recorded ceiling or eligible rules the old theory does not
reproduce are counted and left out.

exit status: 0 replayed (with --exit-code: 0 no turn differs / 1 some turn differs),
2 usage problem (bad database, file, date, or no such session)
"""
EPILOG = """\
examples:
  pedrag replay --theory-file theories/socratic.yaml --since 2026-11-25
  pedrag replay --db sessions.db --session 3f2a9c1b7d4e --theory-file edited.yaml --format json

a run: three offline sessions (`pedrag simulate --offline --exercise mult_7x8 --turns 5` as
struggling-sarah, answer-seeker, injector), then socratic's catch_all_encourage narrowed from
`true` to `reasoning_quality == vague` in edited.yaml:

  $ pedrag replay --db sessions.db --theory-file edited.yaml
  replayed 11 turns of 3 sessions of theory socratic under edited.yaml:
    4 turns in 2 sessions would have gone differently
    4 turns ran under another theory (not replayed)
  by rule (turns): catch_all_encourage 4
  session 661fbe5543db
    turn 1: encourage_to_continue 0.00% -> 0%, help_restate 99.58% -> 99.58%, restate_problem 0.12% -> 0.12%, analogy 0.10% -> 0.10%
        no longer eligible: catch_all_encourage
    turn 3: encourage_to_continue 0.08% -> 0%, acknowledge_then_small_step 76.57% -> 76.63%, acknowledge_and_encourage 17.23% -> 17.24%, normalize_struggle 6.13% -> 6.13%
        no longer eligible: catch_all_encourage
  session 7789945fedcf
    turn 1: encourage_to_continue 0.50% -> 0%, withhold_and_redirect 59.70% -> 60.00%, elicit_prior_knowledge 39.80% -> 40.00%
        no longer eligible: catch_all_encourage
    turn 3: encourage_to_continue 0.44% -> 0%, withhold_and_redirect 53.10% -> 53.33%, elicit_prior_knowledge 35.40% -> 35.56%, pump_for_more 11.06% -> 11.11%
        no longer eligible: catch_all_encourage
"""

LIMIT_SESSIONS = 1_000_000
TOLERANCE = 1e-9


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--theory-file", required=True, metavar="NEW.yaml", help="the edited theory file"
    )
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("--session", metavar="ID", help="replay one session")
    scope.add_argument(
        "--since", metavar="DATE", help="replay sessions updated on or after DATE (ISO 8601)"
    )
    parser.add_argument(
        "--theory",
        metavar="ID",
        help="only sessions that started under this theory id (default: every session)",
    )
    parser.add_argument(
        "--old-theory-file",
        metavar="OLD.yaml",
        help="the theory the sessions ran (default: the record's theory id, from --theories "
        "or the shipped set)",
    )
    parser.add_argument("--theories", metavar="DIR", help="find the old theories in this folder")
    add_db_option(parser)
    add_format_option(parser)
    parser.add_argument(
        "--all", action="store_true", help="list every turn (default: the turns that differ)"
    )
    parser.add_argument(
        "--exit-code", action="store_true", help="exit 1 when some turn would have differed"
    )


class ReplayError(PedragError):
    """A usage problem: reported on stderr, exit 2."""


# -- one turn under one policy ---------------------------------------------------------------
@dataclass(frozen=True)
class Decision:
    """What one policy decides in one recorded state."""

    ceiling: int
    eligible: tuple[str, ...]
    choice: dict[str, float]  # action -> probability (the fallback's action at 1)
    fallback: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "ceiling": rung_name(self.ceiling),
            "eligible": list(self.eligible),
            "choice": {a: round(p, 6) for a, p in sorted(self.choice.items())},
            "fallback_selector": self.fallback,
        }


class PolicyReplay:
    """One compiled policy run over a session's recorded turns, history kept per session."""

    def __init__(self, policy: Any) -> None:
        from pedrag.runtime.policy.rule_engine import RuleEngine

        self.policy = policy
        self.engine = RuleEngine(policy)
        self.rows: list[dict[str, Any]] = []

    def start_session(self) -> None:
        self.rows = []

    def decide(self, record: Mapping[str, Any], seed: Any) -> Decision:
        from pedrag.runtime.policy.policy_core import PolicyInput, compute_contract

        trusted = dict(record.get("trusted") or {})
        classified = dict(record.get("classified") or {})
        snapshot = {**dict(record.get("inferred") or {}), **trusted, **classified}
        history = [*self.rows, snapshot]
        row = {**snapshot, **self.policy.computed(history)}
        self.rows.append(row)
        turn = self.policy.prepare([*self.rows[:-1], row])
        contract = compute_contract(PolicyInput.of(trusted, classified), self.policy)
        rng = random.Random(f"{seed}:{record.get('turn')}")
        chosen = self.engine.choose(turn, contract, rng, plan=None, selector=None)
        if chosen.fallback_selector:
            return Decision(contract.ceiling, (), {chosen.action: 1.0}, True)
        actions = {rule.id: rule.action for rule in self.policy.rules}
        choice: dict[str, float] = {}
        for rule_id, share in chosen.probabilities.items():
            choice[actions[rule_id]] = choice.get(actions[rule_id], 0.0) + share
        return Decision(
            contract.ceiling,
            chosen.eligible,
            {a: p for a, p in choice.items() if p > TOLERANCE},
            False,
        )


def _recorded(record: Mapping[str, Any]) -> tuple[int | None, tuple[str, ...] | None]:
    """The recorded ceiling and eligible rules."""
    contract = record.get("contract") or {}
    choice = record.get("choice") or {}
    ceiling = contract.get("ceiling")
    rung = int(ceiling[1:]) if isinstance(ceiling, str) and ceiling[1:].isdigit() else None
    eligible = choice.get("eligible")
    return rung, tuple(eligible) if isinstance(eligible, list) else None


# -- the comparison ----------------------------------------------------------------------------
@dataclass
class TurnResult:
    session: str
    turn: int
    old: Decision
    new: Decision
    rules: list[str]  # the rules the difference is attributed to

    @property
    def differs(self) -> bool:
        return bool(self.rules)


@dataclass
class Replay:
    theory: str
    new_file: str
    turns: list[TurnResult] = field(default_factory=list)
    sessions: int = 0
    other_theory: int = 0  # turns recorded under another theory id
    not_reproduced: list[tuple[str, int]] = field(default_factory=list)

    @property
    def changed(self) -> list[TurnResult]:
        return [t for t in self.turns if t.differs]

    def by_rule(self) -> list[tuple[str, int]]:
        counts: Counter[str] = Counter()
        for result in self.changed:
            counts.update(result.rules)
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _same_choice(old: Mapping[str, float], new: Mapping[str, float]) -> bool:
    return all(abs(old.get(a, 0.0) - new.get(a, 0.0)) <= TOLERANCE for a in {*old, *new})


def _attribute(old: Decision, new: Decision, old_policy: Any, new_policy: Any) -> list[str]:
    """The rules a difference is due to: those whose eligibility changed, else the eligible
    rules whose action, weight or priority was edited; `(ceiling)` for a ceiling change that
    changed no rule's eligibility; [] when nothing differs."""
    if (
        old.ceiling == new.ceiling
        and old.eligible == new.eligible
        and _same_choice(old.choice, new.choice)
    ):
        return []
    moved = sorted(set(old.eligible) ^ set(new.eligible))
    if moved:
        return moved
    before = {r.id: (r.action, r.weight, r.priority) for r in old_policy.rules}
    after = {r.id: (r.action, r.weight, r.priority) for r in new_policy.rules}
    edited = [r for r in new.eligible if before.get(r) != after.get(r)]
    if edited:
        return edited
    if old.ceiling != new.ceiling:
        return ["(ceiling)"]
    return ["(order)"]  # the same rules and keys, in another order (priority ties)


def replay(
    sessions: Sequence[tuple[str, Mapping[str, Any], list[dict[str, Any]]]],
    new_policy: Any,
    old_policy_for: Any,
    new_file: str,
) -> Replay:
    """Re-run the recorded turns of `new_policy`'s theory under it and under the old policy
    (`old_policy_for(theory_id)`)."""
    theory = new_policy.theory_id
    result = Replay(theory, new_file)
    new_side = PolicyReplay(new_policy)
    old_policy = old_policy_for(theory)
    old_side = PolicyReplay(old_policy)
    for session_id, meta, records in sessions:
        mine = [r for r in records if r.get("theory") == theory]
        result.other_theory += len(records) - len(mine)
        if not mine:
            continue
        result.sessions += 1
        new_side.start_session()
        old_side.start_session()
        seed = meta.get("seed", 0)
        for record in mine:
            old = old_side.decide(record, seed)
            new = new_side.decide(record, seed)
            turn = int(record.get("turn", 0))
            ceiling, eligible = _recorded(record)
            if (ceiling, eligible) != (old.ceiling, old.eligible):
                result.not_reproduced.append((session_id, turn))
                continue
            rules = _attribute(old, new, old_policy, new_policy)
            result.turns.append(TurnResult(session_id, turn, old, new, rules))
    return result


# -- reports -----------------------------------------------------------------------------------
def _choice_text(old: Mapping[str, float], new: Mapping[str, float]) -> str:
    if len(old) == 1 and len(new) == 1 and old != new:
        return f"{next(iter(old))} -> {next(iter(new))}"
    changed = sorted(
        (a for a in {*old, *new} if abs(old.get(a, 0.0) - new.get(a, 0.0)) > TOLERANCE),
        key=lambda a: (-abs(new.get(a, 0.0) - old.get(a, 0.0)), a),
    )
    if not changed:
        return "the same choice"
    return ", ".join(
        f"{a} {probability_text(old.get(a))} -> {probability_text(new.get(a))}" for a in changed[:4]
    )


def _turn_text(result: TurnResult) -> list[str]:
    old, new = result.old, result.new
    lines = [f"  turn {result.turn}: {_choice_text(old.choice, new.choice)}"]
    if old.ceiling != new.ceiling:
        lines.append(f"      ceiling {rung_name(old.ceiling)} -> {rung_name(new.ceiling)}")
    gone = [r for r in old.eligible if r not in new.eligible]
    came = [r for r in new.eligible if r not in old.eligible]
    if gone:
        lines.append(f"      no longer eligible: {', '.join(gone)}")
    if came:
        lines.append(f"      newly eligible: {', '.join(came)}")
    if result.differs and not gone and not came:
        lines.append(f"      edited, eligible: {', '.join(result.rules)}")
    return lines


def to_text(result: Replay, every: bool) -> str:
    changed = result.changed
    sessions_changed = len({t.session for t in changed})
    sessions_replayed = len({t.session for t in result.turns})
    lines = [
        f"replayed {len(result.turns)} turns of {sessions_replayed} sessions of theory "
        f"{result.theory} under {result.new_file}:",
        f"  {len(changed)} turns in {sessions_changed} sessions would have gone differently",
    ]
    if result.not_reproduced:
        lines.append(
            f"  {len(result.not_reproduced)} turns left out: the old theory does not reproduce "
            "their recorded ceiling or eligible rules"
        )
    if result.other_theory:
        lines.append(f"  {result.other_theory} turns ran under another theory (not replayed)")
    by_rule = result.by_rule()
    if by_rule:
        lines.append("by rule (turns): " + ", ".join(f"{r} {n}" for r, n in by_rule))
    current = None
    for turn in result.turns if every else changed:
        if turn.session != current:
            current = turn.session
            lines.append(f"session {current}")
        if turn.differs:
            lines.extend(_turn_text(turn))
        else:
            lines.append(f"  turn {turn.turn}: unchanged")
    return "\n".join(lines) + "\n"


def to_json(result: Replay, every: bool) -> dict[str, Any]:
    changed = result.changed
    return {
        "theory": result.theory,
        "new_file": result.new_file,
        "turns_replayed": len(result.turns),
        "sessions_replayed": len({t.session for t in result.turns}),
        "turns_changed": len(changed),
        "sessions_changed": len({t.session for t in changed}),
        "by_rule": dict(result.by_rule()),
        "turns_not_reproduced": [{"session": s, "turn": t} for s, t in result.not_reproduced],
        "turns_under_other_theories": result.other_theory,
        "turns": [
            {
                "session": t.session,
                "turn": t.turn,
                "differs": t.differs,
                "rules": t.rules,
                "old": t.old.to_json(),
                "new": t.new.to_json(),
            }
            for t in (result.turns if every else changed)
        ],
    }


# -- the command -----------------------------------------------------------------------------
def _load_policy(path: str) -> Any:
    from pedrag.dsl.loader import load_file
    from pedrag.runtime.policy.theory_set import compile_theory

    try:
        loaded = load_file(path)
    except OSError as exc:
        raise ReplayError(f"cannot read {path}: {exc}") from None
    if loaded.theory is None or not loaded.ok:
        first = next(iter(loaded.diagnostics), None)
        raise ReplayError(
            f"{path} does not check cleanly" + (f": {first.message}" if first else "")
        )
    return compile_theory(loaded.theory)


def _old_policies(args: argparse.Namespace) -> Any:
    from pedrag.runtime.policy.theory_set import TheoryLoadError, TheorySet

    if args.old_theory_file:
        policy = _load_policy(args.old_theory_file)
        return lambda theory_id: policy
    try:
        theories = TheorySet.from_paths([args.theories]) if args.theories else TheorySet.shipped()
    except TheoryLoadError as exc:
        raise ReplayError(str(exc)) from None

    def find(theory_id: str) -> Any:
        if theory_id not in theories:
            raise ReplayError(
                f"no theory `{theory_id}` to replay the old side with; give --old-theory-file"
            )
        return theories[theory_id].policy

    return find


def _since(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ReplayError(f"--since {text!r} is not an ISO 8601 date") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _sessions(args: argparse.Namespace) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    from pedrag.runtime.store.session_store import SessionNotFound, SessionStore, StoreError

    try:
        store = SessionStore(args.db)
    except StoreError as error:
        raise ReplayError(str(error)) from None
    out = []
    with store:
        try:
            if args.session:
                meta, _, _ = store.load_session(args.session)
                chosen = [(args.session, meta)]
            else:
                since = _since(args.since) if args.since else None
                listed = sorted(
                    store.list_sessions(LIMIT_SESSIONS), key=lambda i: (i["created_at"], i["id"])
                )
                chosen = [
                    (item["id"], item["meta"])
                    for item in listed
                    if since is None or item["updated_at"] >= since
                ]
            for session_id, meta in chosen:  # oldest first
                if args.theory and meta.get("theory") != args.theory:
                    continue
                out.append((session_id, meta, store.audit_records(session_id)))
        except SessionNotFound:
            raise ReplayError(f"no session {args.session!r} in {store.url}") from None
        except StoreError as error:
            raise ReplayError(str(error)) from None
    return out


def run(args: argparse.Namespace) -> int:
    try:
        new_policy = _load_policy(args.theory_file)
        old_policy_for = _old_policies(args)
        sessions = _sessions(args)
        result = replay(sessions, new_policy, old_policy_for, args.theory_file)
    except ReplayError as error:
        print(f"pedrag replay: {error}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps(to_json(result, args.all), indent=2))
    else:
        print(to_text(result, args.all), end="")
    return 1 if args.exit_code and result.changed else 0
