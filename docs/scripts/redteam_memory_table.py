"""The memory guard under poison that hides: one row per `bench memory` run directory,
read from its run log's seed events (seed 0 by default, the seed every variant ran): the
detector (AUC, recall and FPR at its validation threshold), the build without defense
(wrong greedy decisions, hops of the derived records), the build with the online guard
(the same two), and the evaluation episodes after post-hoc repair.

    .venv/bin/python docs/scripts/redteam_memory_table.py runs/redteam-memory/standard runs/redteam-memory/slow ...
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def row(path: Path, seed: int) -> dict[str, float | str]:
    events = [json.loads(line) for line in (path / "runlog.jsonl").read_text(encoding="utf-8").splitlines()[1:]]
    header = json.loads((path / "runlog.jsonl").read_text(encoding="utf-8").splitlines()[0])
    data = next(e["data"] for e in events if e["type"] == "seed" and e["data"]["seed"] == seed)
    units = data["units"]

    def ratio(part: str, a: str, b: str, build: bool = True) -> float:
        num = sum((u[part]["build"] if build else u[part])[a] for u in units)
        den = sum((u[part]["build"] if build else u[part])[b] for u in units)
        return num / den if den else 0.0

    tp = sum(u["proposed"]["tp"] for u in units)
    fp = sum(u["proposed"]["fp"] for u in units)
    pos = sum(u["proposed"]["n_pos"] for u in units)
    neg = sum(u["proposed"]["n_neg"] for u in units)
    params = header["params"]
    return {
        "run": path.name, "capabilities": ",".join(params.get("capabilities", [])),
        "holdout": str(params.get("holdout", False)),
        "auc": data["auc"]["proposed"], "recall": tp / pos if pos else 0.0, "fpr": fp / neg if neg else 0.0,
        "wrong_before": ratio("before", "wrong", "decisions"), "hops_before": ratio("before", "hop_sum", "derived"),
        "wrong_online": ratio("online", "wrong", "decisions"), "hops_online": ratio("online", "hop_sum", "derived"),
        "misbehavior_before": ratio("before", "wrong", "decisions", build=False),
        "misbehavior_posthoc": ratio("proposed", "wrong", "decisions", build=False),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print("| run | capabilities | AUC | recall % | FPR % | build wrong %, no defense | hops, no defense | "
          "build wrong %, online W=16 | hops, online | eval misbehavior %: before -> post-hoc repair |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for path in args.runs:
        r = row(path, args.seed)
        caps = r["capabilities"] + (" (trained on I, III)" if r["holdout"] == "True" else "")
        print(f"| {r['run']} | {caps} | {r['auc']:.3f} | {100 * r['recall']:.1f} | {100 * r['fpr']:.2f} | "
              f"{100 * r['wrong_before']:.1f} | {r['hops_before']:.2f} | {100 * r['wrong_online']:.1f} | "
              f"{r['hops_online']:.2f} | {100 * r['misbehavior_before']:.1f} -> {100 * r['misbehavior_posthoc']:.1f} |")


if __name__ == "__main__":
    main()
