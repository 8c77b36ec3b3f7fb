"""Probe: would a stronger multilingual encoder, read as a pair reader, tell the dev set's
disguised false queries from its near-miss true ones where e5-small does not? Out of fold,
26 of the dev set's 27 missed false queries are translations (fr/es/ar/hi/zh) whose right
claim the guard ranks first (docs/BENCHMARKS.md, session 20): the decision scores
cross-lingual pairs low.

For every dev query (as written) the default ClaimGuard on the session-16 store gives its
top-1 claim and its score; the probe then computes, for the pair (query, top-1 claim), the
e5 cosine (query/passage prefixes) and the cosine under `--model`, a local
sentence-transformers directory, read as the guard's `--reader st/DIR` reads it
(`EmbeddingReader`: the model's own query/document prompts when it names them).
Prints the ROC AUC of each for "false query" against "near-miss true query", per language,
and how many false queries the guard misses. Nothing is fitted: a screen for a reader
feature, not a result. The guard's score is in sample (its decision was fitted on rows that
include these claims). Run from the repo root (needs the st extra):

    OMP_NUM_THREADS=2 .venv/bin/python docs/scripts/claims_reader_multilingual_probe.py --model DIR [--output FILE]
"""
import argparse
import hashlib
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from misguard.claims import ClaimGuard, ClaimStore, load_reader
from misguard.config import load_settings
from misguard.embed import get_embedder

p = argparse.ArgumentParser()
p.add_argument("--model", required=True, help="a local sentence-transformers model directory")
p.add_argument("--data", default="../shared/data/claims/devset-multilingual/queries.jsonl")
p.add_argument("--store", default="/work/runs-claims/base/store")
p.add_argument("--output", default=None, help="per-row JSONL (outside the repo)")
a = p.parse_args()

rows = [json.loads(line) for line in open(a.data)]
settings = load_settings()
e5 = get_embedder(None, settings.embed)
store = ClaimStore.open(Path(a.store), e5)
guard = ClaimGuard(store)
verdicts = [v for i in range(0, len(rows), 64) for v in guard.check_many([r["text"] for r in rows[i:i + 64]])]
claims = {c.id: c.text for c in store.iter_claims()}
for r, v in zip(rows, verdicts):
    r["top1"] = v.candidates[0].claim_id if v.candidates else None
    r["flagged"], r["score"] = v.flagged, float(v.score)
pairs = [(r["text"], claims[r["top1"]]) for r in rows]
q = e5.embed([t for t, _ in pairs], "query")
d = e5.embed([c for _, c in pairs], "passage")
for r, cos in zip(rows, np.sum(q * d, axis=1)):
    r["e5"] = float(cos)

reader = load_reader(f"st/{a.model}", settings.embed)  # an EmbeddingReader, as `--reader` builds it
weights = Path(a.model, "model.safetensors")
digest = hashlib.sha256(weights.read_bytes()).hexdigest() if weights.exists() else "n/a"
started = time.perf_counter()
for r, value in zip(rows, reader.read_many(pairs)):
    r["reader"] = value
seconds = time.perf_counter() - started
texts = len(pairs) + len(set(c for _, c in pairs))
print(f"reader st/{a.model} (model.safetensors sha256 {digest}), prompts {reader.describe()['embedder_build']['prompts']}; "
      f"{texts} texts in {seconds:.0f} s ({texts / seconds:.1f}/s)")

groups = defaultdict(list)
for r in rows:
    groups[r["lang"]].append(r)
    groups["non-English" if r["lang"] != "en" else "English"].append(r)
print(f"{'rows':12} {'false':>5} {'true':>5} {'missed false':>12} {'right top-1':>11} {'AUC guard':>9} {'AUC e5':>7} {'AUC reader':>10}")
for name, rs in sorted(groups.items()):
    y = [r["label"] == "false" for r in rs]
    auc = {k: roc_auc_score(y, [r[k] for r in rs]) for k in ("score", "e5", "reader")}
    false_rows = [r for r in rs if r["label"] == "false"]
    print(f"{name:12} {sum(y):5} {len(y) - sum(y):5} {sum(not r['flagged'] for r in false_rows):12} "
          f"{sum(r['top1'] == r['claim_id'] for r in false_rows) / len(false_rows):11.1%} "
          f"{auc['score']:9.3f} {auc['e5']:7.3f} {auc['reader']:10.3f}")
if a.output:
    with open(a.output, "w") as f:
        for r in rows:
            f.write(json.dumps({k: r[k] for k in ("qid", "label", "lang", "top1", "flagged", "score", "e5", "reader")}) + "\n")
