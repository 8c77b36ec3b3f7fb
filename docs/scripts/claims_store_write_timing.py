"""Time the claim store's write path: a 10,000-claim ingest into a new store, then five
one-claim adds into it (their median). One JSON line per run; run it with PYTHONPATH set to
the source tree to time (docs/BENCHMARKS.md, "Robustness", for the paired command).

    .venv/bin/python docs/scripts/claims_store_write_timing.py ../shared/data/claims/liar/train.tsv
"""

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from misguard.claims import ClaimStore, read_claims
from misguard.embed import get_embedder
from misguard.types import Claim

claims = read_claims(sys.argv[1])[:10000]
folder = Path(tempfile.mkdtemp())
store = ClaimStore.open(folder / "db", get_embedder("hashing/256"), create=True)
started = time.perf_counter()
store.add(claims)
bulk = time.perf_counter() - started
times = []
for i in range(5):
    started = time.perf_counter()
    store.add([Claim(id=f"x{i}", text=f"one more claim number {i} about tides", verdict="false")])
    times.append(time.perf_counter() - started)
store.close()
shutil.rmtree(folder)
print(json.dumps({"bulk_s": bulk, "single_median_s": sorted(times)[2]}))
