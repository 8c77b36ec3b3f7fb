"""Which poison escapes online containment: one seed of `misguard bench memory` (Type II, 5%,
proposed guard online every W cycles), with the online test scenario's ground truth kept and
every online pass's scores recorded, then the deep derived records traced back to the
injected records they descend from (were those ever flagged? are they still active?).
Usage: OMP_NUM_THREADS=1 python docs/scripts/memory_online_escapes.py <seed> <W> <scratch folder>
(session 15 ran it on tuning seed 102 with W = 8; reported seeds were not probed)."""
import collections, sys
from pathlib import Path
import numpy as np
import misguard.bench.memory._run as R
from misguard.memory import hop_distances

seed, window, folder = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
kept: dict = {}
passes: list = []
build_world, guard_store = R.build_world, R.MemoryGuard.guard_store


def keep_online(sc, path, *a, after_step=None, **k):
    w = build_world(sc, path, *a, after_step=after_step, **k)
    if after_step is not None:
        kept["world"] = w
    return w


def record_pass(self, store, **k):
    out = guard_store(self, store, **k)
    if "world" not in kept and k.get("scope") is None:  # the online build's passes only
        arr, scores = out[0], out[1]
        passes.append((list(arr.ids), scores.p_poison.copy(), self.threshold))
    return out


R.build_world, R.MemoryGuard.guard_store = keep_online, record_pass
folder.mkdir(parents=True, exist_ok=True)
params = R.BenchParams(kind="II", ratio=0.05, seeds=1, records=17500, scenarios=5, eval_steps=24, methods=("proposed",),
                       online_window=window, first_seed=seed)
R.run_seed(params, seed, folder, lambda s: None)
w = kept["world"]
store, truth = w.memory.store, w.truth
recs = [r for r in store.iter_records() if r.id in truth]  # the build, not the evaluation episodes
ids = [r.id for r in recs]
ix = {r: i for i, r in enumerate(ids)}
edges = [(ix[e.src], ix[e.dst]) for e in store.edges(include_pruned=True) if e.dst_kind == "memory" and e.src in ix and e.dst in ix]
src, dst = np.array([a for a, _ in edges], dtype=np.int64), np.array([b for _, b in edges], dtype=np.int64)
label = np.array([truth[i].label for i in ids])
wrong = np.array([truth[i].action != truth[i].reference for i in ids])
explore = np.array([truth[i].explore for i in ids])
dist = hop_distances(len(ids), src, dst, label == 1)
derived = (label == 0) & ~explore & wrong & (dist > 0)
print(f"seed {seed}, W = {window}: {len(ids)} records, {(label == 1).sum()} injected, {derived.sum()} derived; "
      f"derived per hop {np.bincount(dist[derived]).tolist()}; {len(passes)} online passes, threshold {passes[0][2]:.3f}")
p_max: dict[str, float] = collections.defaultdict(float)
for pass_ids, p, thr in passes:
    for rid, v in zip(pass_ids, p):
        p_max[rid] = max(p_max[rid], float(v))
threshold = passes[0][2]
parents = collections.defaultdict(list)
for a, b in edges:
    parents[b].append(a)
deep = np.flatnonzero(derived & (dist >= 2))
ancestors: collections.Counter = collections.Counter()
for i in deep:  # every injected ancestor of each deep derived record
    frontier, seen = {int(i)}, set()
    while frontier:
        nxt = set()
        for u in frontier:
            for a in parents[u]:
                if a not in seen:
                    seen.add(a)
                    (ancestors.update([a]) if label[a] == 1 else nxt.add(a))
        frontier = nxt
print(f"{len(deep)} derived records at 2+ hops descend from {len(ancestors)} injected records:")
for a, c in ancestors.most_common(8):
    rid = ids[a]
    print(f"  injected at cycle {recs[a].provenance.time:.0f}, action {recs[a].action}: ancestor of {c}; "
          f"highest score in any pass {p_max[rid]:.3f} ({'flagged' if p_max[rid] >= threshold else 'never flagged'}), "
          f"{store.status(rid)} at the end")
never = [a for a in ancestors if p_max[ids[a]] < threshold]
print(f"never flagged: {len(never)} of {len(ancestors)} ancestors; still active at the end: "
      f"{sum(store.status(ids[a]) == 'active' for a in ancestors)}")
