"""Does the social offset flag near-miss true facts written as tweets? The dev set's
queries checked as they are and with a tweet's trappings added (a pic.twitter.com link and
an attribution tail, which the normalisation turns into a name), against the dev store of
a `bench claims` run, with a given decision. In sample for the dev set (the decision was
fitted on its queries as written): what to read is the difference the tweet form makes.
Usage: python docs/scripts/claims_social_near_miss.py RUN_DIR DECISION.json"""
import sys
from pathlib import Path
import numpy as np
from misguard.bench.claims._data import load_devset
from misguard.claims import ClaimGuard, ClaimStore, load_decision
from misguard.config import load_settings
from misguard.embed import get_embedder

run, decision = Path(sys.argv[1]), load_decision(sys.argv[2])
header = __import__("json").loads(open(run / "runlog.jsonl").readline())
dev = load_devset(Path(header["params"]["data_dir"]))
store = ClaimStore.open(run / "store", get_embedder(None, load_settings().embed))
guard = ClaimGuard(store, decision=decision)
tail = " pic.twitter.com/Xq3vB7kLpz \u2014 Jane Doe (@janedoe_news) January 6, 2020"
for name, make in (("as written", lambda t: t), ("as a tweet", lambda t: t + tail)):
    texts = [make(q.text) for q in dev.queries]
    verdicts = [v for i in range(0, len(texts), 64) for v in guard.check_many(texts[i : i + 64])]
    social = np.mean(["social" in v.stages for v in verdicts])
    y = np.array([q.label == "false" for q in dev.queries]); f = np.array([v.flagged for v in verdicts])
    en = np.array([q.lang == "en" for q in dev.queries])
    print(f"{name}: false acc {f[y].mean():.3f}, factual acc {(~f[~y]).mean():.3f} (English only: {f[y & en].mean():.3f} / "
          f"{(~f[~y & en]).mean():.3f}); social normalisation applied to {social:.0%}", flush=True)
