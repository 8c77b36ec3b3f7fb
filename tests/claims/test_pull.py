"""Pulling fact-checks: feeds, JSON-LD lists, fact-check pages and a Google Fact Check Tools
double, served by a real HTTP server on loopback, checked claim by claim."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from misguard.claims import (
    ClaimStore,
    FeedSource,
    GoogleFactCheckSource,
    PageSource,
    pull_claims,
    review_age_counts,
    review_id,
)
from misguard.errors import ConfigError
from misguard.net import PageFetcher, RetryingFetcher, any_address
from misguard.types import VerdictLabel
from tests.helpers.route_server import Answer, route_server

FIXTURES = Path(__file__).parent / "fixtures" / "pull"

# (review URL, claim, verdict, rating as published, language, publisher, review date)
FEED = [
    ("https://checks.example/en/moon-landing-studio", "The Moon landings were filmed in a television studio",
     "false", "Pants on Fire!", "en", "Test Checks", "2025-12-01"),
    ("https://checks.example/en/ostrich-sand", "Ostriches bury their heads in the sand when they are afraid",
     "mostly-false", "Mostly False", "en", "Test Checks", "2026-02-10"),
    ("https://verif-test.example/2026/04/eau-froide", "Boire de l'eau froide après le repas fait grossir",
     "false", "Faux", "fr", "Vérif Test", "2026-04-05"),
    ("https://chequeo-test.example/chicle-siete-anos", "Un chicle tragado tarda siete años en digerirse",
     "mostly-false", "Engañoso", "es", "Chequeo Test", "2026-07-19"),
    ("https://chequeo-test.example/pulpo-corazones", "El pulpo tiene tres corazones",
     "true", "Verdadero", "es", "Chequeo Test", "2026-07-19"),
    ("https://faktencheck-test.example/rote-tuecher-stiere", "Stiere werden durch die rote Farbe des Tuches wütend",
     "mostly-false", "2 (scale 1-5)", "de", "Faktencheck Test", None),
]
LIST = [
    ("https://checagem-test.example/vacina-chip", "Vacinas contêm microchips para rastrear as pessoas",
     "false", "Falso", "pt", "Checagem Test", "2026-03-02"),
    ("https://tahaqaq-test.example/garlic-cure", "أكل الثوم النيء يشفي من نزلات البرد في يوم واحد",
     "mostly-false", "مضلل", "ar", "تحقق تجريبي", "2026-05-17"),
    ("https://hecha-test.example/xigua-zi", "吞下西瓜籽会在肚子里长出西瓜", "false", "谣言", "zh", "核查测试", "2026-06-14"),
]
PAGE_HI = [
    ("https://jaanch-test.example/namak-paani", "गर्म नमक वाले पानी से गरारे करने से कोरोना वायरस मर जाता है",
     "mostly-false", "भ्रामक", "hi", "जाँच टेस्ट", "2026-10-02"),
]


def page_es(page_url: str) -> list[tuple]:
    """The Spanish page: its first review has no `url`, so it gets the page's."""
    return [
        (page_url, "Si llueve el día de San Juan, lloverá todo el verano", "false", "Falso", "es", "Chequeo Test", "2026-06-24"),
        ("https://chequeo-test.example/tiempo#rayos", "Los rayos nunca caen dos veces en el mismo sitio",
         "false", "Falso", "es", "Chequeo Test", "2026-06-24"),
    ]


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def site_routes() -> dict:
    return {
        "/feed.json": Answer(fixture("datafeed.json"), content_type="application/ld+json"),
        "/list.jsonld": Answer(fixture("list.jsonld"), content_type="application/ld+json"),
        "/es.html": Answer(fixture("page_es.html"), content_type="text/html; charset=utf-8"),
        "/hi.html": Answer(fixture("page_hi.html"), content_type="text/html; charset=utf-8"),
        "/plain.html": Answer(fixture("page_plain.html"), content_type="text/html; charset=utf-8"),
        "/down.json": Answer("backend unavailable", 503, "text/plain"),
        "/gone.json": Answer("gone", 404, "text/plain"),
        "/html-not-json": Answer("<html><body>Sign in</body></html>", 200, "text/html"),
    }


def loopback(retries: int = 1) -> RetryingFetcher:
    """The SSRF-safe fetcher with private addresses allowed (the server is on loopback)."""
    return RetryingFetcher(PageFetcher(policy=any_address, timeout_s=5), retries=retries, backoff_s=0)


@pytest.fixture
def empty_store(tmp_path, embedder):
    with ClaimStore.open(tmp_path / "pulled", embedder, create=True) as s:
        yield s


def check_claims(store: ClaimStore, expected: list[tuple]) -> None:
    """Every expected review is in the store with all of its provenance."""
    for url, text, verdict, rating, language, publisher, day in expected:
        claim = store.get(review_id(url, text))
        assert claim is not None, f"missing: {text}"
        assert (claim.text, claim.verdict, claim.verdict_original, claim.language, claim.publisher, claim.url, claim.date) == (
            text, VerdictLabel(verdict), rating, language, publisher, url, day), text


