"""`misguard serve` (the claim guard over HTTP) and `misguard bench service` (its load test)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import ConfigError
from ._common import CLAIM_GUARD, console, friendly_errors, settings_from
from .bench import bench_app
from .claims import DbOption

#: The load test starts `misguard serve` on a store directory it reads too.
BenchDbOption = Annotated[Path, typer.Option("--db", help="Claim store directory.")]


def register(app: typer.Typer) -> None:
    app.command("serve", rich_help_panel=CLAIM_GUARD)(serve)


@friendly_errors
def serve(
    ctx: typer.Context,
    db: DbOption,
    host: Annotated[str, typer.Option(help="Address to listen on (keep 127.0.0.1 behind a reverse proxy).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8080,
    api_key: Annotated[Optional[list[str]], typer.Option("--api-key", help="A key for checks (repeatable); also MISGUARD_API_KEYS.")] = None,
    admin_key: Annotated[Optional[list[str]], typer.Option("--admin-key", help="A key that may also manage the store (repeatable); also MISGUARD_ADMIN_KEYS.")] = None,
    cors_origin: Annotated[Optional[list[str]], typer.Option("--cors-origin", help="A web origin allowed to call the API (repeatable).")] = None,
    extensions: Annotated[bool, typer.Option("--extensions/--no-extensions", help="Allow browser-extension origins (CORS).")] = True,
    rate_limit: Annotated[str, typer.Option(help="Per-key limit on checks, e.g. '20/second;1200/minute'.")] = "1200/minute",
    rate_limit_storage: Annotated[str, typer.Option(help="memory:// (one process) or redis://HOST:PORT (replicas).")] = "memory://",
    auth_failure_limit: Annotated[str, typer.Option(help="Failed authentications allowed per client address, e.g. '10/minute'; then 429 until the window ends.")] = "10/minute",
    allow_url_fetch: Annotated[bool, typer.Option("--allow-url-fetch", help="Let /v1/check/page fetch URLs (public addresses only).")] = False,
    allow_private_urls: Annotated[bool, typer.Option("--allow-private-urls", help="Also fetch loopback/private addresses (never on a public host).")] = False,
    decision: Annotated[Optional[Path], typer.Option(help="A fitted decision model (JSON) instead of the shipped one.")] = None,
    threshold: Annotated[Optional[float], typer.Option(help="Use a plain cosine threshold instead (baseline).")] = None,
    reader: Annotated[Optional[str], typer.Option(help="A pair reader for social-media text, an embedder spec: st/minilm (the shipped decision fitted with it unless --decision; needs the st extra), or the reader a --decision was fitted with.")] = None,
    judge: Annotated[bool, typer.Option("--judge", help="Let the LLM judge (--llm, paper prompt 2) make the final call; one LLM call per text.")] = False,
    max_batch: Annotated[int, typer.Option(help="Texts per request (and per embedding batch).")] = 64,
    workers: Annotated[str, typer.Option(help="Service processes on the port, each with its own guard and a share of the cores: a number, or auto (one per core, at most 4).")] = "auto",
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
) -> None:
    """Serve the claim guard over HTTP: /v1/check, /v1/check/page, /v1/claims, /metrics."""
    from ..service import ServiceSettings, create_app

    try:
        import uvicorn
    except ImportError:
        from ..errors import MissingExtraError

        raise MissingExtraError("uvicorn", "service", "misguard serve") from None
    settings = settings_from(ctx)
    if decision is not None and threshold is not None:
        raise ConfigError("Pass either --decision or --threshold, not both")
    service = ServiceSettings(
        db=db, embed=settings.embed,
        api_keys=[*settings.api_keys, *(api_key or [])], admin_keys=[*settings.admin_keys, *(admin_key or [])],
        cors_origins=cors_origin or [], allow_extensions=extensions, rate_limit=rate_limit,
        rate_limit_storage=rate_limit_storage, auth_failure_limit=auth_failure_limit, allow_url_fetch=allow_url_fetch or allow_private_urls,
        allow_private_urls=allow_private_urls, decision=decision, threshold=threshold, reader=reader, max_batch=max_batch,
        judge=judge, llm=settings.llm,
    )
    count = _worker_count(workers)
    # Bounded concurrency and short keep-alives: a flood of slow clients cannot pin a process.
    options = {"log_level": log_level, "limit_concurrency": 1024, "timeout_keep_alive": 5, "server_header": False}
    if count > 1:
        from ..service._workers import serve_workers, threads_per_worker

        console.print(f"serving {db} on http://{host}:{port} with {count} workers of {threads_per_worker(count)} "
                      "embedding thread(s) each (docs at /docs, metrics at /metrics)")
        serve_workers(service, count, host, port, **options)
        return
    app = create_app(service)
    console.print(f"serving {db} on http://{host}:{port} (docs at /docs, metrics at /metrics)")
    uvicorn.run(app, host=host, port=port, **options)


def _worker_count(workers: str) -> int:
    from .._processes import parse_workers
    from ..service._workers import auto_workers

    return parse_workers(workers, auto_workers())


@bench_app.command("service")
@friendly_errors
def bench_service(
    ctx: typer.Context,
    db: BenchDbOption,
    output: Annotated[Path, typer.Option(help="Directory for the run log and summary.")] = Path("runs/bench-service"),
    duration: Annotated[float, typer.Option(help="Seconds of unique texts per concurrency and repeat.")] = 30.0,
    concurrency: Annotated[str, typer.Option(help="Clients in flight at once, one unique-text phase each (comma-separated).")] = "1,8,32",
    texts: Annotated[Optional[str], typer.Option(help="Texts to send: any claim file (JSONL with 'text', CSV, LIAR TSV) or a dataset file by name (liar/train.tsv); default the shipped sample, made unique by suffixes.")] = None,
    repeat_duration: Annotated[float, typer.Option(help="Seconds of repeated texts (answered from the cache).")] = 20.0,
    repeats: Annotated[int, typer.Option(help="Rounds of (misguard check --input, then every concurrency); medians are reported.")] = 2,
    cli_texts: Annotated[int, typer.Option(help="New texts per `misguard check --input` run, the batch rate the service is read against.")] = 1000,
    workers: Annotated[str, typer.Option(help="The server's --workers (a number, or auto as misguard serve).")] = "auto",
) -> None:
    """Start `misguard serve` on loopback and drive it with single-text checks at 1, 8 and 32
    clients: requests/s next to `misguard check --input`'s batch rate on the same kind of
    texts, p50/p95 latency, errors and the server's RSS over time."""
    from ..bench.service import run_service_bench
    from ..data import resolve

    settings = settings_from(ctx)
    try:
        levels = tuple(int(x) for x in concurrency.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"--concurrency takes numbers separated by commas (e.g. 1,8,32), not {concurrency!r}") from None
    _worker_count(workers)  # refused here, not by the server it starts
    run_service_bench(settings, db, output, duration=duration, concurrency=levels, repeats=repeats, cli_texts=cli_texts, workers=workers,
                      texts_file=resolve(texts, settings) if texts else None, repeat_duration=repeat_duration, console=console)
