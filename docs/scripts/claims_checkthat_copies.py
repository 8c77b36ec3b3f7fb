"""Copies among the CheckThat-2020 claims (same text once case, quotes and punctuation are
ignored: `claim_key`): how many the store holds, how many "right claim removed" train rows
of a `bench claims` run matched a copy of the tweet's right claim, and P@1 of the run's
dev/test verdicts counting a copy of the right claim as right.
Usage: python docs/scripts/claims_checkthat_copies.py RUN_DIR   (e.g. /work/runs-claims/bench6)"""
import json, sys
from collections import Counter
from pathlib import Path
import numpy as np
from misguard.bench.claims._data import load_checkthat
from misguard.bench.claims._run import claim_key
from misguard.claims import ClaimStore
from misguard.config import load_settings
from misguard.embed import get_embedder

run = Path(sys.argv[1])
log = [json.loads(l) for l in open(run / "runlog.jsonl")]
data = Path(next(e for e in log if e["type"] == "header")["params"]["data_dir"])
store = ClaimStore.open(run / "store-checkthat", get_embedder(None, load_settings().embed))
text = {c.id: c.text for c in load_checkthat(data).claims}
groups = Counter(claim_key(t) for t in text.values())
print(f"claims {len(text)}: {sum(v for v in groups.values() if v > 1)} in {sum(v > 1 for v in groups.values())} groups of copies")
neg = [e["data"] for e in log if e["type"] == "row" and e["data"]["source"] == "checkthat" and not e["data"]["label"]]
gold = {e["key"].split(":", 1)[1]: e["data"]["group"] for e in log if e["type"] == "row" and e["data"]["source"] == "checkthat"}
cos = np.array([float(store.vectors[store.slot_of(d["group"])] @ store.vectors[store.slot_of(d["matched"])])
                if d["group"] in text else float("nan") for d in neg])
copy = np.array([d["group"] in text and claim_key(text[d["group"]]) == claim_key(text[d["matched"]]) for d in neg])
print(f"right-claim-removed rows {len(neg)}: matched a copy of the right claim {copy.sum()}; "
      f"cosine >= 0.95 to it {(cos >= 0.95).sum()} (copies among those {copy[cos >= 0.95].sum()})")
tweets = [e["data"] for e in log if e["type"] == "tweet"]
for split in ("dev", "test"):
    sub = [d for d in tweets if d["split"] == split]
    p1 = np.mean([d["p1"] for d in sub])
    p1c = np.mean([claim_key(text[d["candidates"][0]]) in {claim_key(text[g]) for g in d["gold"]} for d in sub])
    print(f"{split}: {len(sub)} tweets, P@1 {p1:.3f}, counting copies of the right claim {p1c:.3f}")
