"""Where to monitor: ARGUS's channel localization on the directed communication graph.

Round 1 (no traffic yet): normalised edge betweenness. Each source agent's best outgoing
edge is taken first (so monitoring covers many senders, not one hub), then the rest by
score, up to k channels (default: number of agents + 1).

Later rounds: score = alpha * topology + beta * relevance + gamma * frequency, plain top-k.
    topology   edge betweenness, min-max normalised over the graph's edges (raw normalised
               betweenness shrinks like 1/n^2 and would weigh nothing on large graphs)
    relevance  per sentence of each message the edge carried last round, the MEAN cosine to
               the inferred goals; counted only above the threshold and rescaled from it to
               [0, 1] (embedders like e5 put unrelated sentences at ~0.75, so the raw cosine
               would make every edge look relevant); best sentence per message, best
               message per edge; 0 without goals
    frequency  messages on the edge last round, min-max normalised (all equal -> 0.5)
    risk       (beyond the paper, with a message risk model, weight delta) a score of the
               edge's SENDER, whatever edge it used: an agent picks a receiver each round,
               so a hijacked agent's next message may take an edge that carried nothing yet.
               ARGUS passes the mean sentence risk of everything the sender sent so far
               (`SenderRiskHistory`): a hijacked agent states the false claim in most of its
               sentences, an honest one in few.

Betweenness comes from igraph (C) when installed, else networkx; the two agree (tested).
On 2000 agents x 10 out-edges igraph took 2.0 s where rustworkx took 3.2 s (parallel, both
cores busy with other work) and networkx minutes. It is cached per edge set: the graph does
not change between rounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import networkx as nx  # imported where used: it adds ~0.1-0.4 s to every CLI start

Edge = tuple[str, str]


@dataclass(frozen=True)
class LocalizationWeights:
    """The paper's alpha / beta / gamma and the relevance threshold."""

    alpha: float = 0.2
    beta: float = 0.6
    gamma: float = 0.2
    relevance_threshold: float = 0.4
    delta: float = 0.0


@dataclass(frozen=True)
class Traffic:
    """Last round's messages, as sentence embeddings per message.

    Attributes:
        edges: the (sender, receiver) of each message.
        sentence_vectors: one (n_i, d) array of unit vectors per message (n_i may be 0).
        sentence_risks: one (n_i,) array of misinformation risks per message, when a
            risk model scored them (None: no risk term).
    """

    edges: Sequence[Edge]
    sentence_vectors: Sequence[np.ndarray]
    sentence_risks: Sequence[np.ndarray] | None = None


@dataclass
class SenderRiskHistory:
    """Each sender's sentence risks, summed and counted per round; `mean()` is its mean
    sentence risk over every round recorded. Keyed by round: recording a round again
    replaces it (a defense may be asked for the same round twice)."""

    rounds: dict[int, dict[str, tuple[float, int]]] = field(default_factory=dict)

    def record(self, round: int, traffic: Traffic) -> None:
        totals: dict[str, tuple[float, int]] = {}
        for (sender, _), risks in zip(traffic.edges, traffic.sentence_risks or ()):
            total, count = totals.get(sender, (0.0, 0))
            totals[sender] = (total + float(np.sum(risks)), count + len(risks))
        self.rounds[round] = totals

    def mean(self) -> dict[str, float]:
        total: dict[str, float] = {}
        count: dict[str, int] = {}
        for per_sender in self.rounds.values():
            for sender, (s, n) in per_sender.items():
                total[sender] = total.get(sender, 0.0) + s
                count[sender] = count.get(sender, 0) + n
        return {sender: total[sender] / count[sender] for sender in total if count[sender]}


@dataclass(frozen=True)
class Localization:
    """The channels chosen for one round and why."""

    round: int
    channels: list[Edge]
    scores: dict[Edge, float] = field(default_factory=dict)
    mode: str = "topology"

    def as_dict(self, top: int = 50) -> dict[str, Any]:
        best = sorted(self.scores.items(), key=lambda kv: -kv[1])[:top]
        return {
            "round": self.round,
            "mode": self.mode,
            "channels": [list(e) for e in self.channels],
            "top_scores": [[a, b, round(s, 4)] for (a, b), s in best],
        }


def edge_betweenness(graph: nx.DiGraph) -> dict[Edge, float]:
    """Normalised edge betweenness of a directed graph: ordered pairs whose shortest paths
    run through the edge, over n(n-1). igraph (C) when installed, else networkx."""
    n = graph.number_of_nodes()
    try:
        import igraph
    except ImportError:
        import networkx as nx

        return {(str(a), str(b)): float(v) for (a, b), v in nx.edge_betweenness_centrality(graph, normalized=True).items()}
    nodes = list(graph.nodes())
    index = {node: i for i, node in enumerate(nodes)}
    edge_list = list(graph.edges())
    g = igraph.Graph(n=n, edges=[(index[a], index[b]) for a, b in edge_list], directed=True)
    scale = 1.0 / (n * (n - 1)) if n > 1 else 1.0
    values = g.edge_betweenness(directed=True)
    return {(str(a), str(b)): float(v) * scale for (a, b), v in zip(edge_list, values)}


def _minmax(values: np.ndarray, equal: float = 0.5) -> np.ndarray:
    if values.size == 0:
        return values
    lo, hi = float(values.min()), float(values.max())
    if hi - lo <= 1e-12:
        return np.full_like(values, equal, dtype=float)
    return (values - lo) / (hi - lo)


