"""Repair along propagation paths (eq. 5) and its application to a store.

    R = 0.5 * P_poison + 0.3 * D_spread + 0.2 * Conflict,   repair when flagged or R > 0.75

`P_poison` is the detector's probability; a record is *flagged* when it reaches the
validation-chosen threshold. Repair then retraces propagation paths: a descendant of a
flagged record whose action contradicts the credible consensus of its evidence neighbours,
or whose conflict is at least `conflict_floor`, has inherited the poison and is repaired too. `D_spread` is the hop depth of the record below the nearest
flagged origin (a flagged record with no flagged ancestor), divided by 11 (the paper's
deepest chain) and capped at 1. Actions by that depth, as in the paper's Figure 2:
    0-3 hops   isolation: quarantine (kept, excluded from retrieval)
    4-6 hops   semantic reconstruction: a new version whose action is the credible
               consensus of the record's evidence neighbours (confidence = its share)
    7+ hops    conflict resolution: its incoming reuse edges from repaired records are
               pruned and the conflict is resolved toward the credible evidence: a new
               version with the consensus action, its confidence diluted to the consensus
               share x (1 - conflict); without a credible alternative only the record's
               weight (confidence) is diluted by (1 - conflict)
Everything is applied through the store, so each step is versioned, audited, reversible.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ._credibility import EvidenceGraph, clean_consensus
from ._graph import hop_distances
from ._store import MemoryStore

GAMMAS = (0.5, 0.3, 0.2)
THETA_R = 0.75
MAX_DEPTH = 11


@dataclass
class RepairPlan:
    priority: np.ndarray
    depth: np.ndarray
    quarantine: np.ndarray  # record indices
    rewrite: np.ndarray  # record indices
    rewrite_action: np.ndarray  # consensus action index per rewrite
    rewrite_confidence: np.ndarray
    dilute: np.ndarray  # record indices
    dilute_confidence: np.ndarray
    prune: np.ndarray  # edge indices
    counts: dict[str, int] = field(default_factory=dict)


def flagged_roots(n: int, src: np.ndarray, dst: np.ndarray, flagged: np.ndarray) -> np.ndarray:
    """Flagged records that no other flagged record reaches (the origins of flagged chains)."""
    keep = flagged[src]
    children = np.zeros(n, bool)
    children[dst[keep]] = True
    reached = hop_distances(n, src, dst, children)
    return flagged & (reached < 0)


def plan_repair(
    p_poison: np.ndarray,
    threshold: float,
    conflict: np.ndarray,
    consensus: np.ndarray,
    consensus_share: np.ndarray,
    actions: np.ndarray,
    confidence: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    *,
    gammas: tuple[float, float, float] = GAMMAS,
    theta_r: float = THETA_R,
    candidates: np.ndarray | None = None,
    conflict_floor: float = 0.25,
    evidence: EvidenceGraph | None = None,
    upstream: bool = False,
    max_passes: int = 10,
) -> RepairPlan:
    """Decide repair actions for every record (or only `candidates`, a sliding window).

    `evidence` (the credibility evidence graph): the consensus a record is compared with and
    rewritten to is recomputed without the neighbours that are flagged or themselves being
    repaired, until the repair set is stable (at most `max_passes`); without it the given
    `consensus`, which poisoned supporters may have voted for, is used as is.
    """
    n = len(p_poison)
    flagged = p_poison >= threshold
    roots = flagged_roots(n, src, dst, flagged)
    depth = hop_distances(n, src, dst, roots)
    spread = np.where(depth > 0, np.minimum(depth / MAX_DEPTH, 1.0), 0.0)
    g1, g2, g3 = gammas
    priority = (g1 * p_poison + g2 * spread + g3 * conflict).astype(np.float32)
    # Path retracing: a descendant of a flagged record that implies an action its credible
    # evidence contradicts has inherited the poison, whatever its own score.
    below = hop_distances(n, src, dst, flagged)

    def repair_set(consensus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        contested = ((consensus >= 0) & (consensus != actions)) | (conflict >= conflict_floor)
        inherited = (below > 0) & contested
        repair = flagged | (priority > theta_r) | inherited
        if upstream:
            # Retracing upstream too: a contested record that a repaired record reused is a
            # source of what was repaired (poison the detector scored under its threshold).
            above = hop_distances(n, dst, src, repair)
            inherited = inherited | ((above > 0) & contested)
            repair = repair | inherited
        return repair, inherited

    repair, inherited = repair_set(consensus)
    if evidence is not None:
        excluded = flagged
        for _ in range(max_passes):
            consensus, consensus_share = clean_consensus(evidence, actions, excluded)
            repair, inherited = repair_set(consensus)
            if (repair == excluded).all():
                break
            excluded = repair
    if candidates is not None:
        repair &= candidates
    d = np.maximum(depth, 0)
    iso = repair & (d <= 3)
    recon = repair & (d > 3) & (d <= 6)
    can_rewrite = recon & (consensus >= 0) & (consensus != actions)
    iso |= recon & ~can_rewrite  # no credible alternative: isolate instead
    resolve = repair & (d > 6)
    resolve_to = resolve & (consensus >= 0) & (consensus != actions)  # a credible alternative exists
    dilute = resolve & ~resolve_to
    repaired = iso | can_rewrite | resolve
    prune = np.flatnonzero(resolve[dst] & repaired[src])
    conf = np.nan_to_num(confidence, nan=0.5)
    rewrite = can_rewrite | resolve_to
    new_conf = np.where(resolve_to, consensus_share * (1.0 - conflict), consensus_share)
    plan = RepairPlan(
        priority=priority,
        depth=depth,
        quarantine=np.flatnonzero(iso),
        rewrite=np.flatnonzero(rewrite),
        rewrite_action=consensus[rewrite],
        rewrite_confidence=new_conf[rewrite],
        dilute=np.flatnonzero(dilute),
        dilute_confidence=(conf * (1.0 - conflict))[dilute],
        prune=prune,
    )
    plan.counts = {
        "flagged": int(flagged.sum()), "priority_over_theta": int((priority > theta_r).sum()),
        "inherited": int((inherited & ~flagged).sum()),
        "quarantine": len(plan.quarantine), "rewrite": len(plan.rewrite), "resolve_to_consensus": int(resolve_to.sum()),
        "dilute": len(plan.dilute), "prune": len(plan.prune),
    }
    return plan


def apply_repair(
    store: MemoryStore,
    plan: RepairPlan,
    ids: Sequence[str],
    action_names: Sequence[str],
    edge_ids: Sequence[int] = (),
    *,
    actor: str = "memory-guard",
) -> list[int]:
    """Apply a plan to a store through its audited operations, in one transaction (all or
    none, `MemoryStore.batch`); returns the audit seqs."""
    seqs: list[int] = []
    pr = plan.priority
    with store.batch():
        seqs += store.quarantine_many([ids[i] for i in plan.quarantine],
                                      [f"isolation: depth {int(plan.depth[i])}, R={pr[i]:.3f}" for i in plan.quarantine], actor)
        for i, a, c in zip(plan.rewrite, plan.rewrite_action, plan.rewrite_confidence):
            changes = {"action": action_names[int(a)], "confidence": float(c), "success": None}
            kind = "conflict resolution: resolved to the credible consensus" if plan.depth[i] > 6 else "semantic reconstruction"
            seqs.append(store.rewrite(ids[i], changes, f"{kind}: depth {int(plan.depth[i])}, R={pr[i]:.3f}", actor))
        for i, c in zip(plan.dilute, plan.dilute_confidence):
            seqs.append(store.rewrite(ids[i], {"confidence": float(c)}, f"conflict resolution: dilution, R={pr[i]:.3f}", actor))
        if len(edge_ids):
            seqs += store.prune_edges([int(edge_ids[e]) for e in plan.prune], "conflict resolution: pruning", actor)
    return seqs
