"""Do two `bench misinfotask` runs give the same final answers on the tasks they share, and
did a defense change any message on the way? Per task:seed, "same" or "differs", the
messages each run's interceptors changed (action other than "pass") and each run's agent
wall time per round. With no message changed, a differing answer is decoding noise, not the
defense. Last line: the median ratio of the two runs' wall times per round (B / A).

    python docs/scripts/misinfotask_same_answers.py RUN_A RUN_B
"""
import json
import statistics
import sys
from pathlib import Path


def records(run: Path) -> dict[str, dict]:
    out = {}
    for line in open(run / "runlog.jsonl", encoding="utf-8"):
        event = json.loads(line)
        if event["type"] == "run":
            out[event["key"]] = event["data"]
    return out


def wall_per_round(record: dict) -> float:
    return record["mas_wall_s"] / max(1, len(record["rounds"]))


def changed_messages(run: Path, key: str) -> int:
    task, seed = key.split(":")
    path = run / "events" / f"task{task}-seed{seed}.jsonl"
    if not path.is_file():
        return 0
    count = 0
    for line in open(path, encoding="utf-8"):
        event = json.loads(line)
        if event.get("type") == "interception" and event["data"].get("action") not in (None, "pass"):
            count += 1
    return count


a, b = Path(sys.argv[1]), Path(sys.argv[2])
first, second = records(a), records(b)
shared = sorted(set(first) & set(second), key=lambda k: tuple(map(int, k.split(":"))))
same = 0
for key in shared:
    equal = first[key]["answer"] == second[key]["answer"]
    same += equal
    print(f"task {key}: {'same' if equal else 'differs'}; messages changed: {changed_messages(a, key)} / {changed_messages(b, key)}; "
          f"agents' wall s per round: {wall_per_round(first[key]):.1f} / {wall_per_round(second[key]):.1f}")
print(f"{same} of {len(shared)} answers the same")
if shared:
    ratio = statistics.median(wall_per_round(second[k]) / wall_per_round(first[k]) for k in shared)
    print(f"median wall time per round, B / A: {ratio:.2f}")