class Localizer:
    """Chooses the channels to monitor, round by round (see the module docstring).

    Args:
        weights: alpha, beta, gamma and the relevance threshold.
        top_k: channels per round; None -> number of agents + 1.
    """

    def __init__(self, weights: LocalizationWeights | None = None, top_k: int | None = None) -> None:
        self.weights = weights or LocalizationWeights()
        self.top_k = top_k
        self._cache_key: frozenset[Edge] | None = None
        self._edges: list[Edge] = []
        self._topology = np.zeros(0)

    def clear_cache(self) -> None:
        """Forget the cached betweenness (the next call recomputes it)."""
        self._cache_key = None

    def k_for(self, graph: nx.DiGraph) -> int:
        return self.top_k if self.top_k is not None else graph.number_of_nodes() + 1

    def topology(self, graph: nx.DiGraph) -> tuple[list[Edge], np.ndarray]:
        """Edges in the graph's order and their raw betweenness (cached per edge set)."""
        key = frozenset((str(a), str(b)) for a, b in graph.edges())
        if key != self._cache_key:
            scores = edge_betweenness(graph)
            self._edges = [(str(a), str(b)) for a, b in graph.edges()]
            self._topology = np.array([scores[e] for e in self._edges], dtype=float)
            self._cache_key = key
        return self._edges, self._topology

    def first_round(self, graph: nx.DiGraph, round: int = 1) -> Localization:
        """Betweenness only; every source's best outgoing edge first, then the rest."""
        edges, topo = self.topology(graph)
        chosen = _per_source_then_rest(edges, topo, self.k_for(graph))
        return Localization(round, chosen, dict(zip(edges, topo.tolist())), "topology")

    def later_round(
        self, graph: nx.DiGraph, round: int, traffic: Traffic, goal_vectors: np.ndarray | None,
        sender_risk: dict[str, float] | None = None,
    ) -> Localization:
        """Topology, relevance to the goals, frequency and (with `sender_risk`, sender ->
        score) the sender's risk, weighted; plain top-k."""
        edges, topo = self.topology(graph)
        index = {e: i for i, e in enumerate(edges)}
        w = self.weights
        frequency = np.zeros(len(edges))
        for edge in traffic.edges:
            if edge in index:
                frequency[index[edge]] += 1
        relevance = self.relevance(edges, index, traffic, goal_vectors)
        score = w.alpha * _minmax(topo) + w.beta * relevance + w.gamma * _minmax(frequency)
        if sender_risk is not None and w.delta:
            score = score + w.delta * np.array([sender_risk.get(sender, 0.0) for sender, _ in edges], dtype=float)
        k = min(self.k_for(graph), len(edges))
        order = np.lexsort((np.arange(len(edges)), -score))[:k]  # ties: graph order
        return Localization(round, [edges[i] for i in order], dict(zip(edges, score.tolist())), "adaptive")

    def relevance(
        self, edges: Sequence[Edge], index: dict[Edge, int], traffic: Traffic, goal_vectors: np.ndarray | None
    ) -> np.ndarray:
        """Per edge: best message of its best sentence's thresholded mean cosine to the goals."""
        out = np.zeros(len(edges))
        if goal_vectors is None or len(goal_vectors) == 0:
            return out
        rows, owners = [], []
        for edge, vectors in zip(traffic.edges, traffic.sentence_vectors):
            if edge in index and len(vectors):
                rows.append(vectors)
                owners.append(np.full(len(vectors), index[edge]))
        if not rows:
            return out
        sentences = np.vstack(rows)
        owner = np.concatenate(owners)
        # The mean of cosines to unit goal vectors is the dot with their mean vector.
        mean_cos = sentences @ np.asarray(goal_vectors, dtype=sentences.dtype).mean(axis=0)
        thr = self.weights.relevance_threshold
        counted = np.where(mean_cos > thr, (mean_cos - thr) / max(1e-9, 1.0 - thr), 0.0)
        np.maximum.at(out, owner, counted)
        return out


def _per_source_then_rest(edges: list[Edge], scores: np.ndarray, k: int) -> list[Edge]:
    order = np.lexsort((np.arange(len(edges)), -scores))  # best first, ties in graph order
    best_of: dict[str, int] = {}
    for i in order:
        best_of.setdefault(edges[i][0], int(i))
    firsts = sorted(best_of.values(), key=lambda i: (-scores[i], i))
    chosen = firsts[:k]
    taken = set(chosen)
    for i in order:
        if len(chosen) >= k:
            break
        if int(i) not in taken:
            chosen.append(int(i))
            taken.add(int(i))
    return [edges[i] for i in chosen]


def localization_quality(monitored: Sequence[Edge], hijacked: Sequence[str], graph_edges: Sequence[Edge]) -> dict[str, Any]:
    """Precision and recall of the monitored channels against the hijacked agents'
    outgoing edges (the runtime knows where the attack was injected)."""
    targets = {tuple(e) for e in graph_edges if e[0] in set(hijacked)}
    watched = {tuple(e) for e in monitored}
    hit = len(targets & watched)
    return {
        "monitored": len(watched),
        "hijacked_edges": len(targets),
        "hits": hit,
        "precision": hit / len(watched) if watched else None,
        "recall": hit / len(targets) if targets else None,
    }
