"""Cycles and reachability of the set-level checks' small graphs, remembered by content.

Compiler stage helper for `switch-graph` (theories and their switches) and
`curriculum-cycle` (goals and their prerequisites). networkx answers; the answers are kept
in the check cache under the graph's nodes and edges in the order given (which is all
networkx's answer depends on), so a re-check whose graphs did not change does not even import
networkx, the largest import of a cached `pedrag check`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pedrag.compiler.check_cache import Memo, remembered

Edge = tuple[str, str]


def simple_cycles(
    nodes: Sequence[str], edges: Sequence[Edge], memo: Memo | None = None
) -> list[list[str]]:
    """Every elementary cycle of the directed graph (`networkx.simple_cycles`)."""

    def compute() -> list[list[str]]:
        import networkx as nx

        graph = nx.DiGraph()
        graph.add_nodes_from(nodes)
        graph.add_edges_from(edges)
        return [list(cycle) for cycle in nx.simple_cycles(graph)]

    return remembered(memo, repr(("cycles", tuple(nodes), tuple(edges))), compute)


def reachable(
    nodes: Sequence[str], edges: Sequence[Edge], sources: Sequence[str], memo: Memo | None = None
) -> set[str]:
    """The nodes some path of edges leads to from `sources`, the sources included."""

    def compute() -> list[str]:
        import networkx as nx

        graph = nx.DiGraph()
        graph.add_nodes_from(nodes)
        graph.add_edges_from(edges)
        found: set[str] = set()
        for source in sources:
            found |= {source} | nx.descendants(graph, source)
        return sorted(found)

    key = ("reachable", tuple(nodes), tuple(edges), tuple(sources))
    return set(remembered(memo, repr(key), compute))