def test_feeds_and_pages_pull_claim_by_claim_and_a_second_pull_adds_nothing(empty_store):
    with route_server(site_routes()) as site:
        sources = [FeedSource(f"{site.url}/feed.json"), FeedSource(f"{site.url}/list.jsonld"),
                   PageSource(f"{site.url}/es.html"), PageSource(f"{site.url}/hi.html")]
        report = pull_claims(empty_store, sources, fetcher=loopback())
        expected = FEED + LIST + page_es(f"{site.url}/es.html") + PAGE_HI
        assert (report.added, report.updated, report.unchanged) == (len(expected), 0, 0)
        assert len(empty_store) == len(expected) == 12
        check_claims(empty_store, expected)
        feed, listed, es, hi = report.sources
        assert (feed.reviews, feed.kept, feed.skipped) == (7, 6, 1)
        assert feed.problems == ("ClaimReview #3: no reviewRating",)
        assert (listed.kept, hi.kept, es.kept) == (3, 1, 2)
        assert es.problems == ("1 JSON-LD block(s) were not valid JSON",)
        assert not report.failed

        generation = empty_store.generation
        again = pull_claims(empty_store, sources, fetcher=loopback())
        assert (again.added, again.updated, again.unchanged) == (0, 0, 12)
        assert len(empty_store) == 12
        check_claims(empty_store, expected)
        assert empty_store.generation >= generation


def test_a_changed_review_updates_its_claim(empty_store):
    routes = site_routes()
    with route_server(routes) as site:
        pull_claims(empty_store, FeedSource(f"{site.url}/feed.json"), fetcher=loopback())
        ostrich = review_id(FEED[1][0], FEED[1][1])
        assert empty_store.get(ostrich).verdict is VerdictLabel.MOSTLY_FALSE
        routes["/feed.json"] = Answer(fixture("datafeed_v2.json"), content_type="application/ld+json")
        report = pull_claims(empty_store, FeedSource(f"{site.url}/feed.json"), fetcher=loopback())
    assert (report.added, report.updated, report.unchanged) == (1, 1, 5)
    updated = empty_store.get(ostrich)
    assert (updated.verdict, updated.verdict_original, updated.date) == (VerdictLabel.FALSE, "False", "2026-11-20")
    bats = empty_store.get(review_id("https://checks.example/en/bats-blind", "Bats are completely blind"))
    assert bats is not None and bats.verdict is VerdictLabel.FALSE
    assert len(empty_store) == 7


def test_since_pulls_only_newer_reviews(empty_store):
    routes = site_routes()
    routes["/feed.json"] = Answer(fixture("datafeed_v2.json"), content_type="application/ld+json")
    with route_server(routes) as site:
        report = pull_claims(empty_store, FeedSource(f"{site.url}/feed.json"), fetcher=loopback(), since="2026-07-19")
    (source,) = report.sources
    assert (source.reviews, source.kept, source.older, source.undated, source.skipped) == (8, 4, 2, 1, 1)
    assert sorted(c.date for c in empty_store.iter_claims()) == ["2026-07-19", "2026-07-19", "2026-11-20", "2026-11-21"]
    with pytest.raises(ConfigError, match="--since"):
        pull_claims(empty_store, FeedSource(str(FIXTURES / "datafeed.json")), since="last week")


def test_failing_sources_are_reported_and_write_nothing(empty_store):
    with route_server(site_routes()) as site:
        closed = f"http://127.0.0.1:{_closed_port()}/feed.json"
        sources = [FeedSource(f"{site.url}/down.json"), FeedSource(f"{site.url}/gone.json"),
                   FeedSource(f"{site.url}/html-not-json"), PageSource(f"{site.url}/plain.html"),
                   FeedSource(closed), FeedSource(str(FIXTURES / "missing.json"))]
        report = pull_claims(empty_store, sources, fetcher=loopback(retries=2))
        assert site.hits("/down.json") == 3  # the first try and two retries
        assert site.hits("/gone.json") == 1  # a 404 is not retried
    assert len(empty_store) == 0 and empty_store.generation == 0
    errors = [s.error for s in report.sources]
    assert all(errors), errors
    assert "HTTP 503 after 3 attempt(s)" in errors[0] and f"{site.url}/down.json" in errors[0]
    assert "HTTP 404" in errors[1]
    assert "not JSON" in errors[2] and "looks like an HTML page" in errors[2]
    assert "no ClaimReview" in errors[3]
    assert "could not fetch" in errors[4] and "after 3 attempt(s)" in errors[4] and closed in errors[4]
    assert "no such file" in errors[5]


def test_one_failing_source_does_not_stop_the_others(empty_store):
    with route_server(site_routes()) as site:
        report = pull_claims(empty_store, [FeedSource(f"{site.url}/gone.json"), FeedSource(f"{site.url}/list.jsonld")],
                             fetcher=loopback())
    assert [s.error is None for s in report.sources] == [False, True]
    assert report.added == 3
    check_claims(empty_store, LIST)


