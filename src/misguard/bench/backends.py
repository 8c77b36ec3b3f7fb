"""Backend throughput: e5 embeddings (single and batched) and, for every installed model
pack, load time, RSS, prompt and generation tokens/s with 1 and with N concurrent requests."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..config import Settings
from ..embed import get_embedder
from ..llm import LLM, get_llm
from ..llm._packs import MODEL_PACKS, get_pack, status
from ..runlog import RunHeader, RunLog, public_settings

# Short claim-like sentences in several languages; varied so no cache hit helps.
_WORDS = "vaccine election climate bank flood virus border tax moon school water court".split()


def _texts(n: int, salt: int) -> list[str]:
    return [
        f"Officials say the {_WORDS[i % len(_WORDS)]} report {i}-{salt} shows "
        f"{_WORDS[(i * 7) % len(_WORDS)]} figures rose sharply this year."
        for i in range(n)
    ]


def _rss_mb() -> float:
    """Resident memory of this process (Linux /proc; 0 elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _measure_llm(llm: LLM, *, tokens: int, repeats: int, concurrency: int, log: RunLog, pack: str) -> dict:
    """Prompt and generation tokens/s through the public `generate`, alone and concurrent.

    Every prompt starts with a fresh salt so llama.cpp's prompt cache never helps.
    """
    prompt_rates, gen_rates, conc_rates = [], [], []
    filler = " ".join(_texts(12, salt=99))  # ~250 tokens of claim-like text
    for r in range(repeats):
        out = llm.generate_sync(f"[{pack} p{r}] Summarise in one word: {filler}", max_tokens=1, seed=r)
        prompt_rates.append(out.prompt_tokens / out.latency_s)
        out = llm.generate_sync(
            f"[g{r}] Count from 1 to 300, separated by commas.", max_tokens=tokens, seed=r
        )
        gen_rates.append(out.completion_tokens / out.latency_s)

        async def together(r: int = r) -> tuple[float, int]:
            started = time.perf_counter()
            outs = await asyncio.gather(
                *(
                    llm.generate(f"[c{r}-{i}] Count from {i} to 300, separated by commas.", max_tokens=tokens, seed=r)
                    for i in range(concurrency)
                )
            )
            return time.perf_counter() - started, sum(o.completion_tokens for o in outs)

        wall, produced = asyncio.run(together())
        conc_rates.append(produced / wall)
        log.write(
            "llm", key=f"{pack}:{r}", prompt_tokens_per_s=prompt_rates[-1],
            generation_tokens_per_s=gen_rates[-1], concurrent=concurrency,
            concurrent_total_tokens_per_s=conc_rates[-1],
        )
    return {
        "prompt_tokens_per_s": statistics.median(prompt_rates),
        "generation_tokens_per_s": statistics.median(gen_rates),
        f"generation_tokens_per_s_{concurrency}_concurrent_total": statistics.median(conc_rates),
        "concurrency_speedup": statistics.median(conc_rates) / statistics.median(gen_rates),
    }


def run_backend_bench(
    settings: Settings, output: Path, *, n_texts: int, llm_tokens: int, repeats: int, console: Console,
    packs: list[str] | None = None, concurrency: int = 3,
) -> dict:
    """e5 throughput, then every installed model pack (or `packs`) through `local/<pack>`."""
    embed_settings = settings.embed.model_copy(update={"cache_dir": None, "memory_cache_size": 0})
    embedder = get_embedder("e5", embed_settings)
    llm_settings = settings.llm.model_copy(update={"cache_dir": None, "parallel": max(settings.llm.parallel, concurrency)})
    names = packs or [n for n in MODEL_PACKS.names() if status(get_pack(n), llm_settings.models_dir).installed]
    header = RunHeader(
        kind="bench.backends",
        settings=public_settings(settings),
        components={"embedder": embedder.describe()},
        seeds={"llm": settings.llm.seed},
        params={"n_texts": n_texts, "llm_tokens": llm_tokens, "repeats": repeats, "packs": names, "concurrency": concurrency},
    )
    output.mkdir(parents=True, exist_ok=True)
    log = RunLog.open(output / "runlog.jsonl", header, resume=False)
    embedder.embed(["warm up"])
    single, batched = [], []
    for r in range(repeats):
        texts = _texts(n_texts, salt=2 * r)
        started = time.perf_counter()
        for text in texts[: max(n_texts // 4, 8)]:
            embedder.embed([text])
        single.append(max(n_texts // 4, 8) / (time.perf_counter() - started))
        texts = _texts(n_texts, salt=2 * r + 1)
        started = time.perf_counter()
        embedder.embed(texts)
        batched.append(n_texts / (time.perf_counter() - started))
        log.write("embed", key=str(r), single_texts_per_s=single[-1], batched_texts_per_s=batched[-1])
    summary: dict = {
        "embed_single_texts_per_s_median": statistics.median(single),
        "embed_batched_texts_per_s_median": statistics.median(batched),
        "embed_batch_size": embed_settings.batch_size,
        "repeats": repeats,
        "load_average_1min_at_start": os.getloadavg()[0],
        "llm": {},
    }
    for name in names:
        rss_before, started = _rss_mb(), time.perf_counter()
        llm = get_llm(f"local/{name}", llm_settings)
        load_s = time.perf_counter() - started
        log.write("component", key=f"llm:{name}", **llm.describe())
        llm.generate_sync("Say hi.", max_tokens=2)  # first-call allocations out of the figures
        figures = _measure_llm(llm, tokens=llm_tokens, repeats=repeats, concurrency=concurrency, log=log, pack=name)
        summary["llm"][name] = {"load_s": load_s, "rss_mb": _rss_mb() - rss_before, "n_threads": llm.describe()["n_threads"], **figures}
    summary["load_average_1min_at_end"] = os.getloadavg()[0]
    log.write("summary", **summary)
    log.close()
    (output / "summary.json").write_text(json.dumps(summary, indent=2))
    table = Table(title="backend throughput (medians)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("e5 single-text embeddings / s", f"{summary['embed_single_texts_per_s_median']:.1f}")
    table.add_row(f"e5 batched embeddings / s (batch {embed_settings.batch_size})", f"{summary['embed_batched_texts_per_s_median']:.1f}")
    for name, fig in summary["llm"].items():
        table.add_row(f"{name}: load s / RSS MB", f"{fig['load_s']:.1f} / {fig['rss_mb']:.0f}")
        table.add_row(f"{name}: prompt tokens / s", f"{fig['prompt_tokens_per_s']:.1f}")
        table.add_row(f"{name}: generation tokens / s (1 request)", f"{fig['generation_tokens_per_s']:.1f}")
        table.add_row(
            f"{name}: generation tokens / s ({concurrency} concurrent, total)",
            f"{fig[f'generation_tokens_per_s_{concurrency}_concurrent_total']:.1f}",
        )
    console.print(table)
    return summary
