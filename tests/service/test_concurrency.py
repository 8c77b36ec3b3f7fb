"""Concurrency inside one service process: checks answered while the store is written, and
concurrent requests micro-batched (seen in the runner's metrics)."""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from fastapi.testclient import TestClient

from .conftest import ADMIN_KEY, auth, make_app

_WORDS = ["zarquon", "blivet", "quuxite", "flimbar", "grottle", "wexford", "plonkite", "snerdle", "vorpal", "jabber",
          "frumious", "tulgey", "borogove", "mimsy", "slithy", "outgrabe", "bandersnatch", "callooh", "uffish", "manxome"]
#: Claims with words nothing else uses: with hashing embeddings each text matches its own only.
NEW = [f"{_WORDS[2 * k].capitalize()} {_WORDS[2 * k + 1]} n{k}z {_WORDS[2 * k]}{k}x {_WORDS[2 * k + 1]}q" for k in range(10)]
GOLDFISH = "Goldfish can only remember things for three seconds"


def test_checks_while_claims_are_added_and_removed_see_one_state(db):
    """A writer adds ten claims and removes sample claims (every removal moves the slots of
    the claims after it) while four threads check all the texts at once: each answer must
    be the store's at one moment, i.e. the new claims it flags are the first m written."""
    with TestClient(make_app(db, rate_limit="100000/minute", admin_rate_limit="100000/minute")) as client:
        answers: list[list[dict]] = []
        done = threading.Event()

        def write() -> None:
            for k, text in enumerate(NEW):
                review = {"@type": "ClaimReview", "claimReviewed": text, "reviewRating": {"alternateName": "False"}}
                assert client.post("/v1/claims", json=review, headers=auth(ADMIN_KEY)).status_code == 200
                if k % 3 == 0:
                    assert client.delete(f"/v1/claims/S{k + 1:02d}", headers=auth(ADMIN_KEY)).status_code == 200
            done.set()

        def check() -> None:
            while not done.is_set():
                response = client.post("/v1/check", json={"texts": [*NEW, GOLDFISH]}, headers=auth())
                assert response.status_code == 200, response.text
                answers.append(response.json()["results"])

        with ThreadPoolExecutor(max_workers=5) as pool:
            futures = [pool.submit(check) for _ in range(4)] + [pool.submit(write)]
            for f in futures:
                f.result(timeout=300)
        answers.append(client.post("/v1/check", json={"texts": [*NEW, GOLDFISH]}, headers=auth()).json()["results"])

    assert len(answers) >= 10
    prefixes = set()
    for results in answers:
        flagged = [k for k, r in enumerate(results[: len(NEW)]) if r["flagged"]]
        assert flagged == list(range(len(flagged))), flagged  # the first m claims written, no gap
        for k in flagged:
            assert results[k]["matched_claim_text"] == NEW[k]  # its own claim, never a moved slot's
        assert results[-1]["flagged"] and results[-1]["matched_claim_id"] == "S03"
        assert results[-1]["matched_claim_text"] == GOLDFISH
        prefixes.add(len(flagged))
    assert len(prefixes) >= 3 and max(prefixes) == len(NEW)  # checks ran during the writes


def _metric(text: str, name: str) -> float:
    match = re.search(rf"^{re.escape(name)} ([0-9.e+]+)$", text, re.MULTILINE)
    assert match, name
    return float(match.group(1))


def test_concurrent_requests_are_micro_batched(db):
    """Sixteen clients at once, one text each: the runner's batches (its metrics) hold
    several requests' texts, far fewer batches than requests."""
    with TestClient(make_app(db, batch_window_ms=20.0, rate_limit="100000/minute")) as client:
        barrier = threading.Barrier(16)

        def one(i: int) -> bool:
            barrier.wait()
            for j in range(4):
                text = f"{GOLDFISH}, says post {i}-{j}" if (i + j) % 2 else f"The bakery opens at seven, day {i}-{j}"
                r = client.post("/v1/check", json={"text": text}, headers=auth())
                assert r.status_code == 200 and r.json()["results"][0]["flagged"] is bool((i + j) % 2)
            return True

        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=16) as pool:
            assert all(pool.map(one, range(16)))
        assert time.perf_counter() - started < 120
        metrics = client.get("/metrics").text
    batches = _metric(metrics, "misguard_check_batch_texts_count")
    texts = _metric(metrics, "misguard_check_batch_texts_sum")
    up_to_two = _metric(metrics, 'misguard_check_batch_texts_bucket{le="2.0"}')
    print(f"{batches:.0f} batches, {up_to_two:.0f} of them with at most 2 texts")
    assert texts == 64
    assert batches <= 32, f"{batches:.0f} batches for 64 concurrent requests: not micro-batched"
    assert up_to_two < batches  # at least one batch held more than two requests' texts
