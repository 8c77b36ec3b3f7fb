"""Repair by eq. 5 along propagation paths, applied through the audited store; SharedMemory."""

from __future__ import annotations

import numpy as np
import pytest

from misguard.memory import (
    MemoryGuard,
    SharedMemory,
    apply_repair,
    hop_distances,
    mean_hops,
    open_store,
    plan_repair,
)
from misguard.types import MemoryRecord, Provenance

pytest.importorskip("sqlalchemy", reason="needs the 'memory' extra")


def test_hop_distances_respect_blocked_nodes() -> None:
    src, dst = np.array([0, 1, 2, 0]), np.array([1, 2, 3, 4])
    origins = np.array([True, False, False, False, False])
    assert hop_distances(5, src, dst, origins).tolist() == [0, 1, 2, 3, 1]
    blocked = np.array([False, True, False, False, False])
    assert hop_distances(5, src, dst, origins, blocked).tolist() == [0, -1, -1, -1, 1]
    assert mean_hops(np.array([0, 1, 3, -1]), np.array([True, True, True, True])) == pytest.approx(2.0)


def _chain(n: int = 9):
    """A reuse chain 0 -> 1 -> ... -> n-1: node 0 is flagged, all nodes imply action 1, evidence says 0."""
    src, dst = np.arange(n - 1), np.arange(1, n)
    p = np.full(n, 0.1, np.float32)
    p[0] = 0.95
    conflict = np.full(n, 0.6, np.float32)
    return p, conflict, np.zeros(n, np.int64), np.full(n, 0.8, np.float32), np.ones(n, np.int64), np.full(n, 0.9, np.float32), src, dst


def test_plan_picks_actions_by_hop_depth() -> None:
    p, conflict, consensus, share, actions, conf, src, dst = _chain()
    plan = plan_repair(p, 0.5, conflict, consensus, share, actions, conf, src, dst)
    assert plan.depth.tolist() == list(range(9))
    assert plan.quarantine.tolist() == [0, 1, 2, 3]  # 0-3 hops: isolation
    # 4-6: reconstruction (consensus action, its share); 7+: conflict resolved to the consensus, diluted
    assert plan.rewrite.tolist() == [4, 5, 6, 7, 8] and (plan.rewrite_action == 0).all()
    assert np.allclose(plan.rewrite_confidence, [0.8, 0.8, 0.8, 0.8 * 0.4, 0.8 * 0.4])
    assert len(plan.dilute) == 0 and plan.counts["resolve_to_consensus"] == 2
    assert set(plan.prune.tolist()) == {6, 7}  # edges into the resolved records from repaired ones
    expected = 0.5 * p + 0.3 * np.minimum(np.arange(9) / 11, 1) + 0.2 * conflict
    assert np.allclose(plan.priority, expected, atol=1e-6)


def test_deep_records_without_a_credible_alternative_are_only_diluted() -> None:
    p, conflict, consensus, share, actions, conf, src, dst = _chain()
    consensus[7:] = -1  # no credible evidence for records 7 and 8
    plan = plan_repair(p, 0.5, conflict, consensus, share, actions, conf, src, dst)
    assert plan.rewrite.tolist() == [4, 5, 6] and plan.dilute.tolist() == [7, 8]
    assert np.allclose(plan.dilute_confidence, 0.9 * 0.4) and set(plan.prune.tolist()) == {6, 7}


def test_uncontested_descendants_are_left_alone() -> None:
    p, conflict, consensus, share, actions, conf, src, dst = _chain()
    plan = plan_repair(p, 0.5, np.zeros_like(conflict), actions.copy(), share, actions, conf, src, dst)
    assert plan.quarantine.tolist() == [0] and len(plan.rewrite) == 0 and len(plan.dilute) == 0


def test_upstream_retracing_repairs_contested_sources_only() -> None:
    p, conflict, consensus, share, actions, conf, src, dst = _chain(5)
    p[:] = 0.1
    p[3] = 0.95  # flagged deep in the chain; its sources 0-2 scored under the threshold
    conflict[1] = 0.0
    consensus[1] = actions[1]  # record 1 agrees with its evidence: not contested
    plain = plan_repair(p, 0.5, conflict, consensus, share, actions, conf, src, dst)
    assert sorted(plain.quarantine.tolist()) == [3, 4]  # the flagged record and what inherited from it
    plan = plan_repair(p, 0.5, conflict, consensus, share, actions, conf, src, dst, upstream=True)
    assert sorted(plan.quarantine.tolist()) == [0, 2, 3, 4]  # contested sources too; record 1 is left alone


def test_priority_over_theta_triggers_repair_without_flag() -> None:
    p, conflict, consensus, share, actions, conf, src, dst = _chain(6)
    p[:] = 0.97
    p[0] = 0.995  # only the origin reaches the threshold
    conflict[:] = 1.0
    plan = plan_repair(p, 0.99, conflict, actions.copy(), share, actions, conf, src, dst, conflict_floor=1.01)
    # R = 0.5 * 0.97 + 0.3 * depth / 11 + 0.2 * 1.0 exceeds 0.75 from depth 3 on.
    assert plan.counts["flagged"] == 1 and plan.counts["inherited"] == 0
    repaired = sorted(plan.quarantine.tolist() + plan.rewrite.tolist() + plan.dilute.tolist())
    assert repaired == [0, 3, 4, 5]


