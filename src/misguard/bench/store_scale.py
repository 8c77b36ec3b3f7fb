"""`misguard bench store-scale`: a claim store of a million claims, through the public API.

- **Real stores**: the CheckThat-2020 verified claims and the Snopes claims, embedded with the
  configured embedder and written with `ClaimStore.add` (made once under `--stores`, reused).
- **Recall**: recall@10 of the approximate index against exact search on the real stores
  (`index="approximate"` against `index="exact"`), for plain and false-rated-only searches.
  Queries: CheckThat-2020 tweets (train: the set the search breadth was chosen on;
  dev + test: reported) and LIAR true claims (never stored) against the Snopes store.
- **Large store**: `--claims` synthetic claims written with `ClaimStore.add(claims, vectors=...)`
  in batches: each vector a random mix of two real claim vectors plus noise (normalised),
  each text the first claim's text with the start of the second's. Timing only: their
  embeddings were not made by the embedder from these texts.
- **Checks**: in a fresh process per arm (so its RSS is the store's), `ClaimGuard.check` of
  real tweets one at a time and `ClaimStore.search` of their embeddings, `index="exact"` and
  `index="auto"` alternating; recall@10 of the approximate index on the large store too.
- **Checks, profiled**: where a check's time goes: each tweet's embedding alone next to its
  check, and one profiled pass over the same tweets (time inside the embedder, the store's
  searches and the rest of the guard).
- **Adds**: one-claim adds to the large store and batches of real claims next to the
  embedder's raw rate on the same texts, alternating a delta write (the default) with a
  whole write (`ClaimStore.delta_limit = 0`: every write makes a new base, as before deltas).

Every measurement goes to the run log first; the summary is computed from it.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from ..claims import ClaimGuard, ClaimStore, open_claim_store, read_claims, store_backend
from ..claims._sources import SNOPES, load_checkthat, load_true_claims
from ..claims._storage import hubness
from ..config import Settings
from ..embed import get_embedder
from ..runlog import RunHeader, RunLog, public_settings, read_runlog
from ..types import Claim

#: Claims per `add` while the large store is written (one index generation each).
BATCH = 100_000
#: Search breadths (`ClaimStore.ann_ef`) measured on the tuning queries.
EF_CHOICES = (32, 64, 128, 256, 512)
#: Claims a check's search asks for (`ClaimGuard`'s default `k`).
SEARCH_K = 20
#: How adds are written: a delta beside the base (the default), or the whole index each time.
WRITE_ARMS = {"delta": ClaimStore.delta_limit, "whole": 0}


def run_store_scale_bench(settings: Settings, output: Path, *, data: Path, stores: Path, claims: int = 1_000_000,
                          queries: int = 200, repeats: int = 2, adds: int = 5, batch_claims: int = 256,
                          real_recall: bool = True, backends: tuple[str, ...] = (),
                          console: Console | None = None) -> dict[str, Any]:
    console = console or Console()
    embed_settings = settings.embed.model_copy(update={"memory_cache_size": 0, "cache_dir": None})
    embedder = get_embedder(None, embed_settings)
    output.mkdir(parents=True, exist_ok=True)
    stores.mkdir(parents=True, exist_ok=True)
    header = RunHeader(kind="bench.store_scale", settings=public_settings(settings), seeds={"synthetic": settings.seed},
                       components={"embedder": embedder.describe()},
                       params={"data": str(data), "claims": claims, "queries": queries, "repeats": repeats,
                               "adds": adds, "batch_claims": batch_claims, "backends": list(backends),
                               "cpu_count": os.cpu_count(),
                               "load_average_1min_at_start": os.getloadavg()[0]})
    checkthat = load_checkthat(data)
    tweets = {split: [q.text for q in checkthat.queries[split]] for split in ("train", "dev", "test")}
    liar_true = [c.text for c in load_true_claims(data)][:500]
    with RunLog.open(output / "runlog.jsonl", header, resume=False) as log:
        real = {"checkthat": (stores / "checkthat", checkthat.claims),
                "snopes": (stores / "snopes", read_claims(data / SNOPES))}
        # Only the backend arms (no recall, no large store) need just the CheckThat store.
        needed = real if real_recall or claims else {"checkthat": real["checkthat"]}
        for name, (path, rows) in needed.items():
            _ensure_store(path, embedder, rows, log, name, console)
        # Recall of the approximate index on the real stores.
        query_sets = {"checkthat": {"train": tweets["train"], "dev+test": tweets["dev"] + tweets["test"]},
                      "snopes": {"liar-true": liar_true}}
        for name, sets in (query_sets if real_recall else {}).items():
            for split, texts in sets.items():
                vectors = embedder.embed(texts, "query")
                # The breadth is chosen on the train tweets: there every candidate is measured.
                breadths = EF_CHOICES if split == "train" else (ClaimStore.ann_ef,)
                for ef in breadths:
                    with ClaimStore.open(real[name][0], embedder, index="exact") as exact, _with_breadth(ef), \
                            ClaimStore.open(real[name][0], embedder, index="approximate") as approx:
                        for flaggable in (False, True):
                            log.write("recall", store=name, split=split, flaggable_only=flaggable, claims=len(exact),
                                      library=approx.ann_library, ef=ef, queries=len(texts),
                                      recall=_recall(approx, exact, vectors, 10, flaggable))
        console.print("recall on the real stores measured", highlight=False)
        # Other store backends holding the real CheckThat claims, against exact SQLite search.
        for spec in backends:
            _backend_arm(spec, real["checkthat"][0], embedder, tweets["dev"] + tweets["test"], log, console)
        if claims:
            _large_store_arms(settings, embedder, embed_settings, real, stores, data, tweets, log, console,
                              claims=claims, queries=queries, repeats=repeats, adds=adds, batch_claims=batch_claims)
    summary = summarise(output / "runlog.jsonl")
    (output / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    console.print(render_summary(summary))
    return summary


def _large_store_arms(settings: Settings, embedder: Any, embed_settings: Any, real: dict[str, tuple[Path, list[Claim]]],
                      stores: Path, data: Path, tweets: dict[str, list[str]], log: RunLog, console: Console, *,
                      claims: int, queries: int, repeats: int, adds: int, batch_claims: int) -> None:
    """The large (synthetic) store: recall, checks in a fresh process per arm, adds."""
    # The large store, from mixes of the real claims' vectors.
    big = stores / f"synthetic-{claims}"
    base_vectors, base_claims = _base(real, embedder)
    _ensure_synthetic(big, embedder, base_vectors, base_claims, claims, settings.seed, log, console)
    # Checks and searches in a fresh process per arm, alternating.
    texts = tweets["test"][:queries]
    query_vectors = embedder.embed(texts, "query")
    arms = ["auto", "exact"]
    # Recall on the large store: every breadth on (the first) train tweets, the shipped
    # one on the test tweets that the checks use.
    train_vectors = embedder.embed(tweets["train"][:queries], "query")
    runs = [("train", ef, train_vectors) for ef in EF_CHOICES] + [("test", ClaimStore.ann_ef, query_vectors)]
    with ClaimStore.open(big, embedder, index="exact") as exact:
        for split, ef, split_vectors in runs:
            with _with_breadth(ef), ClaimStore.open(big, embedder, index="approximate") as approx:
                for flaggable in (False, True):
                    log.write("recall", store=f"synthetic-{claims}", split=split, flaggable_only=flaggable,
                              library=approx.stats()["approximate_index"], ef=ef, claims=len(exact),
                              queries=len(split_vectors),
                              recall=_recall(approx, exact, split_vectors, 10, flaggable))
    # What each add cost before adds computed hubness only for the added claims, on the
    # first 100,000 claims (it grows linearly with the store: O(n x 8,192)).
    with ClaimStore.open(big, embedder, index="exact") as exact:
        first = exact.vectors[:100_000]
        with exact.blas_single_thread():
            started = time.perf_counter()
            hubness(first)
        log.write("hubness_every_claim", claims=len(first), seconds=time.perf_counter() - started,
                  load=os.getloadavg()[0])
    context = multiprocessing.get_context("spawn")
    for repeat in range(repeats):
        for mode in (arms if repeat % 2 == 0 else arms[::-1]):
            with context.Pool(1) as pool:
                result = pool.apply(_check_arm, (str(big), embed_settings.model_dump(mode="json"), mode, texts))
            log.write("checks", key=f"{repeat}-{mode}", repeat=repeat, mode=mode, load=os.getloadavg()[0], **result)
            console.print(f"checks repeat {repeat + 1}/{repeats} index={mode}: p95 "
                          f"{np.percentile(result['check_ms'], 95):.1f} ms", highlight=False)
    # Adds to the large store: one claim at a time, then batches next to the raw embedder,
    # each write arm in turn.
    measure_adds(big, embedder, iter(load_true_claims(data)[500:]), adds, batch_claims, query_vectors, log)
    console.print("adds measured", highlight=False)


def measure_adds(path: Path, embedder: Any, fresh: Iterator[Claim], adds: int, batch_claims: int,
                 query_vectors: np.ndarray, log: RunLog) -> None:
    """One-claim adds to the store at `path`, alternating the write arms (`WRITE_ARMS`); a
    batch of `batch_claims` per arm next to the embedder's raw rate on the same texts (the
    delta last); then searches of `query_vectors` with the delta it leaves."""
    with ClaimStore.open(path, embedder) as store:
        for i in range(adds):
            for arm in (WRITE_ARMS if i % 2 == 0 else list(WRITE_ARMS)[::-1]):
                claim = next(fresh).model_copy(update={"id": f"bench-add-{time.time_ns()}"})
                with _with_delta_limit(WRITE_ARMS[arm]):
                    started = time.perf_counter()
                    store.add([claim], source="bench")
                log.write("add_one", arm=arm, claims=len(store), seconds=time.perf_counter() - started,
                          delta=len(store.delta_slots), load=os.getloadavg()[0])
        for arm, limit in reversed(WRITE_ARMS.items()):
            batch = [next(fresh) for _ in range(batch_claims)]
            batch = [c.model_copy(update={"id": f"bench-batch-{time.time_ns()}-{i}"}) for i, c in enumerate(batch)]
            started = time.perf_counter()
            embedder.embed([c.text for c in batch], "passage")
            raw = time.perf_counter() - started
            with _with_delta_limit(limit):
                started = time.perf_counter()
                report = store.add(batch, source="bench")
            log.write("add_batch", arm=arm, claims=len(store), added=report.added,
                      seconds=time.perf_counter() - started, raw_seconds=raw, load=os.getloadavg()[0])
        # Searches now cover the delta too (scored exactly beside the graph's candidates).
        search_ms = []
        for row in query_vectors:
            started = time.perf_counter()
            store.search(row, SEARCH_K, flaggable_only=True)
            search_ms.append(1000 * (time.perf_counter() - started))
        # What a replica pays to follow a write: opening the store with its delta.
        started = time.perf_counter()
        with ClaimStore.open(path, embedder):
            opened = time.perf_counter() - started
        log.write("search_with_delta", claims=len(store), delta=len(store.delta_slots), search_ms=search_ms,
                  open_seconds=opened, load=os.getloadavg()[0])


def _backend_arm(spec: str, source: Path, embedder: Any, texts: list[str], log: RunLog, console: Console, *,
                 decision: Any = None) -> None:
    """Another store backend (`open_claim_store(spec)`) holding the claims of the SQLite store
    at `source` with the same vectors (copied once, reused): recall@10 of its search against
    exact SQLite search, its search latency next to SQLite's (one query at a time,
    alternating), and how often `ClaimGuard` (with `decision`, default the shipped one) gives
    the same verdict and evidence on both."""
    with ClaimStore.open(source, embedder, index="exact") as exact, open_claim_store(spec, embedder, create=True) as other:
        backend = store_backend(spec)
        if len(other) < len(exact):
            rows = list(exact.iter_claims())  # slot order
            started = time.perf_counter()
            report = other.add(rows, vectors={c.id: exact.vectors[slot] for slot, c in enumerate(rows)}, source="bench")
            log.write("backend_store", backend=backend, claims=len(other), added=report.added,
                      seconds=time.perf_counter() - started, load=os.getloadavg()[0])
        vectors = embedder.embed(texts, "query")
        for flaggable in (False, True):
            log.write("backend_recall", backend=backend, store="checkthat", split="dev+test", flaggable_only=flaggable,
                      claims=len(other), queries=len(texts), recall=_recall(other, exact, vectors, 10, flaggable))
        timings: dict[str, list[float]] = {"sqlite": [], backend: []}
        for i, row in enumerate(vectors):
            for name, store in ((("sqlite", exact), (backend, other)) if i % 2 == 0 else ((backend, other), ("sqlite", exact))):
                started = time.perf_counter()
                store.search(row, 20, flaggable_only=True)
                timings[name].append(1000 * (time.perf_counter() - started))
        on_sqlite = ClaimGuard(exact, decision=decision, cache_size=0).check_many(texts)
        on_other = ClaimGuard(other, decision=decision, cache_size=0).check_many(texts)
        same = [a.flagged == b.flagged and [e.claim.id for e in a.evidence] == [e.claim.id for e in b.evidence]
                for a, b in zip(on_sqlite, on_other)]
        log.write("backend_checks", backend=backend, claims=len(other), texts=len(texts), same_verdict=float(np.mean(same)),
                  flagged_sqlite=sum(v.flagged for v in on_sqlite), flagged_backend=sum(v.flagged for v in on_other),
                  search_p50_ms={name: float(np.percentile(t, 50)) for name, t in timings.items()},
                  load=os.getloadavg()[0])
    console.print(f"{backend} backend measured", highlight=False)


def _ensure_store(path: Path, embedder: Any, rows: list[Claim], log: RunLog, name: str, console: Console) -> None:
    """Write `rows` into the store at `path` unless it holds them already (reused across runs)."""
    with ClaimStore.open(path, embedder, create=True) as store:
        if len(store) >= len({c.id for c in rows}):
            return
        console.print(f"embedding and storing {len(rows)} {name} claims in {path}", highlight=False)
        report = store.add(rows, source=name)
        log.write("real_store", store=name, claims=len(store), embedded=report.embedded, seconds=report.seconds,
                  rate=report.embedded / report.seconds, load=os.getloadavg()[0])


def _base(real: dict[str, tuple[Path, list[Claim]]], embedder: Any) -> tuple[np.ndarray, list[Claim]]:
    vectors, claims = [], []
    for path, _ in real.values():
        with ClaimStore.open(path, embedder) as store:
            vectors.append(store.vectors.copy())
            claims.extend(store.iter_claims())
    return np.concatenate(vectors), claims


def _ensure_synthetic(path: Path, embedder: Any, base_vectors: np.ndarray, base_claims: list[Claim], total: int,
                      seed: int, log: RunLog, console: Console) -> None:
    """Grow the synthetic store at `path` to `total` claims, `BATCH` per add (resumable)."""
    with ClaimStore.open(path, embedder, create=True) as store:
        start = 0  # batches are written whole, in order: skip those already there
        while start < total and store.slot_of(f"syn-{min(start + BATCH, total) - 1}") is not None:
            start += BATCH
        while start < total:
            count = min(BATCH, total - start)
            claims, vectors = synthetic_claims(base_vectors, base_claims, start, count, seed)
            started = time.perf_counter()
            store.add(claims, vectors=vectors, source="synthetic")
            seconds = time.perf_counter() - started
            log.write("synthetic_add", claims=len(store), added=count, seconds=seconds, load=os.getloadavg()[0])
            console.print(f"synthetic store: {len(store)} claims (+{count} in {seconds:.0f} s)", highlight=False)
            start += count


def synthetic_claims(base_vectors: np.ndarray, base_claims: list[Claim], start: int, count: int,
                     seed: int) -> tuple[list[Claim], dict[str, np.ndarray]]:
    """Claims `start`..`start+count` of the synthetic store (the same ones for the same seed)."""
    rng = np.random.default_rng([seed, start])
    a = rng.integers(0, len(base_vectors), count)
    b = rng.integers(0, len(base_vectors), count)
    w = rng.uniform(0.5, 1.0, (count, 1)).astype(np.float32)
    mixed = w * base_vectors[a] + (1 - w) * base_vectors[b]
    mixed += rng.normal(0, 0.1 / np.sqrt(base_vectors.shape[1]), mixed.shape).astype(np.float32)
    mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
    claims, vectors = [], {}
    for j in range(count):
        first, second = base_claims[a[j]], base_claims[b[j]]
        cid = f"syn-{start + j}"
        claims.append(Claim(id=cid, text=f"{first.text} {' '.join(second.text.split()[:4])}",
                            verdict=first.verdict, verdict_original=first.verdict_original))
        vectors[cid] = mixed[j]
    return claims, vectors


def _recall(approx: Any, exact: ClaimStore, vectors: np.ndarray, k: int, flaggable_only: bool) -> float:
    """Recall@k of `approx`'s search against `exact`'s, by claim id (another backend's slots
    are not SQLite's)."""
    got = _claim_ids(approx, approx.search(vectors, k, flaggable_only=flaggable_only)[1])
    want = _claim_ids(exact, exact.search(vectors, k, flaggable_only=flaggable_only)[1])
    return float(np.mean([len(g & w) / max(1, len(w)) for g, w in zip(got, want)]))


def _claim_ids(store: Any, slots: np.ndarray) -> list[set[str]]:
    found = store.get_slots(slots.ravel())
    return [{found[int(s)].id for s in row if s >= 0} for row in slots]


@contextmanager
def _with_delta_limit(limit: int) -> Iterator[None]:
    """Writes inside make a delta of at most `limit` vectors (0: every write a new base)."""
    before = ClaimStore.delta_limit
    ClaimStore.delta_limit = limit
    try:
        yield
    finally:
        ClaimStore.delta_limit = before


@contextmanager
def _with_breadth(ef: int) -> Iterator[None]:
    """Handles opened inside search their approximate index with `ef` candidates."""
    before = ClaimStore.ann_ef
    ClaimStore.ann_ef = ef
    try:
        yield
    finally:
        ClaimStore.ann_ef = before


def _rss_mb() -> tuple[float, float]:
    """(current, peak) resident memory of this process in MiB."""
    fields = {}
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def _check_arm(path: str, embed_settings: dict[str, Any], mode: str, texts: list[str]) -> dict[str, Any]:
    """In a fresh process: open the store with `index=mode`, check each text one at a time
    (first 10 are warm-up), then search each text's embedding alone."""
    from ..config import EmbedSettings

    embedder = get_embedder(None, EmbedSettings(**embed_settings))
    started = time.perf_counter()
    store = ClaimStore.open(path, embedder, index=mode)
    open_seconds = time.perf_counter() - started
    guard = ClaimGuard(store, cache_size=0)
    for text in texts[:10]:
        guard.check(text)
    check_ms, embed_ms = [], []
    for text in texts[10:]:
        started = time.perf_counter()
        guard.check(text)
        check_ms.append(1000 * (time.perf_counter() - started))
        started = time.perf_counter()
        embedder.embed([text], "query")
        embed_ms.append(1000 * (time.perf_counter() - started))
    profile = _profiled_checks(guard, texts[10:])
    vectors = embedder.embed(texts, "query")
    search_ms = []
    for row in vectors:
        started = time.perf_counter()
        store.search(row, guard.k, flaggable_only=True)
        search_ms.append(1000 * (time.perf_counter() - started))
    rss, peak = _rss_mb()
    library = store.stats()["approximate_index"]
    store.close()
    return {"claims": len(store), "library": library, "open_seconds": open_seconds, "check_ms": check_ms,
            "embed_ms": embed_ms, "search_ms": search_ms, "profile": profile, "rss_mb": rss, "peak_rss_mb": peak}


#: Where a profiled check spends its time: the functions whose cumulative time is reported
#: (of several names, the outermost: a check's paired search calls `_search` on the graph).
PROFILED = {"embed": ("misguard/embed/", ("embed",)),
            "store search": ("claims/_store.py", ("search_flaggable_and_every", "_search")),
            "lexical search": ("claims/_store.py", ("lexical_search",)),
            "claim rows": ("claims/_store.py", ("get_slots",))}


def _profiled_checks(guard: ClaimGuard, texts: list[str]) -> dict[str, float]:
    """One pass of checks under cProfile: seconds in all, and inside each of `PROFILED`
    (the outermost call of each, so recursion is not counted twice)."""
    import cProfile
    import pstats

    guard._cache.clear()
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for text in texts:
        guard.check(text)
    profiler.disable()
    out = {"total": time.perf_counter() - started, "checks": len(texts)}
    stats = pstats.Stats(profiler).stats  # (file, line, name) -> (calls, primitive calls, own, cumulative, callers)
    for label, (file_part, names) in PROFILED.items():
        out[label] = max((v[3] for (file, _, fn), v in stats.items() if file_part in file and fn in names), default=0.0)
    return out


def summarise(path: Path) -> dict[str, Any]:
    """Figures of a run log: recall per store and query set, check / search p50 and p95 per
    index mode (medians over repeats), RSS, add latency and ingest rate against the raw embedder."""
    header, events = read_runlog(path)
    by = lambda kind: [e.data for e in events if e.type == kind]
    out: dict[str, Any] = {"params": header.params, "recall": by("recall"), "real_store": by("real_store"),
                           "synthetic_add": by("synthetic_add"), "backend_recall": by("backend_recall"),
                           "backend_checks": by("backend_checks")}
    modes: dict[str, Any] = {}
    for mode in dict.fromkeys(e["mode"] for e in by("checks")):
        runs = [e for e in by("checks") if e["mode"] == mode]
        if runs:
            modes[mode] = {
                "claims": runs[0]["claims"],
                "check_p50_ms": statistics.median(np.percentile(r["check_ms"], 50) for r in runs),
                "check_p95_ms": statistics.median(np.percentile(r["check_ms"], 95) for r in runs),
                "search_p50_ms": statistics.median(np.percentile(r["search_ms"], 50) for r in runs),
                "search_p95_ms": statistics.median(np.percentile(r["search_ms"], 95) for r in runs),
                "embed_p50_ms": statistics.median(np.percentile(r.get("embed_ms") or [np.nan], 50) for r in runs),
                "embed_p95_ms": statistics.median(np.percentile(r.get("embed_ms") or [np.nan], 95) for r in runs),
                "profile_share": {key: statistics.median(r["profile"][key] / r["profile"]["total"] for r in runs)
                                  for key in PROFILED if all("profile" in r for r in runs)},
                "rss_mb": statistics.median(r["rss_mb"] for r in runs),
                "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in runs),
                "open_seconds": statistics.median(r["open_seconds"] for r in runs),
            }
    out["checks"] = modes
    every = by("hubness_every_claim")
    if every:
        out["hubness_every_claim"] = every[-1]
    out["add_one"], out["add_batch"] = {}, {}
    for arm in dict.fromkeys(e.get("arm", "whole") for e in by("add_one")):
        adds = [a for a in by("add_one") if a.get("arm", "whole") == arm]
        out["add_one"][arm] = {"claims": adds[-1]["claims"], "median_seconds": statistics.median(a["seconds"] for a in adds),
                               "max_seconds": max(a["seconds"] for a in adds), "adds": len(adds)}
    for d in by("search_with_delta"):
        out["search_with_delta"] = {"claims": d["claims"], "delta": d["delta"],
                                    "search_p50_ms": float(np.percentile(d["search_ms"], 50)),
                                    "search_p95_ms": float(np.percentile(d["search_ms"], 95)),
                                    "open_seconds": d.get("open_seconds")}
    for b in by("add_batch"):
        out["add_batch"][b.get("arm", "whole")] = {
            "claims": b["claims"], "added": b["added"], "rate": b["added"] / b["seconds"],
            "raw_rate": b["added"] / b["raw_seconds"], "ratio": b["raw_seconds"] / b["seconds"]}
    return out


def render_summary(summary: dict[str, Any]) -> Table:
    table = Table(title="claim store at scale")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for r in summary["recall"]:
        table.add_row(f"recall@10 {r.get('library')} ef={r.get('ef')} {r['store']} ({r['claims']}) {r['split']}"
                      f"{' false-rated' if r['flaggable_only'] else ''}",
                      f"{r['recall']:.4f}")
    for r in summary.get("backend_recall", []):
        table.add_row(f"recall@10 backend {r['backend']} vs exact SQLite, {r['store']} ({r['claims']}) {r['split']}"
                      f"{' false-rated' if r['flaggable_only'] else ''}", f"{r['recall']:.4f}")
    for c in summary.get("backend_checks", []):
        table.add_row(f"backend {c['backend']}: same verdict and evidence as SQLite ({c['texts']} texts)",
                      f"{c['same_verdict']:.4f}")
        table.add_row(f"backend {c['backend']}: search p50 ms ({', '.join(c['search_p50_ms'])})",
                      " / ".join(f"{v:.2f}" for v in c["search_p50_ms"].values()))
    for mode, m in summary["checks"].items():
        table.add_row(f"index={mode}, {m['claims']} claims: check p50 / p95 ms",
                      f"{m['check_p50_ms']:.1f} / {m['check_p95_ms']:.1f}")
        table.add_row(f"index={mode}: search p50 / p95 ms", f"{m['search_p50_ms']:.2f} / {m['search_p95_ms']:.2f}")
        table.add_row(f"index={mode}: the tweet's embedding alone p50 / p95 ms",
                      f"{m.get('embed_p50_ms', float('nan')):.1f} / {m.get('embed_p95_ms', float('nan')):.1f}")
        if m.get("profile_share"):
            table.add_row(f"index={mode}: share of profiled check time",
                          ", ".join(f"{k} {v:.0%}" for k, v in m["profile_share"].items()))
        table.add_row(f"index={mode}: RSS / peak MiB, open s",
                      f"{m['rss_mb']:.0f} / {m['peak_rss_mb']:.0f}, {m['open_seconds']:.1f}")
    if "hubness_every_claim" in summary:
        h = summary["hubness_every_claim"]
        table.add_row(f"hubness of all {h['claims']} claims (each add, before), s", f"{h['seconds']:.1f}")
    for arm, a in summary.get("add_one", {}).items():
        table.add_row(f"one-claim add to {a['claims']} claims, {arm} write: median / max s",
                      f"{a['median_seconds']:.2f} / {a['max_seconds']:.2f}")
    for arm, b in summary.get("add_batch", {}).items():
        table.add_row(f"batch of {b['added']} claims, {arm} write: claims/s (raw embedder)",
                      f"{b['rate']:.1f} ({b['raw_rate']:.1f}, {b['ratio']:.2f}x)")
    if "search_with_delta" in summary:
        d = summary["search_with_delta"]
        table.add_row(f"search of {d['claims']} claims with a delta of {d['delta']}: p50 / p95 ms",
                      f"{d['search_p50_ms']:.2f} / {d['search_p95_ms']:.2f}")
        if d.get("open_seconds") is not None:
            table.add_row("opening the store with that delta (a replica following a write), s",
                          f"{d['open_seconds']:.2f}")
    return table


__all__ = ["render_summary", "run_store_scale_bench", "summarise", "synthetic_claims"]
