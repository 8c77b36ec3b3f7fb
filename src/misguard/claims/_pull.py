"""Pull fact-checks from where publishers put them into a claim store.

Sources are registered by name in `CLAIM_SOURCES` (`feed`, `page`, `google-factcheck`; a
package can add its own). Every fetch goes through the SSRF-safe fetcher (`misguard.net`):
public addresses only unless the caller allows private ones, every redirect and DNS answer
checked, timeouts, retries with backoff.

    report = pull_claims(store, [FeedSource("https://example.org/claimreview-feed.json")])

A pull reads every source first. A source that fails (unreachable, not JSON, no ClaimReview)
is reported with its error and contributes nothing; the reviews of the others go into the
store in one all-or-nothing write, so a store never holds part of a source. Claims are keyed
by review URL and claim text: pulling again adds nothing, and a review whose rating, date or
publisher changed updates its claim.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

import numpy as np

from ..errors import ConfigError, DataError, MisguardError
from ..registry import Registry
from ._reviews import (
    Review,
    ReviewProblem,
    find_claimreviews,
    iso_date,
    jsonld_documents,
    review_from_claimreview,
    reviews_from_google,
)

if TYPE_CHECKING:
    from ..net import RetryingFetcher
    from ._store import ClaimStore

GOOGLE_FACTCHECK_API = "https://factchecktools.googleapis.com"
_JSON = "application/ld+json, application/json;q=0.9, */*;q=0.5"
_HTML = "text/html, application/xhtml+xml;q=0.9, */*;q=0.5"
#: Problems listed per source in a report (the count is always complete).
_PROBLEMS_KEPT = 5


@dataclass
class SourceReviews:
    """What one source yielded: its reviews, and a line per item it could not read."""

    reviews: list[Review] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    skipped: int = 0


class ClaimSource(Protocol):
    """Where reviews come from. `describe()` names it in reports (never with a secret)."""

    kind: str

    def describe(self) -> str: ...

    async def reviews(self, fetcher: RetryingFetcher) -> SourceReviews: ...


CLAIM_SOURCES: Registry[ClaimSource] = Registry("claim source")


def _is_url(location: str) -> bool:
    return location.lower().startswith(("http://", "https://"))


def _parse_json(raw: bytes | str, where: str) -> Any:
    try:
        text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
        return json.loads(text)
    except UnicodeDecodeError:
        raise DataError("not UTF-8 text", source=where) from None
    except json.JSONDecodeError as exc:
        hint = "; it looks like an HTML page: read it as a page (PageSource, --page)" if text.lstrip()[:1] == "<" else ""
        raise DataError(f"not JSON ({exc.msg}, line {exc.lineno}){hint}", source=where) from None
    except RecursionError:
        raise DataError("JSON nested too deeply", source=where) from None


def _read_claimreviews(doc: Any, where: str, *, page_url: str | None = None) -> SourceReviews:
    items = find_claimreviews(doc)
    if not items:
        raise DataError('no ClaimReview objects found (need "@type": "ClaimReview")', source=where)
    out = SourceReviews()
    for number, item in enumerate(items, start=1):
        try:
            out.reviews.append(review_from_claimreview(item, page_url=page_url))
        except ReviewProblem as exc:
            out.skipped += 1
            out.problems.append(f"ClaimReview #{number}: {exc}")
    return out


@CLAIM_SOURCES.register("feed", help="a ClaimReview data feed or JSON-LD list, by URL or file")
@dataclass(frozen=True)
class FeedSource:
    """A ClaimReview data feed (schema.org `DataFeed` of `DataFeedItem`s, as open ClaimReview
    feeds are published) or any JSON(-LD) document holding ClaimReview objects: a URL, or a
    local file."""

    location: str
    kind: str = "feed"

    def describe(self) -> str:
        return self.location

    async def reviews(self, fetcher: RetryingFetcher) -> SourceReviews:
        if _is_url(self.location):
            page = await fetcher.get(self.location, accept=_JSON)
            return _read_claimreviews(_parse_json(page.content or page.text, self.location), self.location)
        path = Path(self.location).expanduser()
        if not path.is_file():
            raise DataError("no such file (a feed is an http(s) URL or a local file)", source=self.location)
        return _read_claimreviews(_parse_json(path.read_bytes(), self.location), self.location)


@CLAIM_SOURCES.register("page", help="the ClaimReview JSON-LD embedded in a fact-check article")
@dataclass(frozen=True)
class PageSource:
    """A fact-check article: the ClaimReview objects in its JSON-LD blocks. A review without
    its own `url` gets the page's (final, after redirects)."""

    url: str
    kind: str = "page"

    def describe(self) -> str:
        return self.url

    async def reviews(self, fetcher: RetryingFetcher) -> SourceReviews:
        page = await fetcher.get(self.url, accept=_HTML)
        documents, broken = jsonld_documents(page.text)
        if not documents:
            detail = f" ({broken} JSON-LD block(s) were not valid JSON)" if broken else ""
            raise DataError(f"no JSON-LD on the page{detail}; misguard reads ClaimReview markup in "
                            '<script type="application/ld+json">', source=self.url)
        out = _read_claimreviews(documents, self.url, page_url=page.url)
        if broken:
            out.problems.insert(0, f"{broken} JSON-LD block(s) were not valid JSON")
        return out


