"""Source credibility (the paper's eq. 1) and the evidence graph built from it.

    C(i, j) = l1 * Sim(m_j, M_i) + l2 * H_i + l3 * (1 - Conflict_j)

* Sim: mean cosine between the record and the rest of its source agent's memory (within
  the record's group, e.g. its task), computed exactly from per-agent embedding sums.
* H: the source agent's stability over its most recent `window` records: one minus their
  mean conflict, so an agent that keeps asserting contested decisions loses standing.
* Conflict: over the record's k nearest neighbours from *other* agents, the evidence-weighted
  share that implies a different action, times the record's own claimed confidence (a
  contradicting memory matters in proportion to how strongly it asserts itself). Evidence
  weights are the graph-attention-like edge weights of the evidence graph:
  softmax(sim / t) * confidence * H(source agent) * outcome, so non-credible agents count
  less and neighbours whose action was observed to fail (success = 0) count less.
  H and Conflict are refined together for `iterations` rounds.

The evidence graph is the kNN graph (record -> neighbour, attention weight, agrees?).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_LAMBDAS = (0.25, 0.25, 0.5)


@dataclass
class EvidenceGraph:
    """kNN evidence edges: `neighbors[i]` are indices into the reference set."""

    neighbors: np.ndarray  # (n, k) int, -1 for missing
    similarity: np.ndarray  # (n, k) float
    attention: np.ndarray  # (n, k) float, rows sum to 1 over valid neighbours
    agrees: np.ndarray  # (n, k) bool: neighbour implies the same action


@dataclass
class CredibilityResult:
    credibility: np.ndarray
    sim: np.ndarray
    stability: np.ndarray  # per record: H of its source agent
    conflict: np.ndarray
    consensus: np.ndarray  # evidence-weighted majority action of the neighbours (-1 if none)
    consensus_share: np.ndarray
    graph: EvidenceGraph
    agent_stability: dict[tuple[int, int], float]


def state_key(emb: np.ndarray, block: slice) -> np.ndarray:
    """The normalised state block of field-block embeddings, for evidence-neighbour search."""
    part = np.ascontiguousarray(emb[:, block])
    return part / np.maximum(np.linalg.norm(part, axis=1, keepdims=True), 1e-12)


def simhash_buckets(emb: np.ndarray, bits: int, seed: int = 0) -> np.ndarray:
    """Sign pattern of `bits` random hyperplanes: near-duplicates share a bucket (approximate kNN)."""
    planes = np.random.default_rng(seed).standard_normal((emb.shape[1], bits)).astype(np.float32)
    return ((emb @ planes) > 0).astype(np.int64) @ (1 << np.arange(bits, dtype=np.int64))


def knn_within_groups(
    emb: np.ndarray, groups: np.ndarray, agents: np.ndarray, k: int, *, chunk: int = 2048, bucket_bits: int = 0,
    order: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k cosine neighbours of every record among records of the same group and another agent.

    With `bucket_bits` > 0 the search runs within SimHash buckets of each group: approximate,
    but linear in the store size instead of quadratic in the group size.
    """
    n = len(emb)
    if bucket_bits > 0:
        groups = groups.astype(np.int64) * (1 << bucket_bits) + simhash_buckets(emb, bucket_bits)
    nbr = np.full((n, k), -1, dtype=np.int64)
    sims = np.zeros((n, k), dtype=np.float32)
    for g in np.unique(groups):
        idx = np.flatnonzero(groups == g)
        ref = emb[idx]
        for start in range(0, len(idx), chunk):
            rows = idx[start:start + chunk]
            s = emb[rows] @ ref.T
            s[agents[rows][:, None] == agents[idx][None, :]] = -np.inf  # other agents' evidence only
            if order is not None:  # only what the store held before the record arrived
                s[order[rows][:, None] <= order[idx][None, :]] = -np.inf
            kk = min(k, len(idx))
            part = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
            ps = np.take_along_axis(s, part, axis=1)
            rank = np.argsort(-ps, axis=1)
            part, ps = np.take_along_axis(part, rank, 1), np.take_along_axis(ps, rank, 1)
            valid = np.isfinite(ps)
            nbr[rows, :kk] = np.where(valid, idx[part], -1)
            sims[rows, :kk] = np.where(valid, ps, 0.0)
    return nbr, sims


def _agent_similarity(emb: np.ndarray, groups: np.ndarray, agents: np.ndarray) -> np.ndarray:
    """Mean cosine of each record to the other records of its agent in its group."""
    key = groups.astype(np.int64) * 1_000_003 + agents.astype(np.int64)
    uniq, inv = np.unique(key, return_inverse=True)
    srt = np.argsort(inv, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(inv[srt]) != 0])
    sums = np.add.reduceat(emb[srt], starts, axis=0)  # np.add.at is ~30x slower
    counts = np.bincount(inv, minlength=len(uniq)).astype(np.float64)
    self_dot = np.einsum("ij,ij->i", emb, emb)
    total = np.einsum("ij,ij->i", emb, sums[inv])
    others = np.maximum(counts[inv] - 1, 1)
    return ((total - self_dot) / others).astype(np.float32)


