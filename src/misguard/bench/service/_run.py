"""Load test of `misguard serve` on loopback: the real CLI in a subprocess, driven by an
asyncio client with a fixed number of requests in flight, one text per request.

Phases: `unique-cN` (every text new: cache misses, the guard's real throughput) at each
number N of clients in flight, and `repeat` (texts already sent: answered from the verdict
cache). Each repeat also runs `misguard check --input` on as many fresh texts of the same
kind, the batch rate the service is read against, interleaved with the HTTP phases so both
see the same load. Each second the log gets completed requests, errors, latencies and the
server's RSS; the summary is rendered from the log.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
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
from ...service._process import ServiceProcess, cpu_s, rss_mb

#: Texts from the shipped sample when no --texts file is given (each made unique by a suffix).
_SAMPLE = "sample_claims.jsonl"


#: Clients in flight at once, one phase each: a lone client, a few, many.
CONCURRENCY = (1, 8, 32)


@dataclass(frozen=True)
class LoadParams:
    duration_s: float = 60.0
    repeat_duration_s: float = 20.0
    warmup_s: float = 5.0
    concurrency: tuple[int, ...] = CONCURRENCY
    repeats: int = 2
    cli_texts: int = 1000
    repeat_pool: int = 200
    seed: int = 0


def unique_phase(concurrency: int) -> str:
    """The log's phase name of unique texts at `concurrency` clients."""
    return f"unique-c{concurrency}"


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
    runlog: RunLog | None, repeat: int = 0,
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
                runlog.write("second", key=f"{phase}-r{repeat}-{second}", phase=phase, repeat=repeat, second=second,
                             concurrency=concurrency, completed=len(lat),
                             errors=len(errs), error_kinds=sorted(set(errs)), latencies_ms=[round(x * 1000, 2) for x in lat],
                             rss_mb=round(rss_mb(server.pid), 1), total_completed=done, load_avg_1m=_load_average(),
                             stalled_s=round(stalled, 3))

    async with httpx.AsyncClient(base_url=server.url, timeout=30, limits=limits) as client:
        await asyncio.gather(sampler(), *(worker(client) for _ in range(concurrency)))


