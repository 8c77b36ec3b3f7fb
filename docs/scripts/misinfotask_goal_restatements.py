"""Where sentences that restate ARGUS's inferred goals travel, per run directory of
`bench misinfotask` with ARGUS: for every message of rounds 2+ (as its sender wrote it),
each sentence's best cosine to the goals known at the start of that round (e5, the
defense's embedder), split by channel (monitored or not) and sender (hijacked or not).
Counts sentences at or above `--threshold` (default: ARGUS's goal_dedup_threshold, the
cut `goal_redact` uses) and prints the distribution of the best cosines. Run from the repo
root, e.g. `.venv/bin/python docs/scripts/misinfotask_goal_restatements.py runs/s19/inject-argus-risk-gt-goal`."""
import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

from misguard.config import ArgusSettings
from misguard.defenses._text import split_sentences
from misguard.embed import get_embedder
from misguard.mas import read_events

parser = argparse.ArgumentParser()
parser.add_argument("run_dirs", nargs="+")
parser.add_argument("--show", action="store_true", help="print every sentence at or above the threshold")
parser.add_argument("--threshold", type=float, default=ArgusSettings().goal_dedup_threshold)
args = parser.parse_args()
embedder = get_embedder("e5")
for run_dir in args.run_dirs:
    best: dict[tuple[bool, bool], list[float]] = defaultdict(list)
    for path in sorted(Path(run_dir, "events").glob("*.jsonl")):
        log = read_events(path)
        attack = next(log.of_type("attack"), None)
        hijacked = set(attack.data.get("targets") or []) if attack else set()
        for event in log.of_type("interceptor_round"):
            goals = event.data.get("goals") or []
            if event.round < 2 or not goals:
                continue
            watched = {tuple(c) for c in event.data["localization"]["channels"]}
            goal_vectors = embedder.embed(goals, "query")
            for m in log.messages(event.round, delivered_only=False):
                sentences = split_sentences(m["original"])
                if not sentences:
                    continue
                cosines = (embedder.embed(sentences, "query") @ goal_vectors.T).max(axis=1)
                key = ((m["sender"], m["receiver"]) in watched, m["sender"] in hijacked)
                best[key].extend(float(c) for c in cosines)
                if args.show:
                    for sentence, cosine in zip(sentences, cosines):
                        if cosine >= args.threshold:
                            print(f"  {path.stem} r{event.round} {m['sender']}->{m['receiver']} "
                                  f"{'monitored' if key[0] else 'unmonitored'} {cosine:.3f}: {sentence[:160]}")
    print(run_dir)
    for (monitored, from_hijacked), values in sorted(best.items()):
        v = np.asarray(values)
        print(f"  {'monitored' if monitored else 'unmonitored':11s} from {'hijacked' if from_hijacked else 'other':8s}: "
              f"{len(v):4d} sentences, >= {args.threshold:.3f}: {int((v >= args.threshold).sum()):3d}; "
              f"cosine to goals median {np.median(v):.3f}, 90th pct {np.quantile(v, 0.9):.3f}, max {v.max():.3f}")
