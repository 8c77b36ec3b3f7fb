"""What the pair reader costs through the CLI: `misguard check --input` on the 997 CheckThat
train + dev tweets against a CheckThat store, with the decision fitted without a reader and
with the one fitted with it (`--decision D --reader R`), alternated three times; texts/s
(process start and model loading included) and the median ratio.

    python docs/scripts/claims_reader_speed.py STORE DECISION_WITHOUT DECISION_WITH READER   (a directory or an embedder spec: st/minilm)
"""
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from misguard.bench.claims._data import load_checkthat

store, without, with_reader, reader = sys.argv[1:5]
ct = load_checkthat(Path(__file__).resolve().parents[3] / "shared" / "data")
texts = [q.text for split in ("train", "dev") for q in ct.queries[split]]
exe = str(Path(sys.executable).parent / "misguard")
with tempfile.TemporaryDirectory() as tmp:
    inp = Path(tmp) / "in.jsonl"
    inp.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)), encoding="utf-8")
    rates: dict[str, list[float]] = {"without reader": [], "with reader": []}
    flagged: dict[str, float] = {}
    for _ in range(3):
        for name, extra in (("without reader", ["--decision", without]), ("with reader", ["--decision", with_reader, "--reader", reader])):
            out = Path(tmp) / "out.jsonl"
            started = time.perf_counter()
            subprocess.run([exe, "check", "--db", store, "--input", str(inp), "--output", str(out), *extra], check=True,
                           capture_output=True)
            rates[name].append(len(texts) / (time.perf_counter() - started))
            rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
            flagged[name] = sum(r["flagged"] for r in rows) / len(rows)
    for name, r in rates.items():
        print(f"{name}: {', '.join(f'{x:.1f}' for x in r)} texts/s (median {statistics.median(r):.1f}); "
              f"flagged {flagged[name]:.1%} of {len(texts)} (train + dev tweets)")
    print(f"ratio with / without: {statistics.median(rates['with reader']) / statistics.median(rates['without reader']):.2f}")
