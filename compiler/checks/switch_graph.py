"""switch-graph: theory switching that cannot work (unresolved, unreachable, no-progress cycle).

Set-level check (networkx + z3, through `compiler/graphs.py` and the check cache) over every theory in the checked set. Nodes are theory ids,
edges are `adaptation.switch` entries.

- **unresolved**: a switch target that is neither a theory in the checked set nor a theory
  file next to one of the checked files.
- **unreachable**: sessions start at the *entry* theories, those no switch leads to (when
  every theory has an incoming switch, all are entries). A theory no path of switches
  reaches from an entry is unreachable: in practice a closed loop of theories cut off from
  the rest of the set.
- **no-progress cycle**: a cycle makes progress only if the learner's state must change on
  the way round, i.e. the switch conditions along it cannot all hold in one state (metrics
  are shared across theories by name). If z3 finds a state in which every edge of the cycle
  has a switch that fires, the tutor can bounce round the cycle forever while the learner
  stands still; that state is the witness.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pedrag.compiler.check_cache import Memo, remembered
from pedrag.compiler.checks import CheckInfo
from pedrag.compiler.graphs import reachable, simple_cycles
from pedrag.dsl.diagnostics import Diagnostic, Severity
from pedrag.dsl.ir import ResolvedTheory, SwitchInfo
from pedrag.dsl.loader import LoadedFile, load_file

INFO = CheckInfo(
    name="switch-graph",
    severity=Severity.ERROR,
    summary="unresolved, unreachable or cyclic (no-progress) theory switching",
    explanation=(
        "Theories hand a session to each other with `adaptation.switch`. Every target must be a "
        "theory of the set, every theory must be reachable from an entry theory, and a cycle of "
        "switches must require the learner's state to change on the way round; otherwise the "
        "tutor can switch back and forth forever without the learner making progress."
    ),
    example=(
        "# socratic.yaml\n"
        "adaptation:\n"
        "  switch:\n"
        '    - {when: "frustration >= 0.8", to: direct}\n'
        "# direct.yaml\n"
        "adaptation:\n"
        "  switch:\n"
        '    - {when: "frustration >= 0.5", to: socratic}   # also holds at 0.8: ping-pong\n'
    ),
    fix="Make the conditions on a switch cycle exclusive (e.g. switch back only when `frustration < 0.5`), and point every target at a theory of the set.",
    stage="set",
)

MAX_CYCLES = 20


def _neighbour_ids(files: list[LoadedFile], known: set[str]) -> set[str]:
    """Theory ids of YAML files next to the checked ones (targets may live there)."""
    found: set[str] = set()
    checked = {str(Path(f.path).resolve()) for f in files}
    folders = {Path(f.path).resolve().parent for f in files}
    for folder in folders:
        for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")]):
            if str(path.resolve()) in checked:
                continue
            loaded = load_file(path)
            if loaded.theory is not None:
                found.add(loaded.theory.id)
    return found - known


def _cycle_state(
    theories: dict[str, ResolvedTheory],
    edges: list[tuple[str, str, list[SwitchInfo]]],
    memo: Memo | None = None,
) -> tuple[str, dict[str, Any] | None]:
    """`sat` with a state where every switch on the cycle can fire together, else `unsat`/`unknown`.
    Remembered in `memo` by the switches' condition texts and their metrics' domains."""
    from pedrag.compiler.encode import Domain, Translator
    from pedrag.dsl.printer import to_text

    domains: dict[str, Domain] = {}
    parts = []
    for source, _target, switches in edges:
        translator = Translator(theories[source])
        options = [translator.condition(s.when.expr) for s in switches]
        for name, domain in translator.domains.items():
            seen = domains.get(name)
            if seen is None:
                domains[name] = domain
            elif seen.kind != domain.kind or seen.values != domain.values:
                return "unknown", None
            elif seen.kind in ("int", "real"):
                domains[name] = Domain(
                    name,
                    seen.kind,
                    max(seen.low, domain.low),
                    min(seen.high, domain.high),
                    metric=name,
                )
        parts.append(options)
    key = (
        "switch cycle",
        tuple((s, t, tuple(to_text(x.when.expr) for x in switches)) for s, t, switches in edges),
        tuple(sorted(d.signature() for d in domains.values())),
    )
    return remembered(
        memo, repr(key), lambda: _solve_cycle(domains, parts), keep=lambda a: a[0] != "unknown"
    )


def _solve_cycle(
    domains: dict[str, Any], options: list[list[Any]]
) -> tuple[str, dict[str, Any] | None]:
    import z3

    from pedrag.compiler import formula as F
    from pedrag.compiler.z3_encoding import Z3Encoding

    parts = [F.or_(found) for found in options]
    encoding = Z3Encoding(domains)
    goal = encoding.term(F.and_(parts))
    solver = z3.Solver()
    solver.set("timeout", 10_000)
    solver.add(*encoding.constraints, goal)
    result = solver.check()
    if result == z3.unsat:
        return "unsat", None
    if result != z3.sat:
        return "unknown", None
    model = solver.model()
    from pedrag.compiler.analysis import present

    names = sorted(set().union(*(p.vars for p in parts)))
    return "sat", {n: present(encoding.value(model, n), domains[n].kind) for n in names}


def run(files: list[LoadedFile], memo: Memo | None = None) -> Iterator[Diagnostic]:
    """The check over the checked set; `memo` (the check cache) keeps the graph answers."""
    theories: dict[str, ResolvedTheory] = {}
    for loaded in files:
        if loaded.theory is not None and loaded.ok and loaded.theory.id not in theories:
            theories[loaded.theory.id] = loaded.theory
    if not theories:
        return
    switches_between: dict[tuple[str, str], list[SwitchInfo]] = {}
    neighbours: set[str] | None = None
    for theory in theories.values():
        for switch in theory.switches:
            if switch.to in theories:
                switches_between.setdefault((theory.id, switch.to), []).append(switch)
                continue
            if neighbours is None:
                neighbours = _neighbour_ids(files, set(theories))
            if switch.to in neighbours:
                continue  # exists beside the checked files; check the folder to check the cycle
            yield Diagnostic(
                check=INFO.name,
                severity=INFO.severity,
                message=f"theory `{theory.id}` switches to `{switch.to}`, which is not a theory in the checked set",
                span=switch.span,
                items=(f"theory:{theory.id}", f"theory:{switch.to}"),
                help="check the target's id (theory.id), or include its file in the check",
            )
    nodes = list(theories)
    edges = list(switches_between)
    if edges:
        targets = {target for _, target in edges}
        entries = [t for t in theories if t not in targets] or list(theories)
        reached = reachable(nodes, edges, entries, memo)
        for theory_id, theory in theories.items():
            if theory_id not in reached:
                yield Diagnostic(
                    check=INFO.name,
                    severity=INFO.severity,
                    message=(
                        f"theory `{theory_id}` is unreachable: no chain of switches leads to it from an entry theory "
                        f"({', '.join(sorted(entries))})"
                    ),
                    span=theory.span,
                    items=(f"theory:{theory_id}",),
                    help="add a switch to it from a reachable theory, or check it as a separate set",
                )
    found = simple_cycles(nodes, edges, memo) if edges else []
    cycles = sorted(found, key=lambda c: (len(c), c))[:MAX_CYCLES]
    for cycle in cycles:
        start = cycle.index(min(cycle))
        cycle = cycle[start:] + cycle[:start]
        on_cycle: list[tuple[str, str, list[SwitchInfo]]] = []
        for i, source in enumerate(cycle):
            target = cycle[(i + 1) % len(cycle)]
            on_cycle.append((source, target, switches_between[(source, target)]))
        status, witness = _cycle_state(theories, on_cycle, memo)
        path = " -> ".join([*cycle, cycle[0]])
        first = on_cycle[0][2][0]
        if status == "unsat":
            continue
        if status == "unknown":
            yield Diagnostic(
                check=INFO.name,
                severity=Severity.WARNING,
                message=f"unknown: could not decide whether switch cycle {path} needs progress",
                span=first.span,
                items=tuple(f"theory:{t}" for t in cycle),
                data={"result": "unknown"},
                help="metrics shared by name across these theories have different types, or the solver timed out",
            )
            continue
        yield Diagnostic(
            check=INFO.name,
            severity=INFO.severity,
            message=(
                f"switch cycle {path} can repeat without progress: every switch on it can fire in the same "
                "state, so the tutor can switch round forever while the learner's state stays put"
            ),
            span=first.span,
            items=tuple(f"theory:{t}" for t in cycle),
            witness=witness,
            help=INFO.fix,
            data={"cycle": cycle},
        )
