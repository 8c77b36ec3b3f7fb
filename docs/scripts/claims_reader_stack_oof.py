"""What a reader's cosine would add to the guard's own out-of-fold decision on the dev set
(as written), estimated without refitting the cross-source decision: on the same 10 folds
grouped by claim as `bench claims`, a logistic regression over [logit of the guard's
out-of-fold score] is compared with one over [that, the reader's cosine, the cosine x
non-English]. Each is fitted on nine folds (classes weighed equally) and flags at 0.5 on the
tenth. Both get the same rows, folds and score, so the difference is the reader's. A dev-only
estimate: the shipped decision is fitted across sources, and the reader would have to be
computed for every row of every source.

    python docs/scripts/claims_reader_stack_oof.py PROBE_ROWS.jsonl RUN/runlog.jsonl

PROBE_ROWS: the `--output` of claims_reader_multilingual_probe.py; RUN: a `bench claims`
run without a reader (its `decision` events hold the out-of-fold scores).
"""
import json
import sys

import numpy as np
from sklearn.linear_model import LogisticRegression

from misguard.runlog import read_runlog

probe = {r["qid"]: r for r in map(json.loads, open(sys.argv[1]))}
_, events = read_runlog(sys.argv[2])
score = {e.data["qid"]: e.data["logistic_cv_score"] for e in events if e.type == "decision"}
fold = {e.key.split(":", 1)[1]: e.data["fold"] for e in events if e.type == "row" and e.data["source"] == "devset"}
qids = [q for q in probe if q in score and q in fold]
y = np.array([probe[q]["label"] == "false" for q in qids])
folds = np.array([fold[q] for q in qids])
p = np.clip([score[q] for q in qids], 1e-6, 1 - 1e-6)
logit = np.log(p / (1 - p))
reader = np.array([probe[q]["reader"] for q in qids])
foreign = np.array([probe[q]["lang"] != "en" for q in qids], dtype=float)
variants = {"guard score only (refitted)": np.c_[logit], "guard score + reader": np.c_[logit, reader, reader * foreign]}
flags = {"guard as fitted (flag at 0.5)": p >= 0.5}
for name, x in variants.items():
    out = np.zeros(len(qids), dtype=bool)
    for f in np.unique(folds):
        train = folds != f
        model = LogisticRegression(class_weight="balanced", max_iter=1000).fit(x[train], y[train])
        out[~train] = model.predict_proba(x[~train])[:, 1] >= 0.5
    flags[name] = out
print(f"{len(qids)} dev queries as written ({int(y.sum())} false), {len(np.unique(folds))} folds grouped by claim")
print(f"{'decision':32} {'false acc':>9} {'factual acc':>11} {'non-English false':>17} {'non-English factual':>19}")
for name, flagged in flags.items():
    ne = foreign == 1
    print(f"{name:32} {flagged[y].mean():9.1%} {(~flagged[~y]).mean():11.1%} "
          f"{flagged[y & ne].mean():17.1%} {(~flagged[~y & ne]).mean():19.1%}")
