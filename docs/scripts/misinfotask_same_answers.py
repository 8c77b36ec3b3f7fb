"""Do two `bench misinfotask` runs give the same final answers on the tasks they share, and
did a defense change any message on the way? Per task:seed, "same" or "differs", and the
messages each run's interceptors changed (action other than "pass"). With no message changed,
a differing answer is decoding noise, not the defense.

    python docs/scripts/misinfotask_same_answers.py RUN_A RUN_B
"""
import json
import sys
from pathlib import Path


def answers(run: Path) -> dict[str, str]:
    out = {}
    for line in open(run / "runlog.jsonl", encoding="utf-8"):
        event = json.loads(line)
        if event["type"] == "run":
            out[event["key"]] = event["data"]["answer"]
    return out


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
first, second = answers(a), answers(b)
shared = sorted(set(first) & set(second), key=lambda k: tuple(map(int, k.split(":"))))
same = 0
for key in shared:
    equal = first[key] == second[key]
    same += equal
    print(f"task {key}: {'same' if equal else 'differs'}; messages changed: {changed_messages(a, key)} / {changed_messages(b, key)}")
print(f"{same} of {len(shared)} answers the same")
