"""CheckThat-2020 dev tweets whose right claim the guard ranked first but did not flag: how
many, and a seeded sample of them next to that claim, to read by hand (never the test split).

    python docs/scripts/claims_checkthat_misses.py RUN_DIR [N=12] [SEED=0]
    (RUN_DIR: a `bench claims` run, e.g. /work/runs-claims/minilm)
"""
import json
import random
import sys
from pathlib import Path

from misguard.bench.claims._data import load_checkthat

run = Path(sys.argv[1])
n = int(sys.argv[2]) if len(sys.argv) > 2 else 12
log = [json.loads(line) for line in open(run / "runlog.jsonl")]
data = Path(next(e for e in log if e["type"] == "header")["params"]["data_dir"])
ct = load_checkthat(data)
claims = {c.id: c.text for c in ct.claims}
tweets = {q.qid: q.text for q in ct.queries["dev"]}
dev = [dict(e["data"], qid=e["key"]) for e in log if e["type"] == "tweet" and e["data"]["split"] == "dev"]
missed = [d for d in dev if d["p1"] and not d["flagged"]]
print(f"{len(dev)} dev tweets; right claim first for {sum(d['p1'] for d in dev)}; of those not flagged: {len(missed)}")
random.seed(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
for d in random.sample(missed, min(n, len(missed))):
    print(f"[{d['score']:.2f}] tweet: {tweets[d['qid']][:200]!r}\n       claim: {claims[d['candidates'][0]][:160]}")