def credibility(
    emb: np.ndarray,
    actions: np.ndarray,
    confidence: np.ndarray,
    agents: np.ndarray,
    groups: np.ndarray,
    order: np.ndarray,
    *,
    k: int = 16,
    window: int = 100,
    lambdas: tuple[float, float, float] = DEFAULT_LAMBDAS,
    temperature: float = 0.05,
    iterations: int = 2,
    bucket_bits: int = 0,
    key: np.ndarray | None = None,
    success: np.ndarray | None = None,
    causal: bool = False,
) -> CredibilityResult:
    """Eq. 1 for every record. `order` is a time key (larger = later) for the stability window.

    `causal`: a record's evidence is only what the store held before it arrived (by
    `order`), so records that later copied a memory cannot vouch for it.
    `key` (default: `emb`) is what evidence neighbours are searched on. Passing the
    observed-state part of the record (e.g. the state block of `HashedRecordFeaturizer`)
    compares each record with what the store holds *for the same situation*; searching on the
    whole embedding lets records that copy one another's wording vouch for each other.
    """
    n = len(emb)
    confidence = np.nan_to_num(confidence.astype(np.float32), nan=0.5)
    # Observed outcomes weigh evidence: a neighbour whose action was seen to succeed counts
    # more, one seen to fail counts less (unknown outcome: neutral).
    outcome = np.ones(n, dtype=np.float32)
    if success is not None:
        outcome = np.where(np.isnan(success), 1.0, np.where(success > 0.5, 1.5, 0.3)).astype(np.float32)
    nbr, sims = knn_within_groups(emb if key is None else key, groups, agents, k, bucket_bits=bucket_bits,
                                  order=order if causal else None)
    valid = nbr >= 0
    safe = np.where(valid, nbr, 0)
    logits = np.where(valid, sims / temperature, -np.inf)
    logits -= logits.max(axis=1, keepdims=True).clip(min=-1e9)
    base_att = np.where(valid, np.exp(logits), 0.0)
    agrees = valid & (actions[safe] == actions[:, None])
    sim = _agent_similarity(emb, groups, agents)
    rec_stab = np.ones(n, dtype=np.float32)
    agent_stab: dict[tuple[int, int], float] = {}
    key = groups.astype(np.int64) * 1_000_003 + agents.astype(np.int64)
    for _ in range(max(1, iterations)):
        w = base_att * confidence[safe] * rec_stab[safe] * outcome[safe]
        w = np.where(valid, w, 0.0)
        wsum = w.sum(axis=1)
        disagree = np.where(wsum > 0, (w * ~agrees).sum(axis=1) / np.maximum(wsum, 1e-12), 0.0)
        conflict = (disagree * confidence).astype(np.float32)
        # Agent stability: 1 - mean conflict of the agent's most recent `window` records.
        rec_stab = np.ones(n, dtype=np.float32)
        agent_stab = {}
        srt = np.lexsort((-order, key))
        ks = key[srt]
        bounds = np.flatnonzero(np.diff(ks)) + 1
        for block in np.split(srt, bounds):
            recent = block[:window]
            h = float(1.0 - conflict[recent].mean())
            rec_stab[block] = h
            agent_stab[(int(groups[block[0]]), int(agents[block[0]]))] = h
    att = w / np.maximum(w.sum(axis=1, keepdims=True), 1e-12)
    # Consensus action of the evidence: weighted vote among neighbours.
    consensus, share = weighted_vote(np.where(valid, actions[safe], -1), att)
    l1, l2, l3 = lambdas
    cred = (l1 * sim + l2 * rec_stab + l3 * (1.0 - conflict)).astype(np.float32)
    graph = EvidenceGraph(neighbors=nbr, similarity=sims, attention=att.astype(np.float32), agrees=agrees)
    return CredibilityResult(cred, sim, rec_stab, conflict, consensus, share, graph, agent_stab)


def weighted_vote(nb_actions: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the action with the largest summed weight among neighbours (-1 = none) and its share."""
    n = len(nb_actions)
    consensus = np.full(n, -1, dtype=np.int64)
    share = np.zeros(n, dtype=np.float32)
    for j in range(nb_actions.shape[1]):
        cand = nb_actions[:, j]
        votes = np.where(nb_actions == cand[:, None], weight, 0.0).sum(axis=1)
        better = (cand >= 0) & (votes > share)
        consensus[better], share[better] = cand[better], votes[better]
    return consensus, share


def clean_consensus(graph: EvidenceGraph, actions: np.ndarray, exclude: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The evidence consensus without the `exclude`d neighbours (flagged or being repaired), their
    attention renormalised over the rest: a poisoned supporter cannot vote for the repaired action."""
    valid = graph.neighbors >= 0
    safe = np.where(valid, graph.neighbors, 0)
    keep = valid & ~exclude[safe]
    att = np.where(keep, graph.attention, 0.0)
    att = att / np.maximum(att.sum(axis=1, keepdims=True), 1e-12)
    return weighted_vote(np.where(keep, actions[safe], -1), att)


def relational_features(res: CredibilityResult, confidence: np.ndarray, success: np.ndarray) -> np.ndarray:
    """Per-record evidence features the encoder sees beside the embedding."""
    conf = np.nan_to_num(confidence.astype(np.float32), nan=0.5)
    succ = np.nan_to_num(success.astype(np.float32), nan=0.5)
    agree_att = (res.graph.attention * res.graph.agrees).sum(axis=1)
    top_sim = res.graph.similarity[:, 0]
    return np.stack(
        [res.credibility, res.sim, res.stability, res.conflict, res.consensus_share, agree_att, conf, succ, top_sim],
        axis=1,
    ).astype(np.float32)