@CLAIM_SOURCES.register("google-factcheck", help="Google's Fact Check Tools claims:search, with your API key")
@dataclass(frozen=True)
class GoogleFactCheckSource:
    """Google's Fact Check Tools `claims:search`, every page (`nextPageToken`) of one query.

    Args:
        query: the text searched for.
        api_key: the user's Google API key (sent as the `key` parameter; masked in errors).
        language: BCP-47 code to restrict results to ("en", "pt-BR").
        max_age_days: only reviews at most this many days old (by claim or review date).
        api_base: the API's root (tests point it at a local server).
        page_size: results per page.
        max_pages: stop after this many pages even if the API offers more.
    """

    query: str
    api_key: str = field(repr=False)
    language: str | None = None
    max_age_days: int | None = None
    api_base: str = GOOGLE_FACTCHECK_API
    page_size: int = 50
    max_pages: int = 100
    kind: str = "google-factcheck"

    def __post_init__(self) -> None:
        if not self.query.strip():
            raise ConfigError("a Google Fact Check search needs a query (--query TEXT)")
        if not self.api_key:
            raise ConfigError(
                "Google's Fact Check Tools API needs a key: pass --api-key or set MISGUARD_GOOGLE_API_KEY "
                "(create one in the Google Cloud console with the Fact Check Tools API enabled)"
            )

    def describe(self) -> str:
        return f"Google Fact Check Tools: {self.query!r}" + (f" ({self.language})" if self.language else "")

    def page_url(self, token: str | None) -> str:
        params: dict[str, str | int] = {"query": self.query, "pageSize": self.page_size}
        if self.language:
            params["languageCode"] = self.language
        if self.max_age_days is not None:
            params["maxAgeDays"] = self.max_age_days
        if token:
            params["pageToken"] = token
        params["key"] = self.api_key
        return f"{self.api_base.rstrip('/')}/v1alpha1/claims:search?{urlencode(params)}"

    async def reviews(self, fetcher: RetryingFetcher) -> SourceReviews:
        out = SourceReviews()
        token: str | None = None
        seen: set[str] = set()
        for number in range(1, self.max_pages + 1):
            page = await fetcher.get(self.page_url(token), accept="application/json")
            where = f"{self.describe()} page {number}"
            answer = _parse_json(page.content or page.text, where)
            try:
                reviews, problems = reviews_from_google(answer)
            except ReviewProblem as exc:
                raise DataError(str(exc), source=where) from None
            out.reviews += reviews
            out.problems += [f"page {number}, {p}" for p in problems]
            out.skipped += len(problems)
            token = answer.get("nextPageToken") or None
            if not token or token in seen:  # no more pages (or a token repeated: stop, do not loop)
                break
            seen.add(token)
        return out


@dataclass(frozen=True)
class SourceReport:
    """What one source gave. `error` set: the source failed and nothing of it was written."""

    source: str
    kind: str
    reviews: int = 0
    """Reviews read."""
    kept: int = 0
    """Reviews pulled (the others were older than `since`, or undated with a `since`)."""
    older: int = 0
    undated: int = 0
    skipped: int = 0
    """Items that could not be read (no claim text, no rating), listed in `problems`."""
    problems: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class PullReport:
    """What one pull did: per source, then the store write (one for every source)."""

    sources: tuple[SourceReport, ...]
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    embedded: int = 0
    fetch_seconds: float = 0.0
    ingest_seconds: float = 0.0

    @property
    def failed(self) -> list[SourceReport]:
        return [s for s in self.sources if s.error is not None]

    @property
    def claims(self) -> int:
        return self.added + self.updated + self.unchanged


