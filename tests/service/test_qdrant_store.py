"""The service on a Qdrant-backed claim store (embedded mode): the same API as on SQLite."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from misguard.claims import open_claim_store, read_claims
from misguard.embed import get_embedder

from .conftest import ADMIN_KEY, HASHING, SAMPLE, auth, make_app
from .test_api import FALSE_TEXT, test_claims_admin_round_trip_in_claimreview as admin_round_trip

pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")


@pytest.fixture
def client_on_qdrant(tmp_path):
    spec = f"qdrant:{tmp_path / 'q'}"
    with open_claim_store(spec, get_embedder(None, HASHING), create=True) as store:
        store.add(read_claims(SAMPLE))
    with TestClient(make_app(spec)) as client:
        yield client


def test_checks_and_the_admin_round_trip(client_on_qdrant):
    result = client_on_qdrant.post("/v1/check", json={"text": FALSE_TEXT}, headers=auth()).json()["results"][0]
    assert result["flagged"] is True
    admin_round_trip(client_on_qdrant)


def test_claims_are_listed_page_by_page(client_on_qdrant):
    pages = [client_on_qdrant.get("/v1/claims", params={"offset": offset, "limit": 10}, headers=auth(ADMIN_KEY)).json()
             for offset in range(0, 40, 10)]
    texts = [review["claimReviewed"] for page in pages for review in page["claims"]]
    assert pages[0]["total"] == 32 and len(texts) == 32 and len(set(texts)) == 32
