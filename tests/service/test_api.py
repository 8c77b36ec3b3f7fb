"""The HTTP API through TestClient against the app factory (hashing embedder, sample store)."""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from misguard.errors import MisguardError

from misguard.service import create_app

from .conftest import ADMIN_KEY, CHECK_KEY, auth, make_app, make_settings

FALSE_TEXT = "Goldfish can only remember things for three seconds"
TRUE_TEXT = "Octopuses have three hearts and blue blood, which helps them in cold water"


def test_single_text_and_batch_follow_the_contract(client):
    one = client.post("/v1/check", json={"text": FALSE_TEXT}, headers=auth())
    assert one.status_code == 200
    [result] = one.json()["results"]
    assert result["flagged"] is True and result["matched_claim_id"] == "S03" and 0 <= result["score"] <= 1
    assert result["matched_claim_url"] == "https://example.org/checks/S03"
    assert FALSE_TEXT[result["evidence"]["start"] : result["evidence"]["end"]] == result["evidence"]["text"]
    batch = client.post("/v1/check", json={"texts": [TRUE_TEXT, FALSE_TEXT, ""]}, headers=auth())
    results = batch.json()["results"]
    assert [r["index"] for r in results] == [0, 1, 2]
    assert [r["flagged"] for r in results] == [False, True, False]
    assert results[0]["matched_claim_id"] is None and "score" in results[2]
    assert results[1]["cached"] is True  # the same text again: answered from the verdict cache


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {CHECK_KEY}"},
                                     {"Authorization": "Bearer"}])
def test_missing_or_wrong_key_is_401(client, headers):
    response = client.post("/v1/check", json={"text": FALSE_TEXT}, headers=headers)
    assert response.status_code == 401 and "Bearer" in response.json()["detail"]


def test_check_key_cannot_manage_the_store(client):
    assert client.get("/v1/claims", headers=auth()).status_code == 403
    assert client.delete("/v1/claims/S03", headers=auth()).status_code == 403
    assert client.post("/v1/check", json={"text": "x" * 50}, headers=auth(ADMIN_KEY)).status_code == 200


@pytest.mark.parametrize("body, status", [
    ({"text": "a", "texts": ["b"]}, 422),
    ({}, 422),
    ({"texts": "not a list"}, 422),
    ({"text": "a", "extra": 1}, 422),
    ({"texts": ["t"] * 65}, 413),
    ({"text": "x" * 20_001}, 413),
])
def test_bad_requests_get_clear_errors(client, body, status):
    response = client.post("/v1/check", json=body, headers=auth())
    assert response.status_code == status, response.text
    assert response.json()["detail"]


def test_bodies_over_the_limit_are_refused_before_reading(db):
    with TestClient(make_app(db, max_body_bytes=5_000)) as client:
        big = json.dumps({"text": "y" * 10_000})
        response = client.post("/v1/check", content=big, headers={**auth(), "Content-Type": "application/json"})
        assert response.status_code == 413

        def chunks():
            yield big[:4000].encode()
            yield big[4000:].encode()

        streamed = client.post("/v1/check", content=chunks(), headers={**auth(), "Content-Type": "application/json"})
        assert streamed.status_code == 413


