"""Localization picks the hand-computed channels on small graphs of every topology
(ties go to the graph's edge order), and re-localizes on goals and traffic."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from misguard.defenses.argus import (
    Localizer,
    LocalizationWeights,
    SenderRiskHistory,
    Traffic,
    edge_betweenness,
    localization_quality,
)
from misguard.mas import build_graph, graph_from_edges

A = [f"agent_{i}" for i in range(1, 6)]


def edges(*pairs: str) -> set[tuple[str, str]]:
    return {(f"agent_{p[0]}", f"agent_{p[1]}") for p in pairs}


def test_chain_of_five_round_one():
    # Betweenness (ordered pairs through each edge): 1->2: 4, 2->3: 6, 3->4: 6, 4->5: 4, and
    # the mirror. Best per source: 1->2, 2->3, 3->2 (tie with 3->4: graph order), 4->3, 5->4;
    # the sixth channel is the best remaining, 3->4.
    graph = build_graph("chain", A)
    assert set(Localizer().first_round(graph).channels) == edges("12", "23", "32", "43", "54", "34")
    assert set(Localizer(top_k=3).first_round(graph).channels) == edges("23", "32", "43")


def test_star_of_five_round_one():
    # Every edge carries 4 ordered pairs: ties everywhere. Each source's first edge, then
    # the next edge in graph order.
    graph = build_graph("star", A)
    assert set(Localizer().first_round(graph).channels) == edges("12", "21", "31", "41", "51", "13")


def test_circle_of_four_round_one():
    # A ring both ways: every edge carries 1 + 0.5 + 0.5 = 2 (two shortest paths to the
    # opposite agent). Firsts: 1->2, 2->1, 3->2, 4->3; then 1->4.
    graph = build_graph("circle", A[:4])
    assert set(Localizer().first_round(graph).channels) == edges("12", "21", "32", "43", "14")


def test_full_of_three_round_one():
    graph = build_graph("full", A[:3])
    assert set(Localizer().first_round(graph).channels) == edges("12", "21", "31", "13")


def test_self_determined_graph_round_one():
    # 1->2, 1->3, 2->3, 3->1. Paths: 2->1 via 3, 3->2 via 1. Betweenness 1->2: 2, 1->3: 1,
    # 2->3: 2, 3->1: 3.
    graph = graph_from_edges(A[:3], [("agent_1", "agent_2"), ("agent_1", "agent_3"), ("agent_2", "agent_3"), ("agent_3", "agent_1")])
    assert edge_betweenness(graph) == pytest.approx(
        {("agent_1", "agent_2"): 2 / 6, ("agent_1", "agent_3"): 1 / 6, ("agent_2", "agent_3"): 2 / 6, ("agent_3", "agent_1"): 3 / 6}
    )
    assert set(Localizer(top_k=2).first_round(graph).channels) == edges("31", "12")
    assert set(Localizer(top_k=3).first_round(graph).channels) == edges("31", "12", "23")


@pytest.mark.parametrize("topology", ["chain", "full", "circle", "star", "random"])
def test_igraph_and_networkx_agree(topology):
    graph = build_graph(topology, A, seed=3)
    ours = edge_betweenness(graph)
    reference = nx.edge_betweenness_centrality(graph, normalized=True)
    assert ours == pytest.approx({(a, b): v for (a, b), v in reference.items()})


def test_later_round_weights_relevance_frequency_and_topology():
    graph = graph_from_edges(A[:3], [("agent_1", "agent_2"), ("agent_1", "agent_3"), ("agent_2", "agent_3"), ("agent_3", "agent_1")])
    e1, e2 = np.eye(3)[0], np.eye(3)[1]
    traffic = Traffic(
        [("agent_1", "agent_2"), ("agent_2", "agent_3"), ("agent_3", "agent_1"), ("agent_3", "agent_1")],
        [np.stack([e1, e2]), np.stack([0.6 * e1 + 0.8 * e2]), np.stack([e2]), np.zeros((0, 3))],
    )
    # relevance (threshold 0.5, rescaled): 1->2: 1.0, 2->3: 0.2; frequency [1, 0, 1, 2] -> [.5, 0, .5, 1];
    # topology [2, 1, 2, 3] -> [.5, 0, .5, 1]. Scores: 1->2 .8, 1->3 0, 2->3 .32, 3->1 .4.
    loc = Localizer(LocalizationWeights(0.2, 0.6, 0.2, 0.5), top_k=2).later_round(graph, 2, traffic, np.stack([e1]))
    assert loc.channels == [("agent_1", "agent_2"), ("agent_3", "agent_1")]
    assert loc.scores == pytest.approx({("agent_1", "agent_2"): 0.8, ("agent_1", "agent_3"): 0.0,
                                        ("agent_2", "agent_3"): 0.32, ("agent_3", "agent_1"): 0.4})
    # Without goals relevance is zero everywhere: topology and frequency decide.
    no_goals = Localizer(LocalizationWeights(0.2, 0.6, 0.2, 0.5), top_k=1).later_round(graph, 2, traffic, None)
    assert no_goals.channels == [("agent_3", "agent_1")]


def test_risk_follows_the_sender_onto_edges_that_carried_nothing():
    # full topology of three: agent_3 sent a risky message to agent_1 only; it may pick
    # agent_2 next round, so both of its edges take its risk (its mean sentence risk), by delta
    graph = build_graph("full", A[:3])
    e1 = np.eye(3)[0]
    traffic = Traffic([("agent_1", "agent_2"), ("agent_2", "agent_1"), ("agent_3", "agent_1")],
                      [np.stack([e1])] * 3, [np.array([0.1]), np.array([0.2, 0.3]), np.array([0.7, 0.9])])
    history = SenderRiskHistory()
    history.record(1, traffic)
    weights = LocalizationWeights(0.2, 0.6, 0.2, 0.5, delta=0.6)
    loc = Localizer(weights, top_k=2).later_round(graph, 2, traffic, None, history.mean())
    assert set(loc.channels) == {("agent_3", "agent_1"), ("agent_3", "agent_2")}
    base = Localizer(LocalizationWeights(0.2, 0.6, 0.2, 0.5), top_k=2).later_round(graph, 2, traffic, None)
    for edge, score in loc.scores.items():
        assert score == pytest.approx(base.scores[edge] + 0.6 * {"agent_1": 0.1, "agent_2": 0.25, "agent_3": 0.8}[edge[0]])


def test_localization_quality():
    graph_edges = [("a", "b"), ("a", "c"), ("b", "a"), ("c", "a")]
    q = localization_quality([("a", "b"), ("b", "a")], ["a"], graph_edges)
    assert q == {"monitored": 2, "hijacked_edges": 2, "hits": 1, "precision": 0.5, "recall": 0.5}


def test_sender_risk_history_means_every_sentence_so_far_and_rerecording_a_round_replaces_it():
    e1 = np.eye(3)[0]
    history = SenderRiskHistory()
    round1 = Traffic([("agent_1", "agent_2"), ("agent_2", "agent_1"), ("agent_2", "agent_3")], [np.stack([e1])] * 3,
                     [np.array([0.95, 0.05, 0.0, 0.0]), np.array([0.6, 0.7]), np.array([0.5])])
    history.record(1, round1)
    history.record(1, round1)  # asked twice for the same round: counted once
    assert history.mean() == pytest.approx({"agent_1": 0.25, "agent_2": 0.6})
    history.record(2, Traffic([("agent_1", "agent_2")], [np.stack([e1])], [np.array([0.0, 0.0, 0.0, 0.0])]))
    assert history.mean() == pytest.approx({"agent_1": 0.125, "agent_2": 0.6})


def test_sender_risk_ranks_the_agent_that_is_risky_throughout_above_one_spike():
    # agent_1 said one very risky sentence among harmless ones; agent_2 is risky in every
    # sentence: the sender's mean gives agent_2 both of its edges
    graph = build_graph("full", A[:3])
    e1 = np.eye(3)[0]
    traffic = Traffic([("agent_1", "agent_2"), ("agent_2", "agent_1")], [np.stack([e1])] * 2,
                      [np.array([0.95, 0.05, 0.0, 0.0]), np.array([0.6, 0.7])])
    weights = LocalizationWeights(0.2, 0.6, 0.2, 0.5, delta=0.6)
    history = SenderRiskHistory()
    history.record(1, traffic)
    mean = Localizer(weights, top_k=2).later_round(graph, 2, traffic, None, history.mean())
    assert set(mean.channels) == {("agent_2", "agent_1"), ("agent_2", "agent_3")}
