"""`misguard claims pull`: fact-checks from ClaimReview feeds, fact-check pages and Google's
Fact Check Tools into a claim store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from ..errors import ConfigError, DataError
from ._common import console, err_console, friendly_errors, settings_from
from ._net import AllowPrivateOption, RetriesOption, TimeoutOption, make_fetcher
from .bench import bench_app
from .claims import DbOption, _store, claims_app

#: Largest document read from one URL: open ClaimReview feeds run to hundreds of MB.
FEED_MAX_BYTES = 1024**3
#: How many problem lines of one source are printed.
SHOWN_PROBLEMS = 3


def register(app: typer.Typer) -> None:
    claims_app.command("pull")(pull)


def _page_urls(values: list[str]) -> list[str]:
    """`--page` values: URLs, or files listing one URL per line (blank lines and # comments skipped)."""
    urls = []
    for value in values:
        path = Path(value).expanduser()
        if not value.lower().startswith(("http://", "https://")) and path.is_file():
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                if not line.lower().startswith(("http://", "https://")):
                    raise DataError("expected one http(s) URL per line", source=str(path), line=number)
                urls.append(line)
        elif value.lower().startswith(("http://", "https://")):
            urls.append(value)
        else:
            raise DataError("--page takes an http(s) URL or a file of URLs, one per line", source=value)
    return urls


@friendly_errors
def pull(
    ctx: typer.Context,
    db: DbOption,
    feed: Annotated[Optional[list[str]], typer.Option("--feed", help="A ClaimReview data feed (schema.org DataFeed) or a JSON/JSON-LD list of ClaimReview objects: URL or file. Repeatable.")] = None,
    page: Annotated[Optional[list[str]], typer.Option("--page", help="A fact-check article whose JSON-LD holds ClaimReview markup, or a file of such URLs (one per line). Repeatable.")] = None,
    google_factcheck: Annotated[bool, typer.Option("--google-factcheck", help="Search Google's Fact Check Tools (needs --query and a key).")] = False,
    query: Annotated[Optional[str], typer.Option("--query", help="With --google-factcheck: the text to search for.")] = None,
    language: Annotated[Optional[str], typer.Option("--language", help="With --google-factcheck: only reviews in this language (BCP-47, e.g. en, pt-BR).")] = None,
    max_age_days: Annotated[Optional[int], typer.Option("--max-age-days", min=1, help="With --google-factcheck: only reviews at most this many days old.")] = None,
    api_key: Annotated[Optional[str], typer.Option("--api-key", help="Google API key (default: MISGUARD_GOOGLE_API_KEY / google_api_key).")] = None,
    api_base: Annotated[str, typer.Option("--api-base", help="Root URL of the Fact Check Tools API.")] = "https://factchecktools.googleapis.com",
    since: Annotated[Optional[str], typer.Option("--since", help="Only reviews dated on or after this day (YYYY-MM-DD); undated reviews are left out.")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="A source with any unreadable review fails as a whole (default: skip it and say so).")] = False,
    allow_private: AllowPrivateOption = False,
    timeout: TimeoutOption = 30.0,
    retries: RetriesOption = 3,
) -> None:
    """Pull fact-checks into a claim store, keeping each claim's provenance (publisher,
    review URL and date, language, the rating as published and its normalised verdict).

    Every source is read before anything is written; a source that fails is reported and
    contributes nothing. Pulling again adds nothing; a changed review updates its claim.
    Exit status 2 when any source failed."""
    from ..claims import FeedSource, GoogleFactCheckSource, OfflineTopicClassifier, PageSource, pull_claims

    settings = settings_from(ctx)
    sources: list = [FeedSource(f) for f in feed or []] + [PageSource(u) for u in _page_urls(page or [])]
    if google_factcheck:
        key = api_key or (settings.google_api_key.get_secret_value() if settings.google_api_key else "")
        sources.append(GoogleFactCheckSource(query or "", key, language=language, max_age_days=max_age_days,
                                             api_base=api_base))
    elif query or language or max_age_days:
        raise ConfigError("--query, --language and --max-age-days go with --google-factcheck")
    if not sources:
        raise ConfigError("name at least one source: --feed URL_OR_FILE, --page URL or --google-factcheck --query TEXT")
    secrets = [s.api_key for s in sources if isinstance(s, GoogleFactCheckSource)]
    fetcher = make_fetcher(allow_private=allow_private, timeout_s=timeout, retries=retries, max_bytes=FEED_MAX_BYTES,
                           secrets=secrets)
    with _store(settings, db, create=True) as store:
        # Centroids kept beside the store (as the guard keeps them): later pulls skip embedding them.
        topics = OfflineTopicClassifier(store.embedder, cache_dir=store.path)
        report = pull_claims(store, sources, fetcher=fetcher, since=since, strict=strict,
                             assign_topics=lambda v: topics.predict_one(v, "passage"))
        total = len(store)
    for source in report.sources:
        if source.error is not None:
            err_console.print(f"[bold red]failed[/] {escape(source.source)}: {escape(source.error)}; nothing from it was written",
                              highlight=False)
            continue
        left = []
        if source.older:
            left.append(f"{source.older} older than --since")
        if source.undated:
            left.append(f"{source.undated} undated")
        if source.skipped:
            left.append(f"{source.skipped} unreadable")
        console.print(f"{escape(source.source)}: {source.reviews} review(s), {source.kept} pulled"
                      + (f" ({', '.join(left)} left out)" if left else ""), highlight=False)
        for problem in source.problems[:SHOWN_PROBLEMS]:
            console.print(f"  [yellow]skipped[/] {escape(problem)}", highlight=False)
    rate = report.embedded / report.ingest_seconds if report.ingest_seconds else 0.0
    console.print(f"{db}: {report.added} added, {report.updated} updated, {report.unchanged} unchanged "
                  f"({report.embedded} embedded in {report.ingest_seconds:.1f} s, {rate:.0f} claims/s; "
                  f"fetched in {report.fetch_seconds:.1f} s); {total} claims in the store", highlight=False)
    if report.failed:
        raise typer.Exit(2)


@bench_app.command("pull")
@friendly_errors
def bench_pull(
    ctx: typer.Context,
    data: Annotated[str, typer.Option(help="Real fact-checks to serve as a ClaimReview feed: a claim file or a dataset by name.")] = "snopes",
    claims: Annotated[int, typer.Option("--claims", min=1, help="How many distinct claims the feed holds.")] = 1000,
    repeats: Annotated[int, typer.Option(min=1, help="Paired repeats (embedder alone, then pull; order alternates).")] = 3,
    output: Annotated[Path, typer.Option(help="Directory for the run log and summary.json.")] = Path("runs/bench-pull"),
) -> None:
    """Ingest throughput of `claims pull` (claims/s, end to end from a loopback feed) next to
    the embedder's raw rate on the same texts."""
    from ..bench.pull import run_pull_bench
    from ..data import resolve

    settings = settings_from(ctx)
    run_pull_bench(settings, output, data=resolve(data, settings), n_claims=claims, repeats=repeats, console=console)
