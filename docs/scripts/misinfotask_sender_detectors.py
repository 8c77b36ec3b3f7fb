"""Sender-level evidence on attack-only event logs: how well each detector tells the hijacked
agent from the other senders, round by round. For each sender and round r it computes
- `risk`: the riskiest sentence the sender wrote in rounds 1..r (what `quarantine` acts on,
  at the risk model's act threshold), `risk_top3`, the mean of its three riskiest, and
  `risk_mean`, the mean of all its sentences (what localization's `risk_memory=mean` uses), with
  `--risk MODEL`;
- `node`: the G-Safeguard node detector's probability from round r's messages, and its
  maximum over rounds 1..r (what `sender_model_path` acts on), with `--node WEIGHTS`.
Prints the sender-level ROC AUC of each per round, and how many hijacked and other senders
reach a threshold (`--node-threshold`; `--risk` uses the model's act threshold), and the
node threshold that leaves at most `--fpr` of the other senders above it over all rounds
(how `sender_threshold` is chosen, on tasks that are not reported), and the same for `risk_mean`
(how `quarantine_mean_threshold` is chosen). Cross-fitting: `--fold
W RUN_DIR` (repeatable) scores each run directory with its own weights.
Usage, from the repo root:
`.venv/bin/python docs/scripts/misinfotask_sender_detectors.py [--risk M] [--node W RUN_DIR... | --fold W RUN_DIR ...]`"""
import argparse
import re
from pathlib import Path

import networkx as nx
import numpy as np
from sklearn.metrics import roc_auc_score

from misguard.config import GSafeguardSettings, load_settings
from misguard.defenses._gsafeguard import GSafeguard
from misguard.defenses._risk import MessageRiskModel
from misguard.defenses._text import split_sentences
from misguard.embed import get_embedder
from misguard.mas import read_events

parser = argparse.ArgumentParser()
parser.add_argument("runs", nargs="*")
parser.add_argument("--risk")
parser.add_argument("--node")
parser.add_argument("--fold", nargs=2, action="append", default=[], metavar=("WEIGHTS", "RUN_DIR"))
parser.add_argument("--node-threshold", type=float, default=0.5)
parser.add_argument("--fpr", type=float, default=0.05)
args = parser.parse_args()
embedder = get_embedder(None, load_settings().embed)
risk = MessageRiskModel.load(args.risk, embedder) if args.risk else None
jobs = [(args.node, run_dir) for run_dir in args.runs] + [tuple(f) for f in args.fold]
detectors = {w: GSafeguard(w, embedder, GSafeguardSettings(threshold=args.node_threshold)) for w, _ in jobs if w}

#: a message that opens like this carries no substance (the 0.5B agents' "I'm sorry, but I don't have any new messages")
EMPTY = re.compile(r"^\W*(i'?m sorry|i am sorry|i apologi[sz]e|sorry|i don'?t have|i do not have)", re.IGNORECASE)
rows: list[dict] = []  # one per (log, sender, round)
empty = {True: [0, 0], False: [0, 0]}  # hijacked? -> [messages without substance, messages]
for weights, run_dir in jobs:
    node = detectors.get(weights)
    for path in sorted(Path(run_dir, "events").glob("*.jsonl")):
        log = read_events(path)
        start = next(log.of_type("start"))
        agents = list(start.data["agents"])
        hijacked = {t for e in log.of_type("attack") for t in e.data.get("targets") or []}
        graph = nx.DiGraph(start.data["edges"])
        sentence_risks: dict[str, list[float]] = {a: [] for a in agents}
        top_node = dict.fromkeys(agents, 0.0)
        for r in log.rounds():
            messages = log.messages(r, delivered_only=False)
            for m in messages:
                empty[m["sender"] in hijacked][0] += bool(EMPTY.match(m["original"]))
                empty[m["sender"] in hijacked][1] += 1
            if risk is not None:
                for m in messages:
                    sentences = split_sentences(m["original"]) or [m["original"]]
                    sentence_risks[m["sender"]].extend(risk.probabilities(embedder.embed(sentences, "query")).tolist())
            scores = node.scores(graph, agents, messages) if node is not None else {}
            for a in agents:
                top_node[a] = max(top_node[a], scores.get(a, 0.0))
                ranked = sorted(sentence_risks[a], reverse=True) or [0.0]
                rows.append({"log": path.name, "sender": a, "round": r, "hijacked": a in hijacked,
                             "risk": ranked[0], "risk_top3": float(np.mean(ranked[:3])), "risk_mean": float(np.mean(ranked)),
                             "node": scores.get(a, 0.0), "node_max": top_node[a]})

for r in sorted({row["round"] for row in rows}):
    at = [row for row in rows if row["round"] == r]
    y = np.array([row["hijacked"] for row in at])
    parts = [f"round {r}: {int(y.sum())} hijacked, {int((~y).sum())} others"]
    for key, threshold, present in (("risk", risk.act_threshold if risk else None, risk is not None),
                                    ("risk_top3", None, risk is not None), ("risk_mean", None, risk is not None), ("node", args.node_threshold, bool(detectors)),
                                    ("node_max", args.node_threshold, bool(detectors))):
        if not present:
            continue
        x = np.array([row[key] for row in at])
        part = f"{key} AUC {roc_auc_score(y, x):.3f}"
        if threshold is not None:
            part += f", >= {threshold:.3f}: {int((x[y] >= threshold).sum())} hijacked, {int((x[~y] >= threshold).sum())} others"
        parts.append(part)
    print("; ".join(parts))

for flag, name in ((True, "hijacked"), (False, "other")):
    print(f"{name} senders' messages without substance (an apology or 'I don't have' first): "
          f"{empty[flag][0]} of {empty[flag][1]}")


def sender_threshold(key: str, name: str) -> None:
    """The value of `key` leaving at most `--fpr` of the other senders above it in any round
    (a sender quarantined once stays quarantined), and what it catches at that value."""
    peak: dict[tuple[str, str], tuple[bool, float]] = {}
    for row in rows:
        who = (row["log"], row["sender"])
        peak[who] = (row["hijacked"], max(peak.get(who, (False, 0.0))[1], row[key]))
    others = np.sort([v for hijacked, v in peak.values() if not hijacked])[::-1]
    allowed = int(np.floor(args.fpr * len(others)))
    threshold = float(others[allowed])
    line = (f"{name} threshold leaving at most {args.fpr:.0%} of the {len(others)} other senders above it "
            f"over all rounds ({allowed} senders): {threshold:.4f}")
    if key == "risk_mean" and risk is not None:
        # what the mean adds to quarantine's message-level test (riskiest sentence >= act)
        caught = [who for who, (hijacked, v) in peak.items() if hijacked and v > threshold]
        by_act = {who for who, (hijacked, _) in peak.items() if hijacked} & {
            (row["log"], row["sender"]) for row in rows if row["risk"] >= risk.act_threshold}
        line += (f"; above it: {len(caught)} of {sum(h for h, _ in peak.values())} hijacked senders, "
                 f"{len(set(caught) - by_act)} of them not caught at the act threshold")
    print(line)


if detectors:
    sender_threshold("node_max", "node")
if risk is not None:
    sender_threshold("risk_mean", "risk_mean")
