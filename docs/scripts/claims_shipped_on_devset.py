"""The shipped decision on the 480 dev queries (in sample: it was fitted on them) against
runs/bench-claims/store: every sentence embedded vs sentence views from 40 words, and with
the learned ranker of runs/decision-i12.json. Shows what the views rule and the ranker
change, not how the decision generalises. Run from the repo root after `bench claims`."""
import dataclasses, numpy as np
from pathlib import Path
from misguard.config import load_settings
from misguard.embed import get_embedder
from misguard.claims import ClaimGuard, ClaimStore, default_decision, load_decision
from misguard.bench.claims import load_devset
dev = load_devset(Path("../shared/data")); emb = get_embedder(None, load_settings().embed)
store = ClaimStore.open(Path("runs/bench-claims/store"), emb)
shipped = default_decision(emb.spec); ranker = load_decision("runs/decision-i12.json").ranker
y = np.array([q.label == "false" for q in dev.queries])
for name, decision, words in (("every sentence, dense", shipped, 0), ("40 words, dense", shipped, 40),
                              ("40 words, learned ranker", dataclasses.replace(shipped, ranker=ranker), 40)):
    guard = ClaimGuard(store, decision=decision, sentence_words=words)
    v = [x for i in range(0, 480, 64) for x in guard.check_many([q.text for q in dev.queries[i:i + 64]])]
    f = np.array([x.flagged for x in v]); right = np.mean([x.candidates[0].claim_id == q.claim_id for x, q in zip(v, dev.queries) if q.label == "false"])
    print(f"{name}: false {f[y].mean():.3f} factual {(~f[~y]).mean():.3f} top-1 right id {right:.3f}", flush=True)
