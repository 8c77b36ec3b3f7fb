"""Backend throughput: e5 embeddings (single and batched) and local-LLM tokens/s."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..config import Settings
from ..embed import get_embedder
from ..llm import get_llm
from ..runlog import RunHeader, RunLog, public_settings

# Short claim-like sentences in several languages; varied so no cache hit helps.
_WORDS = "vaccine election climate bank flood virus border tax moon school water court".split()


def _texts(n: int, salt: int) -> list[str]:
    return [
        f"Officials say the {_WORDS[i % len(_WORDS)]} report {i}-{salt} shows "
        f"{_WORDS[(i * 7) % len(_WORDS)]} figures rose sharply this year."
        for i in range(n)
    ]


def run_backend_bench(
    settings: Settings, output: Path, *, n_texts: int, llm_tokens: int, repeats: int, console: Console
) -> dict:
    embed_settings = settings.embed.model_copy(update={"cache_dir": None, "memory_cache_size": 0})
    embedder = get_embedder("e5", embed_settings)
    llm = get_llm("local/smollm2", settings.llm.model_copy(update={"cache_dir": None}))
    header = RunHeader(
        kind="bench.backends",
        settings=public_settings(settings),
        components={"embedder": embedder.describe(), "llm": llm.describe()},
        seeds={"llm": settings.llm.seed},
        params={"n_texts": n_texts, "llm_tokens": llm_tokens, "repeats": repeats},
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
    tok_rates, latencies = [], []
    llm.generate_sync("Say hi.", max_tokens=4)
    for r in range(repeats):
        out = llm.generate_sync(
            f"Write a short paragraph about fact-checking (variant {r}).", max_tokens=llm_tokens, seed=r
        )
        tok_rates.append(out.completion_tokens / out.latency_s)
        latencies.append(out.latency_s)
        log.write("llm", key=str(r), completion_tokens=out.completion_tokens, latency_s=out.latency_s)
    summary = {
        "embed_single_texts_per_s_median": statistics.median(single),
        "embed_batched_texts_per_s_median": statistics.median(batched),
        "embed_batch_size": embed_settings.batch_size,
        "llm_tokens_per_s_median": statistics.median(tok_rates),
        "llm_latency_s_median": statistics.median(latencies),
        "repeats": repeats,
    }
    log.write("summary", **summary)
    log.close()
    (output / "summary.json").write_text(json.dumps(summary, indent=2))
    table = Table(title="backend throughput (medians)")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("e5 single-text embeddings / s", f"{summary['embed_single_texts_per_s_median']:.1f}")
    table.add_row(f"e5 batched embeddings / s (batch {embed_settings.batch_size})", f"{summary['embed_batched_texts_per_s_median']:.1f}")
    table.add_row("SmolLM2-135M Q4_1 tokens / s", f"{summary['llm_tokens_per_s_median']:.1f}")
    console.print(table)
    return summary
