"""Session 5: the register CV (claims_decision_register_cv.py) with tweet-form copies of the
dev and paper rows (both classes; the tails `bench claims` now adds) in the pooled fit, at
CheckThat negative-cell weights 1, 0.5, 0.25; each fitted on all rows also checks the
CheckThat *dev* tweets (test not read). Paths are those of the session-5 runs.
Usage: python docs/scripts/claims_tweet_form_weights.py"""
import sys, json
from pathlib import Path
import numpy as np
sys.argv = ["x", "/work/runs-claims/bench5/runlog.jsonl"]
src = open("docs/scripts/claims_decision_register_cv.py").read().split("rs = rows()")[0]
exec(src)
from misguard.bench.claims._checkthat import analyse_tweets
from misguard.bench.claims._pooled import Fit, Row, cross_validate, fit_final
from misguard.claims import ClaimGuard, ClaimStore, ThresholdDecision, features, load_decision
from misguard.config import load_settings
from misguard.embed import get_embedder
base = load_decision("/work/runs-claims/decision-base.json")
emb = get_embedder(None, load_settings().embed)
store = ClaimStore.open(Path("/work/runs-claims/bench5/store"), emb)
g = ClaimGuard(store, decision=ThresholdDecision(1.0, shift=base.shift, ranker=base.ranker))
TAILS = [" pic.twitter.com/Xq3vB7kLpz \u2014 Jane Doe (@janedoe_news) January 6, 2020",
         " https://t.co/9fKq2LmZ #FactCheck \u2014 Sam Lee (@samlee) March 2, 2020"]
rs = rows()
extra = []
todo = [r for r in rs if r.source in ("devset", "paper")]
tail_of = {r.key: TAILS[i % 2] for i, r in enumerate(todo)}
texts_ = [texts[r.key.split(":", 1)[1]] + tail_of[r.key] for r in todo]
an = [a for i in range(0, len(texts_), 64) for a in g.analyse(texts_[i:i + 64])]
for r, a in zip(todo, an):
    x = features(a.context)
    t = Row(source=r.source, key=r.key + "#tweet", group=r.group, label=r.label, attack=r.attack + " as tweet", lang=r.lang,
            x=x, fold=r.fold, right=None)
    extra.append(t)
print("tweet-form rows", len(extra), "social", np.mean([t.x[-2] for t in extra]), flush=True)
base_dev = load_decision("/work/runs-claims/decision-s5.json")
ct_store = ClaimStore.open(Path("/work/runs-claims/bench5/store-checkthat"), emb)
probe = ClaimGuard(ct_store, decision=ThresholdDecision(1.0, shift=base.shift, ranker=base.ranker))
dev_tweets = [(features(t.analysis.context), t.analysis.claim.id in t.query.gold) for t in analyse_tweets(probe, load_checkthat(data).queries["dev"])]
allrows = rs + extra
for name, fit in [("social + tweet-form rows", Fit()), ("... ct neg x0.5", Fit(cell_weight=(("checkthat", False, 0.5),))),
                  ("... ct neg x0.25", Fit(cell_weight=(("checkthat", False, 0.25),))), ("plain, no tweet-form", None)]:
    use = allrows if fit is not None else rs
    fit = fit or Fit(names=__import__("misguard.claims._detect", fromlist=["x"]).FEATURES_PLAIN)
    scores, flags, cs = cross_validate(use, fit)
    out = []
    for s_ in ("devset", "paper", "checkthat"):
        for tw in (False, True):
            sel = [(r, f) for r, f in zip(use, flags) if r.source == s_ and r.key.endswith("#tweet") == tw]
            if not sel: continue
            pos = [f for r, f in sel if r.label]; neg = [not f for r, f in sel if not r.label]
            out.append(f"{s_}{' tweet-form' if tw else ''} {np.mean(pos) if pos else float('nan'):.3f}/{np.mean(neg) if neg else float('nan'):.3f}")
    final, c = fit_final(use, fit, embedder="", trained_on="")
    fl = np.array([final.score(x) >= 0.5 for x, _ in dev_tweets]); rt = np.array([r for _, r in dev_tweets])
    # tweet-form dev rows scored by the final (in sample) for the plain variant comparably
    print(f"{name}: {'; '.join(out)}; CT dev tweets flagged {fl.mean():.3f}, of right top-1 {fl[rt].mean():.3f}", flush=True)
    if name.startswith("plain"):
        ex_flags = [final.score(t.x) >= 0.5 for t in extra]
        for s_ in ("devset", "paper"):
            pos = [f for t, f in zip(extra, ex_flags) if t.source == s_ and t.label]; neg = [not f for t, f in zip(extra, ex_flags) if t.source == s_ and not t.label]
            print(f"   plain final on tweet-form {s_} (in sample): {np.mean(pos):.3f}/{np.mean(neg):.3f}")