def test_transient_failures_are_retried_until_the_feed_answers(empty_store):
    calls = {"n": 0}

    def flaky(path, query):
        calls["n"] += 1
        if calls["n"] < 3:
            return Answer("busy", 503, "text/plain")
        return Answer(fixture("list.jsonld"), content_type="application/ld+json")

    with route_server({"/flaky.json": flaky}) as site:
        report = pull_claims(empty_store, FeedSource(f"{site.url}/flaky.json"), fetcher=loopback(retries=3))
    assert calls["n"] == 3 and report.added == 3


def test_strict_refuses_a_source_with_an_unreadable_review(empty_store):
    report = pull_claims(empty_store, FeedSource(str(FIXTURES / "datafeed.json")), strict=True)
    (source,) = report.sources
    assert source.error is not None and "no reviewRating" in source.error
    assert len(empty_store) == 0


def test_private_addresses_are_refused_unless_allowed(empty_store):
    with route_server(site_routes()) as site:
        report = pull_claims(empty_store, [FeedSource(f"{site.url}/list.jsonld"), PageSource(f"{site.url}/hi.html")])
        assert site.requests == []  # refused before connecting
    assert all("non-public" in s.error for s in report.sources), report.sources
    assert len(empty_store) == 0


def test_local_feed_files_need_no_network(empty_store):
    report = pull_claims(empty_store, FeedSource(str(FIXTURES / "list.jsonld")))
    assert report.added == 3
    check_claims(empty_store, LIST)


GOOGLE_KEY = "test-key-5f1e"
GOOGLE = [
    ("https://checks.example/en/bleach-cure", "Drinking bleach cures viral infections", "false", "False", "en", "Test Checks", "2026-04-03"),
    ("https://verif-test.example/2026/04/javel", "Drinking bleach cures viral infections", "false", "Faux", "fr",
     "verif-test.example", "2026-04-05"),
    ("https://checks.example/en/vitamin-c", "Vitamin C megadoses prevent every cold", "mostly-false", "Mostly false", "en",
     "Test Checks", "2026-01-15"),
    ("https://checks.example/en/ten-percent-brain", "Humans use only ten percent of their brains", "false", "False", "en",
     "Test Checks", "2025-08-20"),
]


def google_api(path: str, query: dict[str, str]) -> Answer:
    """Fact Check Tools `claims:search`: two pages, the second behind `nextPageToken`."""
    if query.get("key") != GOOGLE_KEY:
        return Answer('{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key."}}', 400)
    if query.get("query") != "cures":
        return Answer('{"error": {"code": 400, "message": "unexpected query"}}', 400)
    page = {None: "google_p1.json", "CAI": "google_p2.json"}.get(query.get("pageToken"))
    return Answer(fixture(page)) if page else Answer('{"error": {"message": "bad token"}}', 400)


def test_google_factcheck_double_two_pages(empty_store):
    with route_server({"/v1alpha1/claims:search": google_api}) as api:
        source = GoogleFactCheckSource("cures", GOOGLE_KEY, language="en", max_age_days=400, api_base=api.url)
        report = pull_claims(empty_store, source, fetcher=loopback())
        queries = [q for _, q, _ in api.requests]
        again = pull_claims(empty_store, source, fetcher=loopback())
    assert [q.get("pageToken") for q in queries] == [None, "CAI"]
    assert all(q["languageCode"] == "en" and q["maxAgeDays"] == "400" and q["key"] == GOOGLE_KEY for q in queries)
    (result,) = report.sources
    assert (result.reviews, result.kept, result.skipped) == (5, 4, 1)
    assert result.problems == ("page 2, claim #2: no textualRating",)
    assert report.added == 4
    check_claims(empty_store, GOOGLE)
    assert not again.failed and (again.added, again.unchanged) == (0, 4)


def test_google_errors_name_the_problem_and_never_the_key(empty_store):
    with route_server({"/v1alpha1/claims:search": google_api}) as api:
        wrong = GoogleFactCheckSource("cures", "wrong-key-9b2c", api_base=api.url)
        fetcher = RetryingFetcher(PageFetcher(policy=any_address, timeout_s=5), retries=0, secrets=["wrong-key-9b2c"])
        report = pull_claims(empty_store, wrong, fetcher=fetcher)
    (result,) = report.sources
    assert "HTTP 400" in result.error and "API key not valid" in result.error
    assert "wrong-key-9b2c" not in result.error and "wrong-key-9b2c" not in result.source
    assert "key=***" in result.error
    assert len(empty_store) == 0
    with pytest.raises(ConfigError, match="MISGUARD_GOOGLE_API_KEY"):
        GoogleFactCheckSource("cures", "")


def test_review_ages(empty_store):
    pull_claims(empty_store, FeedSource(str(FIXTURES / "datafeed.json")))
    ages = review_age_counts(empty_store, today=date(2026, 8, 1))
    assert ages == {"under 30 days": 2, "30-364 days": 3, "1-2 years": 0, "2-5 years": 0, "5+ years": 0, "undated": 1}
    ages = review_age_counts(empty_store, today=date(2027, 3, 1))
    assert ages == {"under 30 days": 0, "30-364 days": 3, "1-2 years": 2, "2-5 years": 0, "5+ years": 0, "undated": 1}


def _closed_port() -> int:
    """A loopback port nothing listens on."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