def test_rate_limit_is_per_key(db):
    with TestClient(make_app(db, rate_limit="3/minute")) as client:
        codes = [client.post("/v1/check", json={"text": "a b c"}, headers=auth()).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        assert client.post("/v1/check", json={"text": "a b c"}, headers=auth(ADMIN_KEY)).status_code == 200


def test_wrong_keys_are_rate_limited_per_client_address(db):
    """Guessing keys: failed authentications count per client address, before the key is
    checked, so a guesser is slowed down whatever keys it tries."""
    with TestClient(make_app(db, rate_limit="3/minute", auth_failure_limit="3/minute")) as client:
        codes = [client.post("/v1/check", json={"text": "a b c"}, headers=auth(f"guess-{i}")).status_code
                 for i in range(8)]
        assert codes == [401, 401, 401, 429, 429, 429, 429, 429]
        limited = client.post("/v1/check", json={"text": "a b c"}, headers={})
        assert limited.status_code == 429 and "authentication" in limited.json()["detail"]
        # Once limited, even the right key is refused from that address: a guesser learns nothing.
        assert client.post("/v1/check", json={"text": "a b c"}, headers=auth()).status_code == 429
        assert client.get("/v1/claims", headers=auth(ADMIN_KEY)).status_code == 429
    with TestClient(make_app(db, rate_limit="3/minute", auth_failure_limit="3/minute"), client=("10.0.0.1", 1000)) as other:
        # Another address (a fresh app: TestClient has one address per running app), with
        # the right key: the per-key limit is the one that applies.
        codes = [other.post("/v1/check", json={"text": "a b c"}, headers=auth()).status_code for _ in range(4)]
        assert codes == [200, 200, 200, 429]
        assert "rate limit exceeded" in other.post("/v1/check", json={"text": "x"}, headers=auth()).json()["detail"]


def test_failed_authentications_count_per_address():
    from misguard.service._security import FailedAuthLimiter

    limiter = FailedAuthLimiter("2/minute", "memory://")
    for _ in range(2):
        assert limiter.retry_after("10.0.0.1") is None
        limiter.failed("10.0.0.1")
    wait = limiter.retry_after("10.0.0.1")
    assert wait is not None and 1 <= wait <= 61
    assert limiter.retry_after("10.0.0.2") is None and limiter.retry_after("::1") is None
    with pytest.raises(MisguardError, match="not a limit"):
        FailedAuthLimiter("ten a minute", "memory://")


def test_failed_authentications_are_counted_in_the_metrics(db):
    with TestClient(make_app(db, auth_failure_limit="2/minute")) as client:
        for i in range(3):
            client.post("/v1/check", json={"text": "a"}, headers=auth(f"bad-{i}"))
        metrics = client.get("/metrics").text
        assert "misguard_auth_failures_total 2.0" in metrics and "misguard_auth_limited_total 1.0" in metrics


def test_a_check_key_on_an_admin_route_is_not_a_failed_authentication(db):
    with TestClient(make_app(db, auth_failure_limit="2/minute")) as client:
        codes = [client.get("/v1/claims", headers=auth()).status_code for _ in range(4)]
        assert codes == [403] * 4
        assert client.post("/v1/check", json={"text": "a"}, headers=auth()).status_code == 200


def test_claims_admin_round_trip_in_claimreview(client):
    listed = client.get("/v1/claims", params={"limit": 5}, headers=auth(ADMIN_KEY)).json()
    assert listed["total"] >= 20 and len(listed["claims"]) == 5
    assert listed["claims"][0]["@type"] == "ClaimReview"
    new = "Penguins can fly short distances when they are frightened by predators"
    assert client.post("/v1/check", json={"text": new}, headers=auth()).json()["results"][0]["flagged"] is False
    review = {
        "@context": "https://schema.org", "@type": "ClaimReview", "claimReviewed": new,
        "url": "https://example.org/checks/penguins",
        "reviewRating": {"@type": "Rating", "alternateName": "False"},
        "author": {"@type": "Organization", "name": "test checker"},
    }
    added = client.post("/v1/claims", json=[review], headers=auth(ADMIN_KEY))
    assert added.status_code == 200, added.text
    assert added.json()["added"] == 1 and added.json()["total"] == listed["total"] + 1
    # The guard was rebuilt: the cached "not flagged" answer is gone.
    result = client.post("/v1/check", json={"text": new}, headers=auth()).json()["results"][0]
    assert result["flagged"] is True and result["matched_claim_url"] == "https://example.org/checks/penguins"
    claim_id = result["matched_claim_id"]
    assert client.delete(f"/v1/claims/{claim_id}", headers=auth(ADMIN_KEY)).json() == {"deleted": 1, "total": listed["total"]}
    assert client.delete(f"/v1/claims/{claim_id}", headers=auth(ADMIN_KEY)).status_code == 404
    assert client.post("/v1/check", json={"text": new}, headers=auth()).json()["results"][0]["flagged"] is False


def test_bad_claimreview_changes_nothing(client):
    before = client.get("/v1/claims", headers=auth(ADMIN_KEY)).json()["total"]
    assert client.post("/v1/claims", content=b"{not json", headers=auth(ADMIN_KEY)).status_code == 422
    bad = client.post("/v1/claims", json=[{"@type": "ClaimReview", "claimReviewed": "x y z"}, {"@type": "ClaimReview"}],
                      headers=auth(ADMIN_KEY))
    assert bad.status_code == 422 and "DataError" in bad.json()["detail"]
    assert client.get("/v1/claims", headers=auth(ADMIN_KEY)).json()["total"] == before


PAGE = """<html><body><article>
<h1>Weekend reading</h1>
<p>Our town library extends its opening hours on Saturdays from next month, the council said.</p>
<p>A reader wrote in to say that bulls become furious when they see the colour red.</p>
<p>The local football club won its third match in a row on Sunday afternoon.</p>
</article></body></html>"""


def test_page_check_returns_blocks_with_offsets_and_an_audit(client):
    response = client.post("/v1/check/page", json={"html": PAGE}, headers=auth())
    assert response.status_code == 200, response.text
    body = response.json()
    flagged = [b for b in body["blocks"] if b["result"]["flagged"]]
    assert len(body["blocks"]) >= 3 and body["flagged"] == len(flagged) == 1
    assert flagged[0]["result"]["matched_claim_id"] == "S09" and "bulls" in flagged[0]["text"]
    assert all(b["end"] - b["start"] == len(b["text"]) for b in body["blocks"])
    assert body["discrepancies"] == [] and body["notifications"][0]["claim_id"] == "S09"


def test_page_url_is_not_fetched_unless_allowed(db, client):
    refused = client.post("/v1/check/page", json={"url": "http://example.org/"}, headers=auth())
    assert refused.status_code == 403 and "html" in refused.json()["detail"]
    refusals = {
        "http://127.0.0.1:9/": "non-public address (127.0.0.1)",
        "http://169.254.169.254/latest/meta-data/": "non-public address (169.254.169.254)",
        "http://[::127.0.0.1]:9/": "non-public address (::7f00:1)",
        "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/": "non-public address (64:ff9b::a9fe:a9fe)",
        "http://[::ffff:0:7f00:1]/": "non-public address",
        "http://[fec0::1]/": "non-public address (fec0::1)",
        "http://xn--lcalhost-sxa.example/": "not a valid host name",
        "file:///etc/passwd": "only http and https",
    }
    with TestClient(make_app(db, allow_url_fetch=True)) as fetching:
        for url, reason in refusals.items():
            response = fetching.post("/v1/check/page", json={"url": url}, headers=auth())
            assert response.status_code == 403, (url, response.text)
            assert reason in response.json()["detail"], (url, response.text)
        assert f"misguard_fetch_refused_total {len(refusals)}.0" in fetching.get("/metrics").text


def test_an_invalid_host_in_a_redirect_is_refused_not_a_server_error(db):
    from tests.helpers.page_server import Page, page_server

    pages = {"/away": Page(status=302, headers={"Location": "http://xn--lcalhost-sxa.example/"})}
    with page_server(pages) as site, \
            TestClient(make_app(db, allow_url_fetch=True, allow_private_urls=True)) as client:
        response = client.post("/v1/check/page", json={"url": f"{site.url}/away"}, headers=auth())
    assert response.status_code == 403 and "not a valid host name" in response.json()["detail"]


def test_page_url_fetch_from_an_allowed_private_server(db):
    from tests.helpers.page_server import Page, page_server

    with page_server({"/news": Page(PAGE)}) as site, \
            TestClient(make_app(db, allow_url_fetch=True, allow_private_urls=True)) as client:
        body = client.post("/v1/check/page", json={"url": f"{site.url}/news"}, headers=auth()).json()
    assert body["url"] == f"{site.url}/news" and body["flagged"] == 1


def test_operations_endpoints(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").json()["status"] == "ready"
    client.post("/v1/check", json={"texts": [FALSE_TEXT, TRUE_TEXT]}, headers=auth())
    metrics = client.get("/metrics")
    assert metrics.status_code == 200 and metrics.headers["content-type"].startswith("text/plain")
    assert 'misguard_texts_checked_total{outcome="flagged"} 1.0' in metrics.text
    assert 'misguard_http_requests_total{method="POST",route="/v1/check",status="200"} 1.0' in metrics.text
    assert "misguard_store_claims" in metrics.text
    assert "/v1/check" in client.get("/openapi.json").json()["paths"]


def test_cors_admits_configured_origins_and_extensions_only(db):
    with TestClient(make_app(db, cors_origins=["https://news.example"])) as client:
        def preflight(origin: str):
            return client.options("/v1/check", headers={
                "Origin": origin, "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization,content-type"})

        assert preflight("chrome-extension://abcdefghijklmnop").headers.get("access-control-allow-origin") == "chrome-extension://abcdefghijklmnop"
        assert preflight("https://news.example").headers.get("access-control-allow-origin") == "https://news.example"
        assert "access-control-allow-origin" not in preflight("https://evil.example").headers


def test_concurrent_requests_are_answered_correctly_and_batched(client):
    texts = [FALSE_TEXT, TRUE_TEXT, "Vikings wore helmets with horns into battle", "The bakery opens at seven every day"]

    def one(i: int) -> tuple[int, bool, str | None]:
        r = client.post("/v1/check", json={"text": f"{texts[i % 4]} ({i})"}, headers=auth()).json()["results"][0]
        return i, r["flagged"], r["matched_claim_id"]

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(one, range(40)))
    assert [(f, c) for i, f, c in answers if i % 4 == 0] == [(True, "S03")] * 10
    assert [f for i, f, _ in answers if i % 4 == 1] == [False] * 10
    assert [c for i, f, c in answers if i % 4 == 2] == ["S13"] * 10


def test_logs_carry_no_keys_or_texts(client, caplog):
    caplog.set_level(logging.DEBUG, logger="misguard.service")
    client.post("/v1/check", json={"text": FALSE_TEXT}, headers=auth())
    client.post("/v1/check", json={"text": FALSE_TEXT}, headers={"Authorization": "Bearer not-a-key"})
    assert "texts=1" in caplog.text
    for secret in (CHECK_KEY, "not-a-key", FALSE_TEXT, "Goldfish"):
        assert secret not in caplog.text


def test_two_replicas_follow_one_store(db):
    with TestClient(make_app(db)) as a, TestClient(make_app(db)) as b:
        text = "Koalas drink litres of water every day from rivers and lakes in summer"
        assert b.post("/v1/check", json={"text": text}, headers=auth()).json()["results"][0]["flagged"] is False
        review = {"@type": "ClaimReview", "claimReviewed": text, "reviewRating": {"alternateName": "False"}}
        assert a.post("/v1/claims", json=review, headers=auth(ADMIN_KEY)).status_code == 200
        assert b.post("/v1/check", json={"text": text}, headers=auth()).json()["results"][0]["flagged"] is True
        assert b.get("/readyz").json()["store_generation_reloads"] == 1


def test_the_service_refuses_to_start_without_keys_or_store(db, tmp_path):
    with pytest.raises(MisguardError, match="MISGUARD_API_KEYS"):
        make_app(db, api_keys=[], admin_keys=[])
    with pytest.raises(MisguardError, match="claims add"):
        make_app(tmp_path / "nowhere")


def test_the_llm_judge_decides_from_the_runner_thread(db):
    """With `judge` on, the guard's blocking judge call runs on the runner's worker thread
    (no event loop there), and its answer is the verdict."""
    from misguard.claims import ClaimGuard, LLMJudge, ThresholdDecision
    from misguard.llm import get_llm

    llm = get_llm("mock", outputs=["No"])

    def judged(store):
        return ClaimGuard(store, decision=ThresholdDecision(0.0), judge=LLMJudge(llm))

    with TestClient(create_app(make_settings(db), make_guard=judged)) as client:
        [result] = client.post("/v1/check", json={"text": FALSE_TEXT}, headers=auth()).json()["results"]
    assert result["decided_by"] == "llm-judge-2" and result["flagged"] is False and len(llm.calls) == 1


def test_default_guard_factory_builds_the_judge_from_settings(db):
    from misguard.config import LLMSettings
    from misguard.service import default_guard_factory

    factory = default_guard_factory(make_settings(db, judge=True, threshold=0.5, llm=LLMSettings(model="mock")), "hashing/256")
    from misguard.claims import ClaimStore
    from misguard.embed import get_embedder

    from .conftest import HASHING

    with ClaimStore.open(db, get_embedder(None, HASHING)) as store:
        guard = factory(store)
        assert guard.judge is not None and guard.decision.threshold == 0.5


def test_without_the_extra_the_error_names_it(db):
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import sys, importlib.abc
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split('.')[0] in ('fastapi', 'slowapi', 'starlette'):
                    raise ImportError('blocked ' + name, name=name)
        sys.meta_path.insert(0, Block())
        from misguard.service import ServiceSettings, create_app
        try:
            create_app(ServiceSettings(db={str(db)!r}, api_keys=['k']))
        except ImportError as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "pip install 'misguard[service]'" in out.stdout, out.stderr


def test_the_default_guard_uses_the_decision_shipped_for_e5(db):
    from misguard.service import default_guard_factory

    factory = default_guard_factory(make_settings(db), "e5/multilingual-e5-small-q4")
    assert callable(factory)


def test_the_guard_factory_serves_a_reader_and_its_shipped_decision(db, tmp_path):
    """`serve --reader st/minilm` picks the decision shipped for it (none exists for a
    hashing store: the error names both); with a decision fitted with a reader, the reader
    named in the settings is what the guard reads."""
    import numpy as np

    from misguard.claims import ClaimStore
    from misguard.claims._detect import FEATURES, FEATURES_EN_READER, fit_logistic
    from misguard.embed import get_embedder
    from misguard.errors import ConfigError
    from misguard.service import default_guard_factory

    from .conftest import HASHING

    with pytest.raises(ConfigError, match="with reader 'hashing/64'"):
        default_guard_factory(make_settings(db, reader="hashing/64"), "hashing/256")
    x = np.random.default_rng(0).random((40, len(FEATURES)))
    fitted = fit_logistic(x, np.arange(40) % 2 == 0, embedder="hashing/256", trained_on="unit test", names=FEATURES_EN_READER,
                          reader={"kind": "embedding", "embedder": "hashing/64"})
    path = tmp_path / "decision.json"
    path.write_text(fitted.to_json(), encoding="utf-8")
    factory = default_guard_factory(make_settings(db, reader="hashing/64", decision=path), "hashing/256")
    with ClaimStore.open(db, get_embedder(None, HASHING)) as store:
        guard = factory(store)
        assert guard.reader is not None and guard.reader.identity()["embedder"] == "hashing/64"
        with pytest.raises(ConfigError, match="fitted with the reader"):
            default_guard_factory(make_settings(db, reader="hashing/32", decision=path), "hashing/256")(store)


def test_a_json_body_without_its_content_type_is_told_what_to_send(client):
    body = '{"text": "Vikings wore horned helmets"}'
    plain = client.post("/v1/check", content=body, headers={**auth(), "Content-Type": "text/plain"})
    assert plain.status_code == 422
    [error] = plain.json()["detail"]
    assert "Content-Type: application/json" in error["msg"] and "text/plain" in error["msg"]
    # with the content type the same body is checked; other validation errors keep FastAPI's wording
    assert client.post("/v1/check", content=body, headers={**auth(), "Content-Type": "application/json"}).status_code == 200
    extra = client.post("/v1/check", json={"txt": "x"}, headers=auth())
    assert extra.status_code == 422 and extra.json()["detail"][0]["type"] == "extra_forbidden"
