"""Process-time breakdown of the memory benchmark's MPE simulation: two seeded scenarios of
3,300 records (Type II, 5%), with the store write, the environment step, retrieval, the
attacker and the situation/context code timed by wrapping them (process time, not wall).
Usage: OMP_NUM_THREADS=1 python docs/scripts/memory_sim_phases.py <scratch folder>"""
import collections, sys, tempfile, time
from pathlib import Path
import numpy as np
import misguard.bench.memory._mpe as M
from misguard.memory import HashedRecordFeaturizer, SharedMemory
from misguard.memory._store import SQLMemoryStore
acc: collections.Counter = collections.Counter()
def timed(name, f):
    def g(*a, **k):
        t = time.process_time()
        try:
            return f(*a, **k)
        finally:
            acc[name] += time.process_time() - t
    return g
SharedMemory.write = timed("write (all)", SharedMemory.write)
SharedMemory.retrieve_many = timed("retrieve", SharedMemory.retrieve_many)
SQLMemoryStore.add_many = timed("  add_many", SQLMemoryStore.add_many)
SQLMemoryStore.record_reuses = timed("  record_reuses", SQLMemoryStore.record_reuses)
HashedRecordFeaturizer.embed = timed("  embed", HashedRecordFeaturizer.embed)
M.Attacker.inject = timed("attacker inject", M.Attacker.inject)
M.World.step = timed("agents' cycles (all)", M.World.step)
M.World.situation = timed("  situation", M.World.situation)
M.World._context = timed("  context", M.World._context)
M.ParallelMPE.step = timed("  environment step", M.ParallelMPE.step)
folder = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
folder.mkdir(parents=True, exist_ok=True)
scenarios = M.make_scenarios(2, np.random.default_rng([0, 7]))
M.build_world(scenarios[0], folder / f"warm-{time.time_ns()}.db", np.random.default_rng(0), 300, M.Attack("none", 0.0))  # imports
acc.clear()
start = time.process_time()
for sc in scenarios:
    M.build_world(sc, folder / f"s{sc.sid}-{time.time_ns()}.db", np.random.default_rng([0, sc.sid]), 3300,
                  M.Attack("II", 0.05, frozenset({"C1", "C2", "C3"})), HashedRecordFeaturizer())
total = time.process_time() - start
print(f"total {total:.2f} s CPU")
for name, v in sorted(acc.items(), key=lambda kv: -kv[1]):
    print(f"{name:24s} {v:6.2f} s  {v / total:5.1%}")
