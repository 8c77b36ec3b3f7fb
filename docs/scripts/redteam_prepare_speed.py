"""What the claim guard's hardening costs in time: `ClaimGuard.views` (cleaning, unmasking,
social-media normalisation, injection screening, segmentation: everything before the
embedding) for the shipped guard and for the same guard with unmask and screen off,
interleaved so both arms see the same load; and e5's embedding of the same segments, for
scale. Undisguised dev-set queries and their homoglyph+leet disguises.

    OMP_NUM_THREADS=1 .venv/bin/python docs/scripts/redteam_prepare_speed.py --data ../shared/data --store runs/redteam-store
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from misguard.attacks.transforms import compose
from misguard.bench.claims._data import load_devset
from misguard.bench.redteam import disguise
from misguard.claims import ClaimGuard, ClaimStore
from misguard.embed import get_embedder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--store", type=Path, required=True)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    dev = load_devset(args.data)
    store = ClaimStore.open(args.store, get_embedder("e5"))
    arms = {"hardened": ClaimGuard(store, cache_size=0),
            "unhardened": ClaimGuard(store, cache_size=0, unmask=(), screen_injections=False)}
    pipeline = compose("homoglyph+leet")
    sets = {"undisguised": [q.text for q in dev.queries],
            "homoglyph+leet": [disguise(q, pipeline, seed=0) for q in dev.queries]}
    for name, texts in sets.items():
        times: dict[str, list[float]] = {arm: [] for arm in arms}
        for _ in range(args.repeats):
            for arm, guard in arms.items():  # interleaved
                started = time.perf_counter()
                for text in texts:
                    guard.views(text)
                times[arm].append((time.perf_counter() - started) / len(texts))
        med = {arm: statistics.median(t) for arm, t in times.items()}
        print(f"{name}: views per text, median of {args.repeats}: " + ", ".join(f"{a} {m * 1e3:.3f} ms" for a, m in med.items())
              + f"; ratio {med['hardened'] / med['unhardened']:.2f}")
    segments = [s.text for t in sets["undisguised"][:120] for s in arms["hardened"].views(t)]
    embedder = get_embedder("e5")
    embedder.embed(segments[:8], "query")
    started = time.perf_counter()
    embedder.embed(segments, "query")
    per_text = (time.perf_counter() - started) / 120
    print(f"e5 embedding of the same texts' segments: {per_text * 1e3:.1f} ms per text")


if __name__ == "__main__":
    main()