def run_service_bench(
    settings: Settings, db: Path, output: Path, *, duration: float = 60.0, concurrency: tuple[int, ...] = CONCURRENCY,
    texts_file: Path | None = None, repeat_duration: float = 20.0, repeats: int = 2, cli_texts: int = 1000,
    workers: str = "auto", console: Any = None,
) -> dict[str, Any]:
    """Start the server; per repeat, `misguard check --input` on `cli_texts` fresh texts,
    then a `unique` phase at each concurrency; then the in-process ceilings and the
    `repeat` phase; write the summary."""
    try:
        import httpx  # noqa: F401
    except ImportError:
        raise MissingExtraError("httpx", "service", "the service load test") from None
    if not (db / "claims.sqlite").is_file():
        raise ConfigError(f"No claim store at {db}; build one with: misguard claims add --db {db} FILE")
    if not concurrency or min(concurrency) < 1:
        raise ConfigError("--concurrency takes one or more numbers of clients, each at least 1 (e.g. 1,8,32)")
    if repeats < 1 or cli_texts < 1:
        raise ConfigError("--repeats and --cli-texts must be at least 1")
    say = console.print if console is not None else (lambda *_: None)
    params = LoadParams(duration_s=duration, repeat_duration_s=repeat_duration, concurrency=tuple(concurrency),
                        repeats=repeats, cli_texts=cli_texts, seed=settings.seed)
    texts = load_texts(texts_file)
    output.mkdir(parents=True, exist_ok=True)
    server = ServiceProcess(db, output / "server.log", embedder=settings.embed.model,
                            extra_args=["--rate-limit", "1000000/minute", "--log-level", "warning", "--workers", workers])
    header = RunHeader(
        kind="bench.service", settings=public_settings(settings), seeds={"texts": params.seed},
        components={"server": {"command": server.command[2:], "db": str(db), "embedder": settings.embed.model},
                    "client": {"library": "httpx", "concurrency": list(params.concurrency), "texts_per_request": 1},
                    "cli": {"command": ["check", "--db", str(db), "--input", "FILE", "--output", "FILE"]}},
        params={**params.__dict__, "concurrency": list(params.concurrency),
                "texts_file": str(texts_file) if texts_file else f"misguard.claims/{_SAMPLE}",
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
        asyncio.run(_drive(server, "warmup", params.warmup_s, max(params.concurrency), next_unique, None))
        pool = sent[-params.repeat_pool:]  # already answered: these are in the verdict cache
        for r in range(params.repeats):
            # The CLI checks texts the server never sees, so neither warms the other's caches.
            say(f"repeat {r + 1}/{params.repeats}: misguard check --input, {params.cli_texts} new texts ...")
            runlog.write("cli", key=f"cli-r{r}", repeat=r,
                         **cli_batch_rate(settings, db, [next(fresh) for _ in range(params.cli_texts)]))
            for n in params.concurrency:
                say(f"repeat {r + 1}/{params.repeats}: unique texts for {duration:.0f} s, {n} clients ...")
                before, cpu = _server_batches(server), (cpu_s(server.pid), time.process_time())
                asyncio.run(_drive(server, unique_phase(n), duration, n, next_unique, runlog, r))
                after = _server_batches(server)
                # how many texts the runner gathered into each guard call during the phase, and
                # the CPU time the server and this client spent (they share the machine's cores)
                runlog.write("batches", key=f"{unique_phase(n)}-r{r}", phase=unique_phase(n), repeat=r,
                             batches=after[0] - before[0], texts=after[1] - before[1],
                             server_cpu_s=cpu_s(server.pid) - cpu[0], client_cpu_s=time.process_time() - cpu[1])
        say("the embedder and the guard alone, in this process, on new texts of the same kind (ceilings) ...")
        runlog.write("ceilings", **ceilings(settings, db, [next(fresh) for _ in range(4000)], seconds=15.0,
                                            batch=max(params.concurrency)))
        say(f"repeated texts for {repeat_duration:.0f} s ...")
        asyncio.run(_drive(server, "repeat", repeat_duration, max(params.concurrency), lambda: rng.choice(pool), runlog))
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


#: The summary line `misguard check --input ... --output FILE` prints.
_CLI_RATE = re.compile(r"(\d+) texts checked in ([\d.]+) s")


def cli_batch_rate(settings: Settings, db: Path, texts: list[str]) -> dict[str, Any]:
    """`misguard check --input` on `texts` in a child process, as a user runs it (batches
    of 64): its own checking rate (store and model load excluded, read from its summary
    line) and the rate with process start included."""
    exe = [sys.executable, "-m", "misguard.cli.main", "--embedder", settings.embed.model]
    load = _load_average()
    with tempfile.TemporaryDirectory(prefix="bench-service-cli-") as tmp:
        inp, out = Path(tmp) / "in.jsonl", Path(tmp) / "out.jsonl"
        inp.write_text("".join(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in enumerate(texts)),
                       encoding="utf-8")
        started, children = time.perf_counter(), os.times()
        done = subprocess.run([*exe, "check", "--db", str(db), "--input", str(inp), "--output", str(out)],
                              capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
        wall, cpu = time.perf_counter() - started, os.times()
        cli_cpu_s = cpu.children_user + cpu.children_system - children.children_user - children.children_system
        if done.returncode != 0:
            raise ConfigError(f"misguard check --input failed ({done.returncode}): {done.stderr.strip()[-500:]}")
        rows = sum(1 for line in out.read_text(encoding="utf-8").splitlines() if line.strip())
    found = _CLI_RATE.search(done.stdout + done.stderr)
    if found is None or int(found.group(1)) != len(texts) or rows != len(texts):
        raise ConfigError(f"misguard check --input did not report checking {len(texts)} texts: {done.stdout.strip()[-300:]}")
    seconds = float(found.group(2))
    return {"texts": len(texts), "seconds": seconds, "texts_per_s": round(len(texts) / seconds, 2),
            "wall_s": round(wall, 2), "texts_per_s_with_start": round(len(texts) / wall, 2), "load_avg_1m": load,
            "cpu_s": round(cli_cpu_s, 2)}


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


def _server_batches(server: ServiceProcess) -> tuple[float, float]:
    """(guard calls, texts in them) so far, from the server's /metrics."""
    import httpx

    found = _batches(httpx.get(f"{server.url}/metrics", timeout=30).text)
    return found["batches"], found["batches"] * found["mean_texts"]


def _batches(metrics: str) -> dict[str, float]:
    """Number of claim-guard batches and their mean size, from the server's histogram."""
    values = {}
    for line in metrics.splitlines():
        for name in ("misguard_check_batch_texts_sum", "misguard_check_batch_texts_count"):
            if line.startswith(name + " "):
                values[name.rsplit("_", 1)[1]] = float(line.rsplit(" ", 1)[1])
    count = values.get("count", 0.0)
    return {"batches": count, "mean_texts": values.get("sum", 0.0) / count if count else 0.0}


def _texts_checked(metrics: str) -> dict[str, float]:
    out = {}
    for line in metrics.splitlines():
        if line.startswith("misguard_texts_checked_total{"):
            outcome = line.split('outcome="')[1].split('"')[0]
            out[outcome] = float(line.rsplit(" ", 1)[1])
    return out


def summarise(path: Path) -> dict[str, Any]:
    """Per-phase throughput, latency percentiles, errors and RSS, from the run log; the CLI's
    batch rate (median over repeats) and each unique phase's rate as a share of it."""
    header, events = read_runlog(path)
    summary: dict[str, Any] = {"run_id": header.run_id, "created": header.created, "params": header.params,
                               "server": header.components.get("server"), "phases": {}}
    seconds_of: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        if e.type == "second":
            seconds_of.setdefault(e.data["phase"], []).append(e.data)
    for phase, seconds in seconds_of.items():
        latencies = np.array([x for s in seconds for x in s["latencies_ms"]] or [0.0])
        per_second = np.array([s["completed"] for s in seconds])
        rss = np.array([s["rss_mb"] for s in seconds])
        minutes = np.arange(len(rss)) / 60.0
        slope = float(np.polyfit(minutes, rss, 1)[0]) if len(rss) > 2 else float("nan")
        repeats = sorted({s.get("repeat", 0) for s in seconds})
        rates = [sum(s["completed"] for s in seconds if s.get("repeat", 0) == r)
                 / sum(1 for s in seconds if s.get("repeat", 0) == r) for r in repeats]
        summary["phases"][phase] = {
            "seconds": len(seconds),
            "requests": int(per_second.sum()),
            "requests_per_s": round(float(statistics.median(rates)), 1),
            "requests_per_s_repeats": [round(x, 2) for x in rates],
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
    for phase, p in summary["phases"].items():
        batches = [e.data for e in events if e.type == "batches" and e.data["phase"] == phase]
        if batches and sum(b["batches"] for b in batches):
            p["texts_per_guard_call"] = round(sum(b["texts"] for b in batches) / sum(b["batches"] for b in batches), 2)
        if batches and "server_cpu_s" in batches[0] and p["requests"]:
            for who in ("server", "client"):
                p[f"{who}_cpu_ms_per_request"] = round(1000 * sum(b[f"{who}_cpu_s"] for b in batches) / p["requests"], 1)
    cli = [e.data for e in events if e.type == "cli"]
    if cli:
        rate = statistics.median(c["texts_per_s"] for c in cli)
        summary["cli"] = {"texts_per_s": round(rate, 2), "runs": [c["texts_per_s"] for c in cli],
                          "cpu_ms_per_text": round(1000 * sum(c.get("cpu_s", float("nan")) for c in cli)
                                                   / sum(c["texts"] for c in cli), 1),
                          "texts_per_s_with_start": round(statistics.median(c["texts_per_s_with_start"] for c in cli), 2),
                          "texts": cli[-1]["texts"]}
        for phase, p in summary["phases"].items():
            if phase.startswith("unique"):
                p["share_of_cli"] = round(p["requests_per_s"] / rate, 2)
    ceiling = [e.data for e in events if e.type == "ceilings"]
    if ceiling:
        summary["ceilings"] = ceiling[-1]
        for phase, p in summary["phases"].items():
            if not phase.startswith("unique"):
                continue
            for what in ("embedder", "guard"):
                if ceiling[-1][what]["texts_per_s"]:
                    p[f"share_of_{what}_alone"] = round(p["requests_per_s"] / ceiling[-1][what]["texts_per_s"], 2)
    metrics = [e.data for e in events if e.type == "server_metrics"]
    if metrics:
        summary["server_texts_checked"] = metrics[-1]["texts"]
        summary["server_batches"] = metrics[-1].get("batches")
    return summary


def render_summary(summary: dict[str, Any]) -> str:
    lines = ["| phase | s | requests | req/s | / CLI batch rate | texts per guard call | median req/s (per second) | worst second | p50 ms | p95 ms | p99 ms | errors | RSS first/last/max MB | RSS slope MB/min | load avg |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |"]
    for phase, p in summary["phases"].items():
        lat, rss = p["latency_ms"], p["rss_mb"]
        share = p.get("share_of_cli")
        lines.append(f"| {phase} | {p['seconds']} | {p['requests']} | {p['requests_per_s']} | "
                     f"{'' if share is None else f'{share:.2f}'} | {p.get('texts_per_guard_call', '')} | "
                     f"{p['requests_per_s_median_second']:g} | "
                     f"{p['requests_per_s_min_second']} | {lat['p50']} | {lat['p95']} | {lat['p99']} | {p['errors']} | "
                     f"{rss['first']:.0f} / {rss['last']:.0f} / {rss['max']:.0f} | {p['rss_slope_mb_per_min']} | "
                     f"{p.get('load_avg_1m_median', float('nan')):.1f} |")
    stalled = {phase: p["stalled_s"] for phase, p in summary["phases"].items() if p.get("stalled_s", 0) > 0}
    if stalled:
        lines.append(f"\n**void run**: the processes were paused for {stalled} s (a paused machine, swapping); rerun")
    if "cli" in summary:
        c = summary["cli"]
        lines.append(f"\n`misguard check --input`, {c['texts']} new texts per run: {c['texts_per_s']} texts/s (median of "
                     f"{c['runs']}; {c['texts_per_s_with_start']} with process start; {c['cpu_ms_per_text']} ms of CPU "
                     f"per text, start included); req/s of each unique phase is the median over repeats, read against it")
        cpu = [f"{phase} {p['server_cpu_ms_per_request']} + {p['client_cpu_ms_per_request']}"
               for phase, p in summary["phases"].items() if "server_cpu_ms_per_request" in p]
        if cpu:
            lines.append(f"\nCPU ms per request, server + this client: {', '.join(cpu)}")
    if "ceilings" in summary:
        c = summary["ceilings"]
        for what, label in (("embedder", "embedder alone (one embedding per text)"),
                            ("guard", "ClaimGuard.check_many in-process (no HTTP)")):
            shares = ", ".join(f"{phase} {p.get(f'share_of_{what}_alone')}" for phase, p in summary["phases"].items()
                               if phase.startswith("unique"))
            lines.append(f"\n{label}, batches of {c['batch']}: {c[what]['texts_per_s']} texts/s at load "
                         f"{c[what]['load_avg_1m']:.1f}; the unique phases' rates are {shares} of it")
    if "server_texts_checked" in summary:
        lines.append(f"\nserver's own count of texts checked: {summary['server_texts_checked']}; "
                     f"claim-guard batches: {summary.get('server_batches')}")
    return "\n".join(lines) + "\n"