def pull_claims(
    store: ClaimStore,
    sources: ClaimSource | Sequence[ClaimSource],
    *,
    fetcher: RetryingFetcher | None = None,
    since: date | str | None = None,
    strict: bool = False,
    assign_topics: Callable[[np.ndarray], list[str]] | None = None,
    concurrency: int = 4,
) -> PullReport:
    """Read every source, then write their reviews into `store` (all or nothing).

    Args:
        store: the claim store to update.
        sources: one source or several (`FeedSource`, `PageSource`, `GoogleFactCheckSource`).
        fetcher: how to fetch (default: public addresses only, 3 retries).
        since: only reviews dated on or after this day (undated reviews are left out).
        strict: a source with any unreadable item fails as a whole (default: the item is
            skipped and listed in the report).
        assign_topics: topics for the new claims' vectors (the topic agent), as in `add`.
        concurrency: sources fetched at once.

    Runs its own event loop: call it from synchronous code.
    """
    from ..net import RetryingFetcher

    chosen = [sources] if not isinstance(sources, Sequence) else list(sources)
    cutoff = _since(since)
    fetcher = fetcher or RetryingFetcher()
    started = time.perf_counter()
    results = asyncio.run(_read_all(chosen, fetcher, concurrency))
    fetch_seconds = time.perf_counter() - started
    reports, claims = [], []
    for source, result in zip(chosen, results):
        name = fetcher.mask(source.describe())
        if isinstance(result, MisguardError):
            reports.append(SourceReport(name, source.kind, error=fetcher.mask(str(result))))
            continue
        if strict and result.skipped:
            reports.append(SourceReport(
                name, source.kind, reviews=len(result.reviews) + result.skipped, skipped=result.skipped,
                problems=tuple(result.problems[:_PROBLEMS_KEPT]),
                error=f"{result.skipped} unreadable item(s) with --strict, first: {result.problems[0]}",
            ))
            continue
        kept = [r for r in result.reviews if cutoff is None or (r.date is not None and r.date >= cutoff)]
        undated = sum(r.date is None for r in result.reviews) if cutoff is not None else 0
        claims += [r.to_claim() for r in kept]
        reports.append(SourceReport(
            name, source.kind, reviews=len(result.reviews) + result.skipped, kept=len(kept),
            older=len(result.reviews) - len(kept) - undated, undated=undated, skipped=result.skipped,
            problems=tuple(result.problems[:_PROBLEMS_KEPT]),
        ))
    if not claims:
        return PullReport(tuple(reports), fetch_seconds=fetch_seconds)
    ingest = store.add(claims, source=f"a pull from {sum(r.error is None for r in reports)} source(s)",
                       assign_topics=assign_topics)
    return PullReport(tuple(reports), ingest.added, ingest.updated, ingest.unchanged, ingest.embedded,
                      fetch_seconds, ingest.seconds)


async def _read_all(sources: list[ClaimSource], fetcher: RetryingFetcher, concurrency: int) -> list[Any]:
    limit = asyncio.Semaphore(max(1, concurrency))

    async def one(source: ClaimSource) -> SourceReviews | MisguardError:
        async with limit:
            try:
                return await source.reviews(fetcher)
            except MisguardError as exc:  # one source's failure is reported, the others go on
                return exc

    return list(await asyncio.gather(*(one(s) for s in sources)))


def _since(value: date | str | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    parsed = iso_date(value)
    if parsed is None:
        raise ConfigError(f"--since takes a date like 2026-01-31, not {value!r}")
    return parsed


#: Review-age bands of `review_age_counts`, youngest first: (label, days below which it applies).
AGE_BANDS: tuple[tuple[str, float], ...] = (
    ("under 30 days", 30), ("30-364 days", 365), ("1-2 years", 730), ("2-5 years", 1826), ("5+ years", float("inf")),
)


def review_age_counts(store: ClaimStore, today: date | None = None) -> dict[str, int]:
    """How many claims were reviewed how long ago (by their review date), plus `undated`."""
    today = today or date.today()
    counts = dict.fromkeys([label for label, _ in AGE_BANDS] + ["undated"], 0)
    for claim in store.iter_claims():
        reviewed = iso_date(claim.date) if claim.date else None
        if reviewed is None:
            counts["undated"] += 1
            continue
        age = (today - date.fromisoformat(reviewed)).days
        label = next(label for label, limit in AGE_BANDS if age < limit)
        counts[label] += 1
    return counts
