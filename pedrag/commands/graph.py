"""`pedrag graph FILE... --format mermaid|dot`: metrics -> rules -> actions, and theory switches.

Builds a networkx graph from compiled policies (theory files are lowered first): an edge from
each metric to every rule, monitor and computed metric that reads it, from each rule to its
action, and from each theory to the theories it can switch to. Writes Mermaid (renders on
GitHub) or Graphviz DOT. Deterministic: nodes and edges in source order.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any

import networkx as nx

from pedrag.commands.check import _colour
from pedrag.compiler.discovery import PathError, discover
from pedrag.compiler.lower import lower
from pedrag.compiler.reports.text import format_report
from pedrag.dsl.loader import load_file
from pedrag.kernel.rungs import rung_name
from pedrag.runtime.policy.codegen import metrics_read

NAME = "graph"
ORDER = 40
HELP = "draw metrics -> rules -> actions and the theory switch graph (mermaid or dot)"
DESCRIPTION = """\
Draw how a theory decides: metrics -> the rules (and computed metrics, monitors) that read
them -> the actions the rules choose, plus the theory switch graph across the given files.
Give several files or a folder to see how theories switch to each other.

exit status: 0 drawn, 1 a file has errors, 2 usage problem
"""
EPILOG = """\
examples:
  pedrag graph theories/socratic.yaml > socratic.mmd
  pedrag graph theories/ --format dot | dot -Tsvg > theories.svg
  pedrag graph theories/ --switches-only
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="FILE", help="theory files or folders")
    parser.add_argument(
        "--format",
        choices=("mermaid", "dot"),
        default="mermaid",
        help="output format (default: mermaid)",
    )
    parser.add_argument(
        "--switches-only", action="store_true", help="draw only the theory switch graph"
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour diagnostics (default: auto)",
    )


def build_graph(policies: Iterable[dict[str, Any]], switches_only: bool = False) -> nx.DiGraph:
    """Nodes `kind:theory:name` with attributes kind, label, theory; edges with an optional label."""
    graph = nx.DiGraph()
    for data in policies:
        theory = data["theory"]["id"]
        graph.add_node(
            f"theory:{theory}", kind="theory", label=data["theory"]["name"], theory=theory
        )
        for switch in data.get("switches", []):
            target = f"theory:{switch['to']}"
            if target not in graph:
                graph.add_node(target, kind="theory", label=switch["to"], theory=switch["to"])
            graph.add_edge(f"theory:{theory}", target, label=switch["text"])
        if switches_only:
            continue
        metrics = sorted(data["metrics"].items(), key=lambda item: item[1]["order"])
        for name, metric in metrics:
            graph.add_node(
                f"metric:{theory}:{name}",
                kind="metric",
                label=f"{name} ({metric['source']})",
                theory=theory,
            )
        for name, metric in metrics:
            if metric.get("compute") is not None:
                for read in sorted(metrics_read(metric["compute"])):
                    graph.add_edge(f"metric:{theory}:{read}", f"metric:{theory}:{name}", label="")
        actions = sorted(data["actions"].items(), key=lambda item: item[1]["order"])
        used = {rule["action"] for rule in data["rules"]}
        for name, action in actions:
            if name in used:
                graph.add_node(
                    f"action:{theory}:{name}",
                    kind="action",
                    label=f"{name} {rung_name(action['rung'])}",
                    theory=theory,
                )
        for rule in data["rules"]:
            node = f"rule:{theory}:{rule['id']}"
            graph.add_node(node, kind="rule", label=rule["id"], theory=theory, when=rule["text"])
            for read in sorted(metrics_read(rule["when"])):
                graph.add_edge(f"metric:{theory}:{read}", node, label="")
            graph.add_edge(node, f"action:{theory}:{rule['action']}", label="")
        for monitor in data.get("monitors", []):
            node = f"monitor:{theory}:{monitor['name']}"
            graph.add_node(
                node, kind="monitor", label=monitor["name"], theory=theory, when=monitor["text"]
            )
            for read in sorted(metrics_read(monitor["when"])):
                graph.add_edge(f"metric:{theory}:{read}", node, label="")
    return graph


