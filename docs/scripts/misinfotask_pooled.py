"""MT change of a defense against attack-only pooled over several task sets, each set run
as its own pair of sweeps. Arguments: attack-only and defense run directories (judged, as
`bench misinfotask-rejudge` writes them), alternating, one pair per task set. Prints each
metric's per-task means and the paired bootstrap change over the union of the task pairs
(the same statistic `bench misinfotask-report` gives per set). E.g.
`.venv/bin/python docs/scripts/misinfotask_pooled.py runs/none-0-15 runs/q-0-15 runs/none-16-29 runs/q-16-29`."""
import sys
from pathlib import Path

from misguard.bench.misinfotask._report import METRICS, summarize
from misguard.bench.misinfotask._stats import paired_reduction_ci

dirs = sys.argv[1:]
if not dirs or len(dirs) % 2:
    sys.exit("give attack-only and defense run directories in pairs: NONE_A DEF_A [NONE_B DEF_B ...]")
base: dict[str, dict[str, float]] = {}
treated: dict[str, dict[str, float]] = {}
for none_dir, defense_dir in zip(dirs[::2], dirs[1::2]):
    for pooled, run_dir in ((base, none_dir), (treated, defense_dir)):
        per_task = summarize(Path(run_dir) / "runlog.jsonl")["per_task"]
        for field, values in per_task.items():
            overlap = set(pooled.setdefault(field, {})) & set(values)
            if overlap:
                sys.exit(f"{run_dir}: tasks {sorted(overlap)} are already in another pair; task sets must be disjoint")
            pooled[field].update(values)
for label, (field, _) in METRICS.items():
    d = paired_reduction_ci(base.get(field, {}), treated.get(field, {}))
    if not d["n"]:
        continue
    keys = sorted(set(base[field]) & set(treated[field]))
    mean = lambda values: sum(values[k] for k in keys) / len(keys)  # noqa: E731
    rel = "n/a" if d["change"] is None else f"{100 * d['change']:+.1f}% [{100 * d['lo']:+.1f}, {100 * d['hi']:+.1f}]"
    print(f"{label}: n={d['n']} attack-only {mean(base[field]):.3f} defense {mean(treated[field]):.3f} "
          f"change {rel} difference {d['diff']:+.3f} [{d['diff_lo']:+.3f}, {d['diff_hi']:+.3f}]")