def test_apply_repair_is_audited_and_reversible(tmp_path) -> None:
    p, conflict, consensus, share, actions, conf, src, dst = _chain()
    ids = [f"m{i}" for i in range(9)]
    with open_store(tmp_path / "m.db") as store:
        store.add_many([MemoryRecord(id=i, state="s", action="B", provenance=Provenance(agent="a"), confidence=0.9, embedding=[1.0, 0.0]) for i in ids])
        store.record_reuses([(ids[s], ids[d], "memory", "a") for s, d in zip(src, dst)])
        edge_ids = [e.id for e in store.edges()]
        plan = plan_repair(p, 0.5, conflict, consensus, share, actions, conf, src, dst)
        seqs = apply_repair(store, plan, ids, ["A", "B"], edge_ids)
        assert store.count() == 9 and store.count("quarantined") == 4
        assert store.get("m5").action == "A" and store.get("m5").version == 2
        assert store.get("m8").action == "A" and store.get("m8").confidence == pytest.approx(0.8 * 0.4)  # resolved, diluted
        assert len(store.edges()) == 6
        for seq in reversed(seqs):
            store.rollback(seq)
        assert store.count("quarantined") == 0 and store.get("m5").action == "B" and len(store.edges()) == 8
        assert store.get("m8").action == "B" and store.get("m8").confidence == pytest.approx(0.9)


def test_shared_memory_records_reuse_and_guard_repairs(tmp_path) -> None:
    with open_store(tmp_path / "s.db") as store:
        memory = SharedMemory(store)
        good = [MemoryRecord(state=f"pos=1,1;goal=5,1;v={i % 3}", context="task=path", action="E", tags=["nav"],
                             provenance=Provenance(agent=f"a{i % 4}", time=float(i)), confidence=0.85) for i in range(24)]
        memory.write(good)
        poison = MemoryRecord(state="pos=1,1;goal=5,1;v=0", context="task=path", action="W", tags=["nav"],
                              provenance=Provenance(agent="a9", time=30.0, channel="tool-output"), confidence=0.99)
        memory.write([poison])
        hits = memory.retrieve("pos=1,1;goal=5,1;v=0", "task=path", agent="a1", k=5, target="decision-1")
        assert len(hits) == 5 and {e.dst for e in store.edges()} == {"decision-1"}
        child = MemoryRecord(state="pos=1,1;goal=5,1;v=0", context="task=path", action="W", provenance=Provenance(agent="a1", time=31.0), confidence=0.6)
        memory.write([child], derived_from=[[poison.id]])
        guard = MemoryGuard(threshold=0.5, key_block=memory.featurizer.slices()["state"])
        arr, scores, plan, seqs = guard.guard_store(store)
        flagged = {arr.ids[i] for i in plan.quarantine}
        assert poison.id in flagged and child.id in flagged  # the child inherited the poison
        assert not flagged & {r.id for r in good}
        assert store.status(poison.id) == "quarantined" and len(store.audit_log()) == len(seqs)
        memory.refresh()
        action, _ = memory.vote(memory.retrieve("pos=1,1;goal=5,1;v=0", "task=path", agent="a2", k=5))
        assert action == "E"


def test_shared_memory_recency_scope_and_batch_retrieval(tmp_path) -> None:
    with open_store(tmp_path / "r.db") as store:
        old = MemoryRecord(id="old", state="tdx=1;tdy=0", context="task=a;x", action="right", provenance=Provenance(agent="a1", time=0.0))
        new = MemoryRecord(id="new", state="tdx=1;tdy=0", context="task=a;y", action="left", provenance=Provenance(agent="a2", time=100.0))
        other = MemoryRecord(id="other", state="tdx=1;tdy=0", context="task=b;x", action="stay", provenance=Provenance(agent="a3", time=100.0))
        SharedMemory(store).write([old, new, other])
        plain = SharedMemory(store, scope=lambda r: "task=a" in r.context)
        assert len(plain) == 2  # the other task's memory is not in this team's index
        q = ("tdx=1;tdy=0", "task=a;x", "a4", None)
        assert plain.retrieve_many([q], k=1, record=False)[0][0][0].id == "old"  # most similar wording
        recent = SharedMemory(store, recency_halflife=10.0, recency_weight=0.3, scope=lambda r: "task=a" in r.context)
        assert recent.retrieve_many([q], k=1, record=False)[0][0][0].id == "new"  # recency breaks a near tie
        assert store.edges() == []  # record=False: no decision edges
        recent.retrieve_many([q, q], k=2)
        assert len(store.edges()) == 4
        seq = recent.rewrite("new", {"action": "right"}, "agent update", actor="a2")
        assert store.get("new").action == "right" and store.get("new").version == 2 and seq >= 1
        assert recent.retrieve_many([q], k=1, record=False)[0][0][0].action == "right"


