"""The cross-source decision's nested CV re-run on the rows a `bench claims` run logged
(this code's rows: social features, tweet-form dev/paper rows, copies out of the CheckThat
negatives) at CheckThat negative-cell weights 1, 0.5, 0.25; each variant fitted on all rows
also checks the CheckThat *dev* tweets (never fitted on; test not read).
Usage: python docs/scripts/claims_decision_weights_cv.py RUN_DIR DECISION.json (its shift and ranker)"""
import json, sys
from pathlib import Path
import numpy as np
from misguard.bench.claims._checkthat import analyse_tweets
from misguard.bench.claims._data import load_checkthat
from misguard.bench.claims._pooled import Fit, Row, cross_validate, fit_final
from misguard.claims import ClaimGuard, ClaimStore, ThresholdDecision, features, load_decision
from misguard.config import load_settings
from misguard.embed import get_embedder

run, base = Path(sys.argv[1]), load_decision(sys.argv[2])
log = [json.loads(l) for l in open(run / "runlog.jsonl")]
data = Path(next(e for e in log if e["type"] == "header")["params"]["data_dir"])
rows = []
for e in log:
    if e["type"] == "row":
        d = e["data"]
        r = Row(source=d["source"], key=e["key"], group=d["group"], label=d["label"], attack=d["attack"], lang=d["lang"],
                x=np.array(d["x"]), fold=d["fold"], right=d.get("right"))
        r.x_by_fold = {int(f): np.array(v) for f, v in d["x_by_fold"].items()}
        rows.append(r)
store = ClaimStore.open(run / "store-checkthat", get_embedder(None, load_settings().embed))
probe = ClaimGuard(store, decision=ThresholdDecision(1.0, shift=base.shift, ranker=base.ranker))
dev = [(features(t.analysis.context), t.analysis.claim.id in t.query.gold)
       for t in analyse_tweets(probe, load_checkthat(data).queries["dev"])]
for w in (1.0, 0.5, 0.25):
    fit = Fit(cell_weight=(("checkthat", False, w),))
    _, flags, _ = cross_validate(rows, fit)
    out = []
    for source in ("devset", "paper", "checkthat"):
        for tweet in (False, True):
            sel = [(r, f) for r, f in zip(rows, flags) if r.source == source and r.key.endswith("#tweet") == tweet]
            if sel:
                pos, neg = [f for r, f in sel if r.label], [not f for r, f in sel if not r.label]
                out.append(f"{source}{' as tweets' if tweet else ''} {np.mean(pos):.3f} / {np.mean(neg):.3f}")
    final, c = fit_final(rows, fit, embedder="", trained_on="")
    flagged = np.array([final.score(x) >= final.threshold for x, _ in dev]); right = np.array([r for _, r in dev])
    print(f"CheckThat negatives x{w}: {'; '.join(out)}; CheckThat dev tweets flagged {flagged.mean():.3f} "
          f"(of right top-1 {flagged[right].mean():.3f})", flush=True)
