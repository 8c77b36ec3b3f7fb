"""Load test of `misguard serve` on loopback: the real CLI in a subprocess, driven by an
asyncio client with a fixed number of requests in flight, one text per request.

Two phases: `unique` (every text new: cache misses, the guard's real throughput) and
`repeat` (texts already sent: answered from the verdict cache). Each second the log gets
completed requests, errors, latencies and the server's RSS; the summary is rendered from
the log.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ...config import Settings
from ...errors import ConfigError, MissingExtraError
from ...runlog import RunHeader, RunLog, public_settings, read_runlog
from ...service import ServiceProcess, rss_mb

#: Texts from the shipped sample when no --texts file is given (each made unique by a suffix).
_SAMPLE = "sample_claims.jsonl"


@dataclass(frozen=True)
class LoadParams:
    duration_s: float = 60.0
    repeat_duration_s: float = 20.0
    warmup_s: float = 5.0
    concurrency: int = 16
    repeat_pool: int = 200
    seed: int = 0


def load_texts(path: Path | None) -> list[str]:
    """Query texts: any claim file `misguard claims add` reads (JSONL with 'text', CSV,
    LIAR TSV, ...), or the shipped sample claims."""
    from ...claims import read_claims

    if path is None:
        with resources.as_file(resources.files("misguard.claims").joinpath("data", _SAMPLE)) as sample:
            return [c.text for c in read_claims(sample)]
    return list(dict.fromkeys(c.text for c in read_claims(path)))


def unique_texts(texts: list[str], seed: int) -> Iterator[str]:
    """Every text once in a seeded order, then again with a numbered suffix: never a repeat."""
    order = list(texts)
    random.Random(seed).shuffle(order)
    round_ = 0
    while True:
        for text in order:
            yield text if round_ == 0 else f"{text} ({round_})"
        round_ += 1


async def _drive(
    server: ServiceProcess, phase: str, duration_s: float, concurrency: int, next_text: Callable[[], str],
    runlog: RunLog | None,
) -> None:
    """`concurrency` workers post single texts for `duration_s`; one log event per second."""
    import httpx

    latencies: list[float] = []
    errors: list[str] = []
    completed = 0
    stop_at = time.perf_counter() + duration_s
    headers = {"Authorization": f"Bearer {server.key}"}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal completed
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            try:
                response = await client.post("/v1/check", json={"text": next_text()}, headers=headers)
                ok = response.status_code == 200 and len(response.json()["results"]) == 1
                if not ok:
                    errors.append(f"HTTP {response.status_code}")
            except (httpx.HTTPError, ValueError, KeyError) as exc:
                errors.append(type(exc).__name__)
                continue
            if ok:
                latencies.append(time.perf_counter() - started)
                completed += 1

    async def sampler() -> None:
        second = 0
        last = time.perf_counter()
        while time.perf_counter() < stop_at:
            await asyncio.sleep(1.0)
            second += 1
            now = time.perf_counter()
            # A "second" much longer than one means the processes were paused (SIGSTOP on a
            # shared machine, swapping): recorded so the summary can say the run is void.
            gap, last = now - last, now
            stalled = gap - 1.0 if gap > 3.0 else 0.0  # a late wake-up under load is not a pause
            done, lat, errs = completed, list(latencies), list(errors)
            latencies.clear()
            errors.clear()
            if runlog is not None:
                runlog.write("second", key=f"{phase}-{second}", phase=phase, second=second, completed=len(lat),
                             errors=len(errs), error_kinds=sorted(set(errs)), latencies_ms=[round(x * 1000, 2) for x in lat],
                             rss_mb=round(rss_mb(server.pid), 1), total_completed=done, load_avg_1m=_load_average(),
                             stalled_s=round(stalled, 3))

    async with httpx.AsyncClient(base_url=server.url, timeout=30, limits=limits) as client:
        await asyncio.gather(sampler(), *(worker(client) for _ in range(concurrency)))


def run_service_bench(
    settings: Settings, db: Path, output: Path, *, duration: float = 60.0, concurrency: int = 16,
    texts_file: Path | None = None, repeat_duration: float = 20.0, console: Any = None,
) -> dict[str, Any]:
    """Start the server, run the warm-up, `unique` and `repeat` phases, write the summary."""
    try:
        import httpx  # noqa: F401
    except ImportError:
        raise MissingExtraError("httpx", "service", "the service load test") from None
    if not (db / "claims.sqlite").is_file():
        raise ConfigError(f"No claim store at {db}; build one with: misguard claims add --db {db} FILE")
    say = console.print if console is not None else (lambda *_: None)
    params = LoadParams(duration_s=duration, repeat_duration_s=repeat_duration, concurrency=concurrency, seed=settings.seed)
    texts = load_texts(texts_file)
    output.mkdir(parents=True, exist_ok=True)
    server = ServiceProcess(db, output / "server.log", embedder=settings.embed.model,
                            extra_args=["--rate-limit", "1000000/minute", "--log-level", "warning"])
    header = RunHeader(
        kind="bench.service", settings=public_settings(settings), seeds={"texts": params.seed},
        components={"server": {"command": server.command[2:], "db": str(db), "embedder": settings.embed.model},
                    "client": {"library": "httpx", "concurrency": concurrency, "texts_per_request": 1}},
        params={**params.__dict__, "texts_file": str(texts_file) if texts_file else f"misguard.claims/{_SAMPLE}",
                "distinct_texts": len(texts), "cpu_count": os.cpu_count()},
    )
    # A load test measures one uninterrupted run: never resumed, always a fresh log.
    runlog = RunLog.open(output / "runlog.jsonl", header, resume=False)
    fresh = unique_texts(texts, params.seed)
    sent: list[str] = []

    def next_unique() -> str:
        text = next(fresh)
        sent.append(text)
        return text

    rng = random.Random(params.seed)
    try:
        server.start()
        server.check_texts([next_unique()])  # loads the embedder: not part of any timed phase
        say(f"server up on {server.url} (RSS {rss_mb(server.pid):.0f} MB); warm-up {params.warmup_s:.0f} s")
        asyncio.run(_drive(server, "warmup", params.warmup_s, concurrency, next_unique, None))
        pool = sent[-params.repeat_pool:]  # already answered: these are in the verdict cache
        say(f"unique texts for {duration:.0f} s at concurrency {concurrency} ...")
        asyncio.run(_drive(server, "unique", duration, concurrency, next_unique, runlog))
        say("the embedder and the guard alone, in this process, on new texts of the same kind (ceilings) ...")
        runlog.write("ceilings", **ceilings(settings, db, [next(fresh) for _ in range(4000)], seconds=15.0,
                                            batch=concurrency))
        say(f"repeated texts for {repeat_duration:.0f} s ...")
        asyncio.run(_drive(server, "repeat", repeat_duration, concurrency, lambda: rng.choice(pool), runlog))
        import httpx

        metrics = httpx.get(f"{server.url}/metrics", timeout=10).text
        runlog.write("server_metrics", texts=_texts_checked(metrics), batches=_batches(metrics))
    finally:
        server.stop()
        runlog.close()
    summary = summarise(output / "runlog.jsonl")
    (output / "summary.json").write_text(json.dumps(summary, indent=1))
    (output / "summary.md").write_text(render_summary(summary))
    say(render_summary(summary))
    return summary


def ceilings(settings: Settings, db: Path, texts: list[str], *, seconds: float, batch: int) -> dict[str, Any]:
    """What the machine allows right now, without HTTP: texts/s of the store's embedder
    alone (one embedding per text) and of `ClaimGuard.check_many` in this process (which
    embeds each text's segments too), `batch` texts per call, measured while the server
    idles. On a shared machine the service's figure is read against these."""
    from ...claims import ClaimGuard, ClaimStore
    from ...embed import get_embedder

    def rate(fn: Callable[[list[str]], object], pool: list[str]) -> dict[str, Any]:
        fn(["warm-up"])
        done, started, load = 0, time.perf_counter(), _load_average()
        while time.perf_counter() - started < seconds and done + batch <= len(pool):
            fn(pool[done : done + batch])
            done += batch
        elapsed = time.perf_counter() - started
        return {"texts": done, "seconds": round(elapsed, 2), "texts_per_s": round(done / elapsed, 1), "load_avg_1m": load}

    half = len(texts) // 2
    embedder = get_embedder(None, settings.embed.model_copy(update={"memory_cache_size": 0}))
    out: dict[str, Any] = {"batch": batch, "embedder_spec": embedder.spec}
    out["embedder"] = rate(lambda t: embedder.embed(t, "query"), texts[:half])
    with ClaimStore.open(db, get_embedder(None, settings.embed)) as store:
        guard = ClaimGuard(store)
        out["guard"] = rate(guard.check_many, texts[half:])
    return out


def _load_average() -> float:
    """The machine's 1-minute load average: how much the run competed for the cores."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def _batches(metrics: str) -> dict[str, float]:
    """Number of claim-guard batches and their mean size, from the server's histogram."""
    values = {}
    for line in metrics.splitlines():
        for name in ("misguard_check_batch_texts_sum", "misguard_check_batch_texts_count"):
            if line.startswith(name + " "):
                values[name.rsplit("_", 1)[1]] = float(line.rsplit(" ", 1)[1])
    count = values.get("count", 0.0)
    return {"batches": count, "mean_texts": round(values.get("sum", 0.0) / count, 2) if count else 0.0}


def _texts_checked(metrics: str) -> dict[str, float]:
    out = {}
    for line in metrics.splitlines():
        if line.startswith("misguard_texts_checked_total{"):
            outcome = line.split('outcome="')[1].split('"')[0]
            out[outcome] = float(line.rsplit(" ", 1)[1])
    return out


def summarise(path: Path) -> dict[str, Any]:
    """Per-phase throughput, latency percentiles, errors and RSS, from the run log."""
    header, events = read_runlog(path)
    summary: dict[str, Any] = {"run_id": header.run_id, "created": header.created, "params": header.params,
                               "server": header.components.get("server"), "phases": {}}
    for phase in ("unique", "repeat"):
        seconds = [e.data for e in events if e.type == "second" and e.data["phase"] == phase]
        if not seconds:
            continue
        latencies = np.array([x for s in seconds for x in s["latencies_ms"]] or [0.0])
        per_second = np.array([s["completed"] for s in seconds])
        rss = np.array([s["rss_mb"] for s in seconds])
        minutes = np.arange(len(rss)) / 60.0
        slope = float(np.polyfit(minutes, rss, 1)[0]) if len(rss) > 2 else float("nan")
        summary["phases"][phase] = {
            "seconds": len(seconds),
            "requests": int(per_second.sum()),
            "requests_per_s": round(float(per_second.sum()) / len(seconds), 1),
            "requests_per_s_median_second": float(np.median(per_second)),
            "requests_per_s_min_second": int(per_second.min()),
            "latency_ms": {q: round(float(np.nanpercentile(latencies, p)), 1) for q, p in (("p50", 50), ("p95", 95), ("p99", 99))},
            "errors": int(sum(s["errors"] for s in seconds)),
            "error_kinds": sorted({k for s in seconds for k in s["error_kinds"]}),
            "rss_mb": {"first": float(rss[0]), "last": float(rss[-1]), "max": float(rss.max())},
            "rss_slope_mb_per_min": round(slope, 2),
            "load_avg_1m_median": float(np.median([s.get("load_avg_1m", np.nan) for s in seconds])),
            "stalled_s": round(float(sum(s.get("stalled_s", 0.0) for s in seconds)), 2),
        }
    ceiling = [e.data for e in events if e.type == "ceilings"]
    if ceiling:
        summary["ceilings"] = ceiling[-1]
        unique = summary["phases"].get("unique")
        if unique:
            for what in ("embedder", "guard"):
                if ceiling[-1][what]["texts_per_s"]:
                    unique[f"share_of_{what}_alone"] = round(unique["requests_per_s"] / ceiling[-1][what]["texts_per_s"], 2)
    metrics = [e.data for e in events if e.type == "server_metrics"]
    if metrics:
        summary["server_texts_checked"] = metrics[-1]["texts"]
        summary["server_batches"] = metrics[-1].get("batches")
    return summary


def render_summary(summary: dict[str, Any]) -> str:
    lines = ["| phase | s | requests | req/s | median req/s (per second) | worst second | p50 ms | p95 ms | p99 ms | errors | RSS first/last/max MB | RSS slope MB/min | load avg |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |"]
    for phase, p in summary["phases"].items():
        lat, rss = p["latency_ms"], p["rss_mb"]
        lines.append(f"| {phase} | {p['seconds']} | {p['requests']} | {p['requests_per_s']} | {p['requests_per_s_median_second']:g} | "
                     f"{p['requests_per_s_min_second']} | {lat['p50']} | {lat['p95']} | {lat['p99']} | {p['errors']} | "
                     f"{rss['first']:.0f} / {rss['last']:.0f} / {rss['max']:.0f} | {p['rss_slope_mb_per_min']} | "
                     f"{p.get('load_avg_1m_median', float('nan')):.1f} |")
    stalled = {phase: p["stalled_s"] for phase, p in summary["phases"].items() if p.get("stalled_s", 0) > 0}
    if stalled:
        lines.append(f"\n**void run**: the processes were paused for {stalled} s (a paused machine, swapping); rerun")
    if "ceilings" in summary:
        c = summary["ceilings"]
        unique = summary["phases"].get("unique", {})
        for what, label in (("embedder", "embedder alone (one embedding per text)"),
                            ("guard", "ClaimGuard.check_many in-process (no HTTP)")):
            lines.append(f"\n{label}, batches of {c['batch']}: {c[what]['texts_per_s']} texts/s at load "
                         f"{c[what]['load_avg_1m']:.1f}; the service's unique-text rate is "
                         f"{unique.get(f'share_of_{what}_alone')} of it")
    if "server_texts_checked" in summary:
        lines.append(f"\nserver's own count of texts checked: {summary['server_texts_checked']}; "
                     f"claim-guard batches: {summary.get('server_batches')}")
    return "\n".join(lines) + "\n"