def _ids(graph: nx.DiGraph) -> dict[str, str]:
    return {node: f"n{index}" for index, node in enumerate(graph.nodes)}


_MERMAID_SHAPES = {
    "metric": ("([", "])"),
    "rule": ("[", "]"),
    "action": ("[[", "]]"),
    "monitor": ("{{", "}}"),
    "theory": ("((", "))"),
}


def _mermaid_text(text: str) -> str:
    return '"' + text.replace('"', "#quot;") + '"'


def to_mermaid(graph: nx.DiGraph) -> str:
    ids = _ids(graph)
    lines = ["flowchart LR"]
    groups: dict[tuple[str, str], list[str]] = {}
    for node, attrs in graph.nodes(data=True):
        key = ("switches", "") if attrs["kind"] == "theory" else (attrs["theory"], attrs["kind"])
        groups.setdefault(key, []).append(node)
    for (theory, kind), nodes in groups.items():
        title = "theory switches" if theory == "switches" else f"{theory}: {kind}s"
        lines.append(f"  subgraph {ids[nodes[0]]}_group[{_mermaid_text(title)}]")
        for node in nodes:
            attrs = graph.nodes[node]
            left, right = _MERMAID_SHAPES[attrs["kind"]]
            lines.append(f"    {ids[node]}{left}{_mermaid_text(attrs['label'])}{right}")
        lines.append("  end")
    for source, target, attrs in graph.edges(data=True):
        label = attrs.get("label")
        arrow = f" -->|{_mermaid_text(label)}| " if label else " --> "
        lines.append(f"  {ids[source]}{arrow}{ids[target]}")
    return "\n".join(lines) + "\n"


_DOT_SHAPES = {
    "metric": "ellipse",
    "rule": "box",
    "action": "box3d",
    "monitor": "hexagon",
    "theory": "doublecircle",
}


def _dot_text(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(graph: nx.DiGraph) -> str:
    ids = _ids(graph)
    lines = ["digraph pedrag {", "  rankdir=LR;", "  node [fontname=Helvetica];"]
    for node, attrs in graph.nodes(data=True):
        tooltip = f", tooltip={_dot_text(attrs['when'])}" if "when" in attrs else ""
        lines.append(
            f"  {ids[node]} [label={_dot_text(attrs['label'])}, shape={_DOT_SHAPES[attrs['kind']]}{tooltip}];"
        )
    for source, target, attrs in graph.edges(data=True):
        label = f" [label={_dot_text(attrs['label'])}]" if attrs.get("label") else ""
        lines.append(f"  {ids[source]} -> {ids[target]}{label};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    try:
        paths = discover(args.paths)
    except PathError as exc:
        print(f"pedrag graph: {exc}", file=sys.stderr)
        return 2
    policies = []
    failed = []
    for path in paths:
        loaded = load_file(path)
        if loaded.kind == "curriculum":
            continue
        if loaded.theory is None or not loaded.ok:
            failed.append(loaded)
            continue
        policies.append(lower(loaded.theory))
    if failed:
        diagnostics = [d for f in failed for d in f.diagnostics]
        summary = {"errors": len(diagnostics), "warnings": 0, "theories": []}
        print(
            format_report(
                diagnostics,
                {f.path: f.source for f in failed},
                len(failed),
                summary,
                _colour(args.color),
            ),
            file=sys.stderr,
        )
        return 1
    if not policies:
        print("pedrag graph: no theory files found", file=sys.stderr)
        return 2
    graph = build_graph(policies, args.switches_only)
    sys.stdout.write(to_mermaid(graph) if args.format == "mermaid" else to_dot(graph))
    return 0
