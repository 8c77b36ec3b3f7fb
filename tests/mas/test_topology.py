from __future__ import annotations

import random

import networkx as nx
import pytest

from misguard.errors import ConfigError
from misguard.mas import TOPOLOGIES, build_graph, graph_from_adjacency, graph_from_edges, topology_names

AGENTS = [f"agent_{i}" for i in range(1, 6)]


def test_registry_walk_every_topology_builds_a_usable_graph():
    assert set(topology_names()) == {"self", "chain", "full", "circle", "star", "random", "custom"}
    for entry in TOPOLOGIES:
        graph = entry.factory(AGENTS, random.Random(0))
        assert isinstance(graph, nx.DiGraph), entry.name
        assert sorted(graph.nodes) == AGENTS, entry.name
        assert nx.number_of_selfloops(graph) == 0, entry.name
        assert all(graph.out_degree(a) >= 1 for a in AGENTS), entry.name
        assert nx.is_weakly_connected(graph), entry.name
        assert "paper" in entry.metadata


@pytest.mark.parametrize(
    ("name", "n_edges"), [("chain", 8), ("full", 20), ("circle", 10), ("star", 8)]
)
def test_shapes(name, n_edges):
    graph = build_graph(name, AGENTS)
    assert graph.number_of_edges() == n_edges


def test_star_hub_and_circle_closes():
    star = build_graph("star", AGENTS)
    assert set(star.successors("agent_1")) == set(AGENTS[1:])
    assert set(star.successors("agent_3")) == {"agent_1"}
    circle = build_graph("circle", AGENTS)
    assert circle.has_edge("agent_5", "agent_1") and circle.has_edge("agent_1", "agent_5")
    chain = build_graph("chain", AGENTS)
    assert not chain.has_edge("agent_5", "agent_1")


def test_random_is_seeded():
    a = build_graph("random", AGENTS, seed=1)
    b = build_graph("random", AGENTS, seed=1)
    assert sorted(a.edges) == sorted(b.edges)
    others = {tuple(sorted(build_graph("random", AGENTS, seed=s).edges)) for s in range(2, 8)}
    assert len(others) > 1


def test_custom_edges_and_errors():
    graph = build_graph("custom", AGENTS, edges=[("agent_1", "agent_2"), ("agent_2", "agent_3")])
    assert sorted(graph.edges) == [("agent_1", "agent_2"), ("agent_2", "agent_3")]
    with pytest.raises(ConfigError, match="unknown agent"):
        graph_from_edges(AGENTS, [("agent_1", "agent_9")])
    with pytest.raises(ConfigError, match="self-loop"):
        graph_from_edges(AGENTS, [("agent_1", "agent_1")])
    with pytest.raises(ConfigError, match="edge list"):
        build_graph("custom", AGENTS)
    with pytest.raises(ConfigError, match="known"):
        build_graph("hexagon", AGENTS)


def test_adjacency_proposal_is_repaired_and_reported():
    graph, repairs = graph_from_adjacency(
        AGENTS, {"agent_1": ["agent_2", "agent_1", "boss"], "ghost": ["agent_1"], "agent_2": "agent_3"}
    )
    assert sorted(graph.edges) == [("agent_1", "agent_2"), ("agent_2", "agent_3")]
    assert len(repairs) == 3
