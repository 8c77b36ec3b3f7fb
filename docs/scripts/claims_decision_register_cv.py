"""The cross-source decision's nested CV (as `bench claims` runs it) re-run on the rows a
`bench claims` run logged, with and without the "social" register features (computed here
from each row's text, as `ClaimGuard` does), and with the CheckThat negative cell (a train
tweet against a store without its right claim) weighed less. Only rows the decision is
fitted on are read: dev set, paper-style LIAR/Snopes, CheckThat *train* tweets.
With --dev-tweets, each variant is also fitted on all rows and checks the CheckThat *dev*
tweets (never fitted on; test is not read): share flagged, and of those with the right
claim at top-1. Needs the run's CheckThat store and saved decision (for its shift and
ranker) and MISGUARD_EMBED__CACHE_DIR to avoid re-embedding.
Usage: python docs/scripts/claims_decision_register_cv.py RUNLOG [--misses] [--dev-tweets DECISION.json]"""
import json, sys
from pathlib import Path
import numpy as np
from misguard.bench.claims._data import load_checkthat, load_devset, load_distractors
from misguard.bench.claims._paper import load_true_claims, paper_queries
from misguard.bench.claims._pooled import Fit, Row, cross_validate, fit_final, leave_one_source_out
from misguard.claims import FEATURES
from misguard.claims._detect import FEATURES_PLAIN
from misguard.claims._social import DEFAULT_STEPS, normalize_social
from misguard.claims._text import clean_with_offsets

log = [json.loads(l) for l in open(sys.argv[1])]
header = next(e for e in log if e["type"] == "header")
data = Path(header["params"]["data_dir"])
params, seed = header["params"], header["seeds"]["seed"]
texts = {q.qid: q.text for q in load_devset(data).queries}
paper_n = params.get("paper", 100)
texts.update({q.key: q.text for q in paper_queries(load_distractors(data, params.get("distractors", 500)), load_true_claims(data), paper_n, seed)})
texts.update({q.qid: q.text for q in load_checkthat(data).queries["train"]})


def social(text: str) -> bool:
    clean, _ = clean_with_offsets(text)
    return normalize_social(clean, DEFAULT_STEPS)[0] != clean


ev = [{**e["data"], "key": e["key"]} for e in log if e["type"] == "row"]
soc = {}
for d in ev:
    key = d["key"].split(":", 1)[1].removesuffix("-without-gold")
    soc[d["key"]] = social(texts[key])


def rows():
    out = []
    for d in ev:
        s = 1.0 if soc[d["key"]] else 0.0
        grow = lambda v: np.array(v[: len(FEATURES_PLAIN)] + [s, v[0] * s])
        r = Row(source=d["source"], key=d["key"], group=d["group"], label=d["label"], attack=d["attack"], lang=d["lang"],
                x=grow(d["x"]), fold=d["fold"], right=d.get("right"))
        r.x_by_fold = {int(f): grow(v) for f, v in d["x_by_fold"].items()}
        out.append(r)
    return out


rs = rows()
for src in ("devset", "paper", "checkthat"):
    for lab in (True, False):
        n = [r for r in rs if r.source == src and r.label == lab]
        print(f"{src} label={lab}: {len(n)} rows, social {np.mean([soc[r.key] for r in n]):.3f}")
variants = [("plain features", Fit(names=FEATURES_PLAIN)), ("+ social", Fit())]
variants += [(f"+ social, CheckThat negatives x{w}", Fit(cell_weight=(("checkthat", False, w),))) for w in (0.5, 0.25, 0.1)]
dev_tweets = None
if "--dev-tweets" in sys.argv:
    from misguard.bench.claims._checkthat import analyse_tweets
    from misguard.claims import ClaimGuard, ClaimStore, ThresholdDecision, features, load_decision
    from misguard.config import load_settings
    from misguard.embed import get_embedder
    base = load_decision(sys.argv[sys.argv.index("--dev-tweets") + 1])
    ct_store = ClaimStore.open(Path(sys.argv[1]).parent / "store-checkthat", get_embedder(None, load_settings().embed))
    probe = ClaimGuard(ct_store, decision=ThresholdDecision(1.0, shift=base.shift, ranker=base.ranker))
    dev_tweets = [(features(t.analysis.context), t.analysis.claim.id in t.query.gold)
                  for t in analyse_tweets(probe, load_checkthat(data).queries["dev"])]
for name, fit in variants:
    scores, flags, cs = cross_validate(rs, fit)
    line = []
    for src in ("devset", "paper", "checkthat"):
        lab = np.array([r.label for r in rs if r.source == src]); fl = np.array([f for r, f in zip(rs, flags) if r.source == src])
        line.append(f"{src} {fl[lab].mean():.3f} / {(~fl[~lab]).mean():.3f}")
    cells = {}
    for r, f in zip(rs, flags):
        if r.source in ("devset", "paper"):
            k = (r.source, r.attack if r.lang == "en" else r.lang, r.label)
            cells.setdefault(k, []).append(f == r.label)
    right = [f for r, f in zip(rs, flags) if r.source == "checkthat" and r.label and r.right]
    print(f"{name}: {'; '.join(line)}; tweets right at top-1 flagged {np.mean(right):.3f}; C {cs}", flush=True)
    print("   cells:", ", ".join(f"{s[:3]}/{a}/{'F' if l else 'T'} {np.mean(v):.2f}" for (s, a, l), v in sorted(cells.items())))
    if dev_tweets is not None:
        final, c = fit_final(rs, fit, embedder="", trained_on="")
        flagged = np.array([final.score(x) >= final.threshold for x, _ in dev_tweets])
        right = np.array([r for _, r in dev_tweets])
        print(f"   CheckThat dev tweets (final fit, C={c}): flagged {flagged.mean():.3f} of {len(flagged)}; "
              f"right claim at top-1 {right.mean():.3f}, flagged of those {flagged[right].mean():.3f}", flush=True)
    loso = leave_one_source_out(rs, fit)
    print("   leave one source out:", "; ".join(f"{s} {p[l].mean():.3f} / {(~p[~l]).mean():.3f}" for s, (l, p) in loso.items()), flush=True)
    if "--misses" in sys.argv and name == "plain features":
        names = list(FEATURES)
        for label, sel in (("tweets, right top-1, flagged", lambda r, f: r.source == "checkthat" and r.label and r.right and f),
                           ("tweets, right top-1, missed", lambda r, f: r.source == "checkthat" and r.label and r.right and not f),
                           ("tweets, right removed", lambda r, f: r.source == "checkthat" and not r.label),
                           ("dev false", lambda r, f: r.source == "devset" and r.label),
                           ("dev true", lambda r, f: r.source == "devset" and not r.label),
                           ("paper false", lambda r, f: r.source == "paper" and r.label),
                           ("paper true", lambda r, f: r.source == "paper" and not r.label)):
            xs = np.array([r.x for r, f in zip(rs, flags) if sel(r, f)])
            print(f"   {label:32s} n={len(xs):4d} " + " ".join(f"{n}={xs[:, names.index(n)].mean():.3f}" for n in
                  ("s1", "body", "support", "votes", "query_specific", "claim_specific", "lexical", "names", "number_clash", "social")))
