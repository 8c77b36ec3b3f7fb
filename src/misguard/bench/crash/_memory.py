"""The memory-repair crash target's pieces: a poisoned shared memory to repair, the repair
process that is killed (`python -m misguard.bench.crash._memory DB`), and a fingerprint of
a store's state that ignores only wall-clock times.

The memory is written through `SharedMemory` (records and reuse edges in one transaction
each, as agents write): teams of agents record what worked in each state of a task; an
attacker writes confident records with the wrong action, and agents that reused them pass
the wrong action on along reuse chains up to 9 hops deep, so a repair plan holds every
kind of action (quarantine, rewrite, dilution, pruning).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ...memory import HashedRecordFeaturizer, MemoryGuard, SharedMemory, open_store
from ...types import MemoryRecord, Provenance

ACTIONS = ("north", "south", "east", "west", "stay")


def write_poisoned_memory(path: Path, *, seed: int = 0, tasks: int = 12, states: int = 12, honest: int = 4,
                          poisoned_share: float = 0.2, chain: int = 9) -> dict[str, int]:
    """Write the memory the repair target repairs; returns its counts."""
    rng = np.random.default_rng(seed)
    featurizer = HashedRecordFeaturizer()
    clock = 0.0
    counts = {"records": 0, "poisoned": 0, "derived": 0}
    with open_store(path) as store:
        memory = SharedMemory(store, featurizer=featurizer)

        def record(rid: str, task: int, state: int, action: str, agent: str, confidence: float) -> MemoryRecord:
            nonlocal clock
            clock += 1.0
            return MemoryRecord(id=rid, state=f"pos={state % 4},{state // 4};goal=g{task % 3}", context=f"task=t{task}",
                                action=action, tags=["nav", f"t{task}"], provenance=Provenance(agent=agent, time=clock),
                                confidence=confidence, success=1.0 if confidence > 0.5 else 0.0)

        for task in range(tasks):
            truth = rng.integers(len(ACTIONS), size=states)
            batch = [record(f"t{task}-s{s}-a{a}", task, s, ACTIONS[truth[s]], f"agent{a}", float(rng.uniform(0.6, 0.9)))
                     for s in range(states) for a in range(honest)]
            memory.write(batch)
            counts["records"] += len(batch)
            for s in rng.choice(states, max(1, int(poisoned_share * states)), replace=False):
                wrong = ACTIONS[(truth[s] + 1 + rng.integers(len(ACTIONS) - 1)) % len(ACTIONS)]
                parent = record(f"t{task}-s{s}-poison", task, s, wrong, "attacker", 0.95)
                memory.write([parent])
                counts["poisoned"] += 1
                for depth in range(1, chain + 1):  # each reuse passes the wrong action on
                    child = record(f"t{task}-s{s}-d{depth}", task, s, wrong, f"agent{depth % honest}", 0.7)
                    memory.write([child], derived_from=[[parent.id]])
                    parent = child
                    counts["derived"] += 1
    counts["records"] += counts["poisoned"] + counts["derived"]
    return counts


def repair(path: Path) -> int:
    """The repair that is killed: score every active record with the memory guard
    (credibility), plan the repair along reuse paths and apply it through `store.batch()`.
    Prints `planned N` before applying and `repaired: N audit entries` once committed."""
    featurizer = HashedRecordFeaturizer()
    with open_store(path) as store:
        guard = MemoryGuard(key_block=featurizer.slices()["state"])
        from ...memory import RecordArrays

        records, emb = store.records_with_embeddings("active")
        arr = RecordArrays.from_records(records, emb=emb)
        scores = guard.score(arr)
        index = {rid: i for i, rid in enumerate(arr.ids)}
        edges = [e for e in store.edges() if e.dst_kind == "memory" and e.src in index and e.dst in index]
        src = np.array([index[e.src] for e in edges], dtype=np.int64)
        dst = np.array([index[e.dst] for e in edges], dtype=np.int64)
        plan = guard.plan(arr, scores, src, dst)
        actions = len(plan.quarantine) + len(plan.rewrite) + len(plan.dilute) + len(plan.prune)
        print(f"planned {actions}", flush=True)
        from ...memory import apply_repair

        seqs = apply_repair(store, plan, arr.ids, arr.action_names, [e.id for e in edges])
        print(f"repaired: {len(seqs)} audit entries", flush=True)
    return len(seqs)


def fingerprint(path: Path) -> str:
    """sha256 of everything in a memory store but wall-clock times (audit and version
    timestamps): two stores with the same fingerprint hold the same state."""
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        parts: list[Any] = [
            conn.execute("SELECT id, version, status, agent, time, channel, state, context, action, tags, success, "
                         "reward, confidence, hex(embedding) FROM memories ORDER BY seq").fetchall(),
            conn.execute("SELECT id, version, agent, time, channel, state, context, action, tags, success, reward, "
                         "confidence, hex(embedding) FROM memory_versions ORDER BY id, version").fetchall(),
            conn.execute("SELECT id, src, dst, dst_kind, agent, weight, pruned FROM reuse_edges ORDER BY id").fetchall(),
            conn.execute("SELECT seq, action, target, before, after, actor, reason, rolled_back FROM audit_log "
                         "ORDER BY seq").fetchall(),
        ]
    finally:
        conn.close()
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Repair a memory store (the process the crash benchmark kills).")
    parser.add_argument("db", type=Path)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    entries = repair(args.db)
    print(f"done in {time.perf_counter() - started:.2f} s ({entries} entries)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
