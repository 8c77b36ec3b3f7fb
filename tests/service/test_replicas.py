"""Two `misguard serve` processes on one store directory, both ingesting (POST /v1/claims)
and removing claims while both answer checks: no write is lost, and every answer comes
from one state of the store."""

from __future__ import annotations

import itertools
import threading
import time

import httpx
import pytest

from misguard.claims import ClaimStore, read_claims, verify_store
from misguard.embed import get_embedder
from misguard.service import ServiceProcess

from .conftest import HASHING, SAMPLE

pytestmark = pytest.mark.slow

# Words no other claim (or sample claim) uses: with hashing embeddings each text is close
# to its own claim only.
_WORDS = ["zarquon", "blivet", "quuxite", "flimbar", "grottle", "wexford", "plonkite", "snerdle", "vorpal", "jabber",
          "frumious", "tulgey", "borogove", "mimsy", "slithy", "outgrabe", "bandersnatch", "callooh", "uffish", "manxome",
          "brillig", "gimble", "wabe", "chortle", "galumph", "burble", "frabjous", "toves", "raths", "snicker",
          "vorpalite", "jubjub"]
NEW = {f"{side}{i}": f"{_WORDS[2 * k].capitalize()} {_WORDS[2 * k + 1]} {side}{i}z {_WORDS[2 * k]}{i}x {_WORDS[2 * k + 1]}{side}q"
       for k, (side, i) in enumerate(itertools.product("ab", range(8)))}
#: Sample claims removed while checks run (their slots move every later claim's slot).
REMOVED = ["S01", "S02", "S04", "S06"]
#: Sample claims that stay: always flagged, always with their own text.
KEPT = ("S03", "S09")


def review(text: str) -> dict:
    return {"@type": "ClaimReview", "claimReviewed": text, "reviewRating": {"alternateName": "False"}}


def test_two_replicas_ingest_remove_and_check_at_once(tmp_path):
    db = tmp_path / "db"
    with ClaimStore.open(db, get_embedder(None, HASHING), create=True) as store:
        store.add(read_claims(SAMPLE))
        sample_texts = {c.id: c.text for c in store.iter_claims()}
    kept = {sample_texts[cid]: cid for cid in KEPT}
    args = ["--threshold", "0.6", "--rate-limit", "100000/minute"]
    replicas = [ServiceProcess(db, tmp_path / f"{name}.log", embedder=HASHING.model, extra_args=args, admin=True)
                for name in ("a", "b")]
    for r in replicas:
        r.start()
    try:
        texts = list(NEW.values()) + list(kept)
        answers: list[tuple[int, list[dict]]] = []
        acknowledged: list[str] = []
        errors: list[str] = []
        writing = threading.Event()
        writing.set()

        def write(side: str, replica: ServiceProcess) -> None:
            try:
                for i in range(8):
                    replica.post("/v1/claims", [review(NEW[f"{side}{i}"])])
                    acknowledged.append(f"{side}{i}")
                    if side == "a" and i % 2 == 0:
                        cid = REMOVED[i // 2]
                        response = httpx.delete(f"{replica.url}/v1/claims/{cid}", timeout=120,
                                                headers={"Authorization": f"Bearer {replica.key}"})
                        assert response.status_code == 200, response.text
            except Exception as exc:  # noqa: BLE001 - the test reports it
                errors.append(f"writer {side}: {exc}")

        def check(replica_index: int) -> None:
            replica = replicas[replica_index]
            while writing.is_set():
                try:
                    answers.append((replica_index, replica.check_texts(texts)))
                except Exception as exc:  # noqa: BLE001 - the test reports it
                    errors.append(f"checker {replica_index}: {exc}")
                time.sleep(0.01)

        writers = [threading.Thread(target=write, args=(side, replicas[k])) for k, side in enumerate("ab")]
        checkers = [threading.Thread(target=check, args=(k % 2,)) for k in range(4)]
        for t in checkers + writers:
            t.start()
        for t in writers:
            t.join(timeout=600)
        time.sleep(1.0)  # a few more checks of the final state
        writing.clear()
        for t in checkers:
            t.join(timeout=600)
        assert not errors, errors
        final = [replica.check_texts(texts) for replica in replicas]
    finally:
        for r in replicas:
            r.stop()

    # No write lost: every acknowledged claim is in the store, every removal happened.
    assert sorted(acknowledged) == sorted(NEW)
    with ClaimStore.open(db, get_embedder(None, HASHING)) as store:
        stored = {c.text: c.id for c in store.iter_claims()}
        assert set(NEW.values()) <= set(stored) and not any(store.get(cid) for cid in REMOVED)
        assert len(store) == len(sample_texts) - len(REMOVED) + len(NEW)
        assert store.generation == 1 + len(NEW) + len(REMOVED)
    assert verify_store(db, get_embedder(None, HASHING)).ok

    # Every answer is one state's: what it flagged among the new claims is what the store
    # held at some moment, so those sets form a chain, and each replica's own writes appear
    # in the order it made them; every match names a claim with its own text.
    assert len(answers) >= 20
    seen = []
    for _, results in answers + [(0, final[0]), (1, final[1])]:
        flagged = set()
        for text, result in zip(texts, results):
            if text in kept:
                assert result["flagged"] and result["matched_claim_id"] == kept[text], result
                assert result["matched_claim_text"] == text
                continue
            if result["flagged"]:
                assert result["matched_claim_text"] == text, result  # never another slot's claim
                assert stored[text] == result["matched_claim_id"]
                flagged.add(next(k for k, v in NEW.items() if v == text))
        for side in "ab":
            mine = sorted(int(k[1:]) for k in flagged if k[0] == side)
            assert mine == list(range(len(mine))), (side, mine)
        seen.append(frozenset(flagged))
    for x, y in itertools.combinations(set(seen), 2):
        assert x <= y or y <= x, (sorted(x), sorted(y))
    assert seen[-1] == seen[-2] == frozenset(NEW)  # both replicas serve the final state
