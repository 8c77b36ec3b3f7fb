"""Replay ARGUS's localization on recorded MisInfoTask runs and score it against the
hijacked agents' outgoing edges. Exact when the monitored set changes no message (no
rectifier LLM, `risk_all_channels`): each round's traffic, goals and risks are as recorded.
Arguments: run directories (with `events/`); `--defense-param KEY=VALUE` overrides the
recorded ARGUS parameters (e.g. `risk_memory=last_max`, the localizer before 2026-11-26).
Prints per round the mean recall and precision, and how many rounds reproduce the recorded
channels (all of them when the overrides and the code are those of the run). E.g.
`.venv/bin/python docs/scripts/misinfotask_localization_replay.py runs/mt-65-80/inject-argus-q --defense-param risk_memory=last_max`."""
import argparse
import asyncio
import json
from collections import defaultdict
from pathlib import Path

import networkx as nx

from misguard.config import ArgusSettings
from misguard.defenses import ArgusDefense, localization_quality
from misguard.embed import get_embedder
from misguard.llm import get_llm
from misguard.mas import EventLogView, SystemView, read_events

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("runs", nargs="+", type=Path)
parser.add_argument("--defense-param", action="append", default=[], metavar="KEY=VALUE")
args = parser.parse_args()
overrides = dict(p.split("=", 1) for p in args.defense_param)

embedder = get_embedder("e5")
recall, precision = defaultdict(list), defaultdict(list)
same = total = 0
for run in args.runs:
    for path in sorted((run / "events").glob("task*-seed*.jsonl")):
        header = json.loads(path.open(encoding="utf-8").readline())
        if header["config"].get("defense") != "argus":
            raise SystemExit(f"{path}: not an ARGUS run")
        log = read_events(path)
        defense = ArgusDefense(get_llm("mock"), embedder, ArgusSettings(**{**header["config"]["defense_params"], **overrides}))
        start = next(log.of_type("start")).data
        hijacked = next(log.of_type("attack")).data["targets"]
        graph = nx.DiGraph()
        graph.add_nodes_from(start["agents"])
        graph.add_edges_from(tuple(e) for e in start["edges"])
        for recorded in log.of_type("interceptor_round"):
            r = recorded.round
            # the goal set as it stood when the round started (goals are seeded by interceptions)
            defense.goals = type(defense.goals)(embedder, defense.goals.threshold)
            for goal in recorded.data["goals"]:
                defense.goals.texts.append(goal)
                defense.goals.vectors.append(embedder.embed([goal], "query")[0])
            view = SystemView(graph, r, EventLogView(log), tuple(start["agents"]))
            channels = [tuple(c) for c in asyncio.run(defense.start_round(view))["localization"]["channels"]]
            same += channels == [tuple(c) for c in recorded.data["localization"]["channels"]]
            total += 1
            q = localization_quality(channels, hijacked, list(graph.edges()))
            recall[r].append(q["recall"])
            precision[r].append(q["precision"])
for r in sorted(recall):
    print(f"round {r}: tasks {len(recall[r])}  recall {sum(recall[r]) / len(recall[r]):.3f}  "
          f"precision {sum(precision[r]) / len(precision[r]):.3f}")
later = [v for r in recall if r > 1 for v in recall[r]]
print(f"rounds 2+: recall {sum(later) / len(later):.3f}; rounds reproducing the recorded channels: {same} of {total}")
