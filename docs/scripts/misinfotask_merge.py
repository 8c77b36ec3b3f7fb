"""Merge sweeps of one configuration run on disjoint task sets (e.g. two processes side by
side on a 2-core machine) into one run directory that `bench misinfotask-report` and
`misinfotask_pooled.py` read like a single sweep. Refuses inputs whose identity (data,
models, attack, defense and its parameters, topology, rounds, judge) differs, or whose
tasks overlap. The header is the first input's, with the union of the tasks and the
inputs named under `merged_from`; run records and event logs are copied as they are.

    .venv/bin/python docs/scripts/misinfotask_merge.py OUT DIR1 DIR2 [...]
"""
import json
import shutil
import sys
from pathlib import Path

if len(sys.argv) < 4:
    sys.exit(__doc__)
out, sources = Path(sys.argv[1]), [Path(d) for d in sys.argv[2:]]
if out.exists():
    sys.exit(f"{out} exists; give a new directory")
headers, records = [], []
for source in sources:
    lines = (source / "runlog.jsonl").read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    if header.get("type") != "header" or header.get("kind") != "bench.misinfotask":
        sys.exit(f"{source}: not a `bench misinfotask` run log")
    headers.append(header)
    records.append([line for line in lines[1:] if line.strip()])


def configuration(header: dict) -> dict:
    """The identity less the run a re-judged sweep came from (each input has its own)."""
    identity = dict(header["params"]["identity"])
    if "rejudged" in identity:
        identity["rejudged"] = {k: v for k, v in identity["rejudged"].items() if k != "source_run_id"}
    return identity


for source, header in zip(sources[1:], headers[1:]):
    if configuration(header) != configuration(headers[0]):
        sys.exit(f"{source}: another configuration than {sources[0]}; only sweeps of one configuration merge")
tasks: list[int] = []
for source, header in zip(sources, headers):
    overlap = set(tasks) & set(header["params"]["tasks"])
    if overlap:
        sys.exit(f"{source}: tasks {sorted(overlap)} are in an earlier input too")
    tasks += header["params"]["tasks"]
merged = dict(headers[0])
merged["params"] = {**headers[0]["params"], "tasks": sorted(tasks), "merged_from": [str(s) for s in sources],
                    "merged_run_ids": [h["run_id"] for h in headers]}
(out / "events").mkdir(parents=True)
for source in sources:
    for log in sorted((source / "events").glob("*.jsonl")):
        shutil.copy2(log, out / "events" / log.name)
with open(out / "runlog.jsonl", "w", encoding="utf-8") as f:
    f.write(json.dumps(merged) + "\n")
    for lines in records:
        f.writelines(line + "\n" for line in lines)
print(f"{out}: {len(tasks)} tasks from {len(sources)} sweeps, {sum(map(len, records))} records")