def _note(action: str, agent: str, time: float, confidence: float) -> MemoryRecord:
    """One decision on the situation `pos=1,1` of task `p`."""
    return MemoryRecord(state="pos=1,1", context="task=p", action=action, provenance=Provenance(agent=agent, time=time), confidence=confidence)


def _agreeing(action: str, n: int) -> list[MemoryRecord]:
    """`n` decisions of four agents that agree on `action` (times 0 .. n-1)."""
    return [_note(action, f"a{i % 4}", float(i), 0.9) for i in range(n)]


def test_guard_isolate_mode_quarantines_only_flagged(tmp_path) -> None:
    with open_store(tmp_path / "i.db") as store:
        memory = SharedMemory(store)
        good = _agreeing("E", 12)
        bad = _note("W", "a5", 20.0, 0.95)
        child = _note("W", "a1", 21.0, 0.3)
        memory.write(good + [bad])
        memory.write([child], derived_from=[[bad.id]])
        guard = MemoryGuard(threshold=0.5, key_block=memory.featurizer.slices()["state"], repair="isolate")
        _, scores, plan, _ = guard.guard_store(store, since=20.5)
        assert plan.counts["quarantine"] == int((scores.p_poison[-1:] >= 0.5).sum())  # only the window may be repaired
        assert store.status(bad.id) == "active"
        with pytest.raises(Exception, match="repair"):
            MemoryGuard(repair="rewrite-everything")  # type: ignore[arg-type]


@pytest.mark.slow
def test_shared_memory_with_e5() -> None:
    """The real multilingual-e5 embedder behind SharedMemory (small: e5 runs ~50 texts/s here)."""
    import tempfile
    from pathlib import Path

    from misguard.embed import get_embedder

    e5 = get_embedder("e5")
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "e.db") as store:
        memory = SharedMemory(store, embed_texts=lambda t: e5.embed(list(t), "passage"))
        memory.write([
            MemoryRecord(state="robot at dock, battery low", context="task=charge", action="go to charger", provenance=Provenance(agent="a")),
            MemoryRecord(state="customer asks for refund policy", context="task=support", action="cite policy page", provenance=Provenance(agent="b")),
        ])
        hits = memory.retrieve("battery is low at the dock", "task=charge", agent="c", k=1)
        assert hits[0][0].action == "go to charger" and len(store.edges()) == 1


def _dominated_chain():
    """Chain 0 -> 1 -> ... -> 8 (action 1, node 0 flagged) whose evidence neighbours are every earlier
    chain record plus three clean records (9-11, action 0): deep in the chain the poisoned records
    outvote the clean ones, so the raw evidence consensus is the poisoned action itself."""
    from misguard.memory import EvidenceGraph
    from misguard.memory._credibility import weighted_vote

    n, k = 12, 12
    actions = np.array([1] * 9 + [0] * 3)
    nbr = np.full((n, k), -1, np.int64)
    for i in range(9):
        row = list(range(i)) + [9, 10, 11]
        nbr[i, :len(row)] = row
    for i in range(9, 12):
        nbr[i, :2] = [j for j in (9, 10, 11) if j != i]
    valid = nbr >= 0
    att = valid / valid.sum(axis=1, keepdims=True)
    safe = np.where(valid, nbr, 0)
    graph = EvidenceGraph(nbr, valid.astype(np.float32), att, valid & (actions[safe] == actions[:, None]))
    consensus, share = weighted_vote(np.where(valid, actions[safe], -1), att)
    p = np.full(n, 0.1, np.float32)
    p[0] = 0.95
    src, dst = np.arange(8), np.arange(1, 9)
    return p, np.full(n, 0.1, np.float32), consensus, share, actions, np.full(n, 0.9, np.float32), src, dst, graph


def test_repair_consensus_excludes_poisoned_supporters() -> None:
    p, conflict, consensus, share, actions, conf, src, dst, graph = _dominated_chain()
    assert (consensus[3:9] == 1).all()  # the raw consensus deep in the chain is the poison's action
    raw = plan_repair(p, 0.5, conflict, consensus, share, actions, conf, src, dst)
    left = set(range(9)) - set(raw.quarantine.tolist()) - set(raw.rewrite.tolist())
    assert left == {3, 4, 5, 6, 7, 8}  # without the fix the deep part of the chain keeps its wrong action
    plan = plan_repair(p, 0.5, conflict, consensus, share, actions, conf, src, dst, evidence=graph)
    assert plan.quarantine.tolist() == [0, 1, 2, 3]  # 0-3 hops: isolation
    assert plan.rewrite.tolist() == [4, 5, 6, 7, 8] and (plan.rewrite_action == 0).all()  # to the clean evidence
    assert np.allclose(plan.rewrite_confidence[:3], 1.0)  # the clean neighbours agree unanimously
    assert len(plan.dilute) == 0 and not {9, 10, 11} & set(plan.quarantine.tolist() + plan.rewrite.tolist())
