"""The cross-source decision's nested CV (as `bench claims` runs it) re-run on the rows that
bench logged, with retrieval evidence appended to the features: word overlap (precision),
BM25 rank and relative score, the ranker's score and its margin to the next candidate.
Usage: python docs/scripts/claims_decision_evidence_cv.py runs/bench-claims/runlog.jsonl
Session 4; runs against misguard up to commit 0b25a1c (since then a decision reads the
named columns of `FEATURES`, so appended columns are not read this way)."""
import json, sys, numpy as np
from misguard.bench.claims._pooled import Row, cross_validate
from misguard.claims import FEATURES
ev = [json.loads(l)["data"] for l in open(sys.argv[1]) if '"type":"row"' in l]
def rows(extra):
    out = []
    for d in ev:
        add = [d["evidence"].get(n, 0.0) for n in extra]
        r = Row(source=d["source"], key="k", group=d["group"], label=d["label"], attack=d["attack"], lang=d["lang"],
                x=np.array(d["x"] + add), fold=d["fold"])
        r.x_by_fold = {int(f): np.array(v + add) for f, v in d["x_by_fold"].items()}
        out.append(r)
    return out
for extra in [[], ["precision"], ["lex_rr", "lex_rel"], ["rank_score"], ["margin"], ["rank_score", "margin", "lex_rr", "lex_rel", "precision"]]:
    rs = rows(extra)
    scores, flags, cs = cross_validate(rs)
    line = []
    for src in ("devset", "paper", "checkthat"):
        lab = np.array([r.label for r in rs if r.source == src]); fl = np.array([f for r, f in zip(rs, flags) if r.source == src])
        if len(lab):
            line.append(f"{src} false {fl[lab].mean():.3f} factual {(~fl[~lab]).mean():.3f}")
    print(extra, "; ".join(line), flush=True)
