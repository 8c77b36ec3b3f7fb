"""Communication graphs. A topology is a directed graph over worker ids; an edge (a, b)
means a may send to b. Every named topology is in `TOPOLOGIES`.

    chain   a bidirectional line a1 <-> a2 <-> ... <-> an (as upstream)
    full    every ordered pair
    circle  a bidirectional ring (chain plus an <-> a1), from the paper
    star    a1 is the hub, bidirectional spokes to every other agent, from the paper
    random  a seeded directed G(n, 0.5), repaired so every agent can send and receive
    self    the planner proposes the graph (see `graph_from_adjacency`)
    custom  any edge list (`graph_from_edges`)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..registry import Registry

if TYPE_CHECKING:
    import networkx as nx  # imported where used: it adds ~0.1-0.4 s to every CLI start

TopologyFactory = Callable[[Sequence[str], random.Random], "nx.DiGraph"]

TOPOLOGIES: Registry[nx.DiGraph] = Registry("topology")


def _empty(agents: Sequence[str]) -> nx.DiGraph:
    if len(set(agents)) != len(agents):
        raise ConfigError(f"agent ids must be unique: {list(agents)}")
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(agents)
    return graph


def _both(graph: nx.DiGraph, a: str, b: str) -> None:
    if a != b:
        graph.add_edge(a, b)
        graph.add_edge(b, a)


@TOPOLOGIES.register("chain", paper=True)
def chain(agents: Sequence[str], rng: random.Random | None = None) -> nx.DiGraph:
    graph = _empty(agents)
    for a, b in zip(agents, agents[1:]):
        _both(graph, a, b)
    return graph


@TOPOLOGIES.register("full", paper=True)
def full(agents: Sequence[str], rng: random.Random | None = None) -> nx.DiGraph:
    graph = _empty(agents)
    graph.add_edges_from((a, b) for a in agents for b in agents if a != b)
    return graph


@TOPOLOGIES.register("circle", paper=True)
def circle(agents: Sequence[str], rng: random.Random | None = None) -> nx.DiGraph:
    graph = chain(agents)
    if len(agents) > 2:
        _both(graph, agents[-1], agents[0])
    return graph


@TOPOLOGIES.register("star", paper=True)
def star(agents: Sequence[str], rng: random.Random | None = None) -> nx.DiGraph:
    graph = _empty(agents)
    for leaf in agents[1:]:
        _both(graph, agents[0], leaf)
    return graph


@TOPOLOGIES.register("random", paper=False)
def random_graph(agents: Sequence[str], rng: random.Random | None = None, p: float = 0.5) -> nx.DiGraph:
    """Seeded G(n, p); then every agent gets at least one out- and one in-edge, and the
    graph is made weakly connected, so no agent is mute or deaf."""
    rng = rng or random.Random(0)
    graph = _empty(agents)
    for a in agents:
        for b in agents:
            if a != b and rng.random() < p:
                graph.add_edge(a, b)
    if len(agents) < 2:
        return graph
    for a in agents:
        if graph.out_degree(a) == 0:
            graph.add_edge(a, rng.choice([b for b in agents if b != a]))
        if graph.in_degree(a) == 0:
            graph.add_edge(rng.choice([b for b in agents if b != a]), a)
    import networkx as nx

    components = [sorted(c) for c in nx.weakly_connected_components(graph)]
    components.sort()
    for left, right in zip(components, components[1:]):
        _both(graph, left[0], right[0])
    return graph


@TOPOLOGIES.register("self", paper=True, planner_decides=True)
def self_determined(agents: Sequence[str], rng: random.Random | None = None) -> nx.DiGraph:
    """Placeholder until the planner proposes a graph: the runtime replaces it."""
    return chain(agents)


def graph_from_edges(agents: Sequence[str], edges: Iterable[tuple[str, str]]) -> nx.DiGraph:
    """A custom topology. Unknown agents and self-loops are errors."""
    graph = _empty(agents)
    known = set(agents)
    for edge in edges:
        if len(edge) != 2:
            raise ConfigError(f"an edge is a pair (sender, receiver), got {edge!r}")
        a, b = edge
        if a not in known or b not in known:
            raise ConfigError(f"edge {a!r} -> {b!r} names an unknown agent; agents: {list(agents)}")
        if a == b:
            raise ConfigError(f"self-loop {a!r} -> {b!r} is not allowed")
        graph.add_edge(a, b)
    return graph


def graph_from_adjacency(
    agents: Sequence[str], adjacency: Mapping[str, Sequence[str]]
) -> tuple[nx.DiGraph, list[str]]:
    """The planner's proposal, repaired: unknown names and self-loops are dropped.

    Returns the graph and a list of what was repaired (empty when the proposal was clean).
    """
    graph = _empty(agents)
    known = set(agents)
    repairs: list[str] = []
    for sender, receivers in adjacency.items():
        if sender not in known:
            repairs.append(f"unknown sender {sender!r}")
            continue
        for receiver in receivers if isinstance(receivers, (list, tuple)) else [receivers]:
            if receiver not in known or receiver == sender:
                repairs.append(f"bad edge {sender!r} -> {receiver!r}")
                continue
            graph.add_edge(sender, str(receiver))
    return graph, repairs


def build_graph(
    topology: str,
    agents: Sequence[str],
    *,
    seed: int = 0,
    edges: Iterable[tuple[str, str]] | None = None,
) -> nx.DiGraph:
    """Build a named topology (or `custom` from `edges`) over `agents`, seeded."""
    if topology == "custom":
        if edges is None:
            raise ConfigError("topology 'custom' needs an edge list")
        return graph_from_edges(agents, edges)
    rng = random.Random(f"topology:{seed}")
    return TOPOLOGIES.build(topology, list(agents), rng)
