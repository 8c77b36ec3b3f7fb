"""Property-based run of every operation in the OpenAPI schema against the real server
(uvicorn on loopback): no generated input may cause a 5xx. Bounded for CI."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

from tests.helpers.live_service import live_server

from .conftest import ADMIN_KEY, make_app

schemathesis = pytest.importorskip("schemathesis", reason="needs schemathesis (the test extra)")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory):
    from misguard.claims import ClaimStore, read_claims
    from misguard.embed import get_embedder

    from .conftest import HASHING, SAMPLE

    db = tmp_path_factory.mktemp("schemathesis") / "db"
    with ClaimStore.open(db, get_embedder(None, HASHING), create=True) as store:
        store.add(read_claims(SAMPLE))
    # Generous limits for the generator, small ones for what a request may cost.
    app = make_app(db, rate_limit="100000/minute", admin_rate_limit="100000/minute", max_body_bytes=200_000,
                   max_text_chars=5_000, max_batch=16, request_timeout_s=20)
    with live_server(app) as url:
        yield schemathesis.openapi.from_url(f"{url}/openapi.json")


def test_no_generated_input_gives_a_server_error(api_schema):
    # Each operation's strategy driven by Hypothesis directly (schemathesis' own pytest
    # plugin does not run under this pytest version).
    from hypothesis import given

    failures: list[str] = []
    statuses: set[int] = set()
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert {op.label for op in operations} >= {"POST /v1/check", "POST /v1/check/page", "GET /v1/claims"}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True,
                  database=None)
        def run(case) -> None:
            response = case.call(headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=30)
            statuses.add(response.status_code)
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path}: {response.status_code} {response.text[:300]}")

        run()
    assert failures == []
    assert 200 in statuses and 422 in statuses  # the run reached the handlers and the validation
