"""What the claim guard's hardening costs in time: `ClaimGuard.views` (cleaning, unmasking,
social-media normalisation, injection screening, segmentation: everything before the
embedding) for the hardened and the unhardened guard, interleaved so both arms see the same
load, on undisguised dev-set queries and their homoglyph+leet disguises; and the embedder's
time on the same texts' segments, for scale."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from ...attacks.transforms import compose
from ...claims import Decision, load_devset
from ...config import Settings
from ...embed import get_embedder
from ...runlog import RunHeader, RunLog, public_settings
from ..claims import resolve_data_dir
from ._claims import ARMS, build_store, disguise, guards

#: the disguise the cost is also measured on (the heaviest unmasking)
DISGUISED = "homoglyph+leet"


def run_hardening_cost(
    settings: Settings,
    output: Path,
    *,
    data_dir: Path | None = None,
    distractors: int = 2000,
    store_dir: Path | None = None,
    repeats: int = 5,
    embed_texts: int = 120,
    console: Console | None = None,
    decision: Decision | None = None,
) -> dict[str, Any]:
    """Median per-text time of `views` per arm and text set, their ratio, and the embedding
    time per text of the same segments; written to OUTPUT/runlog.jsonl and returned.
    `decision`: the guards' decision (default: the one shipped for the embedder; it does not
    take part in what is timed)."""
    console = console or Console()
    data = resolve_data_dir(settings, data_dir)
    dev = load_devset(data)
    embedder = get_embedder(None, settings.embed)
    header = RunHeader(kind="bench.redteam.cost", settings=public_settings(settings),
                       components={"embedder": embedder.describe()}, seeds={"seed": settings.seed},
                       params={"target": "cost", "data_dir": str(data), "repeats": repeats, "queries": len(dev.queries)})
    output.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {}
    with RunLog.open(output / "runlog.jsonl", header, resume=False) as log:
        store = build_store(store_dir or output / "store", embedder, data, distractors, console)
        try:
            arms = guards(store, ARMS, decision)
            pipeline = compose(DISGUISED)
            sets = {"undisguised": [q.text for q in dev.queries],
                    DISGUISED: [disguise(q, pipeline, seed=settings.seed) for q in dev.queries]}
            for name, texts in sets.items():
                times: dict[str, list[float]] = {arm: [] for arm in arms}
                for _ in range(repeats):
                    for arm, guard in arms.items():  # interleaved: both arms see the same load
                        started = time.perf_counter()
                        for text in texts:
                            guard.views(text)
                        times[arm].append((time.perf_counter() - started) / len(texts))
                med = {arm: statistics.median(t) for arm, t in times.items()}
                row = {"texts": len(texts), **{f"{arm}_ms": 1e3 * m for arm, m in med.items()},
                       "ratio": med["hardened"] / med["unhardened"]}
                log.write("views", key=name, **row)
                summary[name] = row
            segments = [s.text for t in sets["undisguised"][:embed_texts] for s in arms["hardened"].views(t)]
            embedder.embed(segments[:8], "query")  # warm up
            started = time.perf_counter()
            embedder.embed(segments, "query")
            per_text = (time.perf_counter() - started) / min(embed_texts, len(sets["undisguised"]))
            summary["embed_ms_per_text"] = 1e3 * per_text
            summary["share"] = summary["undisguised"]["hardened_ms"] / summary["embed_ms_per_text"]
            log.write("embed", key="embed", ms_per_text=summary["embed_ms_per_text"], share=summary["share"])
        finally:
            store.close()
    for name in sets:
        r = summary[name]
        console.print(f"{name}: views per text, median of {repeats}: hardened {r['hardened_ms']:.2f} ms, "
                      f"unhardened {r['unhardened_ms']:.2f} ms (x{r['ratio']:.2f})", highlight=False)
    console.print(f"{embedder.spec} embedding of the same texts' segments: {summary['embed_ms_per_text']:.1f} ms per text; "
                  f"the hardened views are {summary['share']:.2%} of it", highlight=False)
    return summary
