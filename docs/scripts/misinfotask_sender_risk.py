"""How well the message risk model tells the hijacked agent from the others at the level of
a *sender* (all it sent in a run), from attack-only event logs: per sender, the riskiest
sentence (what `quarantine` acts on, at the model's act threshold) and the mean of its
three riskiest. Prints how many hijacked and other senders reach the act threshold and the
sender-level ROC AUC of each statistic. A diagnosis of what bounds quarantine, not a choice:
a sender-level threshold must be chosen on tasks that are not reported. Usage, from the
repo root: `.venv/bin/python docs/scripts/misinfotask_sender_risk.py RISK_MODEL RUN_DIR...`."""
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from misguard.config import load_settings
from misguard.defenses._risk import MessageRiskModel
from misguard.defenses._text import split_sentences
from misguard.embed import get_embedder
from misguard.mas import read_events

model_path, *run_dirs = sys.argv[1:]
settings = load_settings()
embedder = get_embedder(None, settings.embed)
risk = MessageRiskModel.load(model_path, embedder)
rows = []  # (hijacked, max risk, mean of top 3)
for run_dir in run_dirs:
    for path in sorted(Path(run_dir, "events").glob("*.jsonl")):
        log = read_events(path)
        hijacked = {t for e in log.of_type("attack") for t in e.data.get("targets") or []}
        by_sender: dict[str, list[str]] = {}
        for m in log.messages(delivered_only=False):
            by_sender.setdefault(m["sender"], []).extend(split_sentences(m["original"]) or [m["original"]])
        for sender, sentences in by_sender.items():
            p = np.sort(risk.probabilities(embedder.embed(sentences, "query")))[::-1]
            rows.append((sender in hijacked, float(p[0]), float(p[:3].mean())))
y = np.array([r[0] for r in rows])
for name, col in (("riskiest sentence", 1), ("mean of the 3 riskiest", 2)):
    x = np.array([r[col] for r in rows])
    print(f"{name}: sender-level ROC AUC {roc_auc_score(y, x):.3f}")
top = np.array([r[1] for r in rows])
print(f"senders: {int(y.sum())} hijacked, {int((~y).sum())} others; at act threshold {risk.act_threshold:.3f}: "
      f"{int((top[y] >= risk.act_threshold).sum())} hijacked, {int((top[~y] >= risk.act_threshold).sum())} others")
