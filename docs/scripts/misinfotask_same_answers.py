"""Do two `bench misinfotask` runs give the same final answers on the tasks they share, and
did a defense change any message on the way? Per task:seed, "same" or "differs", the
messages each run's interceptors changed (action other than "pass") and each run's agent
wall time per round. With no message changed, a differing answer is decoding noise, not the
defense. Last line: the median ratio of the two runs' wall times per round (B / A).
(`bench misinfotask-report` does the same check for every defense/attack-only pair.)

    python docs/scripts/misinfotask_same_answers.py RUN_A RUN_B
"""
import statistics
import sys
from pathlib import Path

from misguard.bench.misinfotask import summarize

a, b = (summarize(Path(d) / "runlog.jsonl") for d in sys.argv[1:3])
wall = {side: {f"{r['task_id']}:{r['seed']}": r["mas_wall_s_per_round"] for r in s["per_run"]} for side, s in (("a", a), ("b", b))}
shared = sorted(set(a["answers"]) & set(b["answers"]), key=lambda k: tuple(map(int, k.split(":"))))
same = 0
for key in shared:
    equal = a["answers"][key] == b["answers"][key]
    same += equal
    print(f"task {key}: {'same' if equal else 'differs'}; messages changed: {a['messages_changed'][key]} / {b['messages_changed'][key]}; "
          f"agents' wall s per round: {wall['a'][key]:.1f} / {wall['b'][key]:.1f}")
print(f"{same} of {len(shared)} answers the same")
if shared:
    print(f"median wall time per round, B / A: {statistics.median(wall['b'][k] / wall['a'][k] for k in shared):.2f}")
