"""Where the embedding reader's time goes, in process: loading it (torch and the model) and
reading N CheckThat-2020 (train tweet, claim) pairs, each a text and a claim to embed, with
no embedding cache. Median of three fresh readers.

    python docs/scripts/claims_reader_inprocess.py [SPEC=st/minilm] [N=640]
"""
import statistics
import sys
import time
from pathlib import Path

from misguard.bench.claims._data import load_checkthat
from misguard.claims import load_reader
from misguard.config import EmbedSettings

spec = sys.argv[1] if len(sys.argv) > 1 else "st/minilm"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 640
ct = load_checkthat(Path(__file__).resolve().parents[3] / "shared" / "data")
pairs = list(zip([q.text for q in ct.queries["train"]][:n], [c.text for c in ct.claims][:n]))
loads, reads = [], []
for _ in range(3):
    started = time.perf_counter()
    reader = load_reader(spec, EmbedSettings())  # no cache_dir: every text is embedded
    loads.append(time.perf_counter() - started)
    started = time.perf_counter()
    reader.read_many(pairs)
    reads.append(time.perf_counter() - started)
read = statistics.median(reads)
print(f"{spec}: load {statistics.median(loads):.1f} s (the first includes importing torch: {loads[0]:.1f} s); "
      f"{len(pairs)} pairs ({2 * len(pairs)} texts) in {read:.1f} s: {2 * len(pairs) / read:.0f} texts/s")
