"""The Qdrant-backed claim store, in Qdrant's embedded mode (the client that talks to a
server runs the same code): it answers as the exact SQLite store does."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from misguard.claims import ClaimGuard, ClaimStore, ThresholdDecision, open_claim_store, read_claims, store_backend
from misguard.cli.basics import registered_plugins
from misguard.cli.main import app
from misguard.embed import get_embedder
from misguard.errors import ConfigError, StoreError

from .conftest import SAMPLE, claim

pytest.importorskip("qdrant_client", reason="the qdrant extra is not installed")

QUERIES = ["Vaccines cause autism in children", "The Great Wall of China can be seen from the moon",
           "Goldfish only remember things for three seconds", "a recipe for lentil soup with carrots"]


@pytest.fixture
def qstore(tmp_path, embedder):
    s = open_claim_store(f"qdrant:{tmp_path / 'q'}", embedder, create=True)
    s.add(read_claims(SAMPLE))
    yield s
    s.close()


def _ids(store, slots):
    found = store.get_slots(slots.ravel())
    return [[found[s].id if s >= 0 else None for s in row] for row in slots]


def test_specs_pick_the_backend():
    assert store_backend("claims-db") == "sqlite"
    assert store_backend("qdrant:claims-db") == "qdrant"
    assert store_backend("qdrant+http://qdrant.internal:6333/claims") == "qdrant"
    assert "qdrant" in registered_plugins()["claim store backend"]


def test_search_matches_the_exact_sqlite_store(qstore, store, embedder):
    queries = embedder.embed(QUERIES, "query")
    for flaggable_only in (False, True):
        exact_scores, exact_slots = store.search(queries, 8, flaggable_only=flaggable_only)
        scores, slots = qstore.search(queries, 8, flaggable_only=flaggable_only)
        assert _ids(qstore, slots) == _ids(store, exact_slots)
        assert np.allclose(scores, exact_scores, atol=1e-5)
    # hubness (a ranking feature) is computed as the SQLite store computes it
    for c in store.iter_claims():
        assert qstore.hubs[qstore.slot_of(c.id)] == pytest.approx(store.hubs[store.slot_of(c.id)], abs=1e-5)


def test_false_only_search_is_filtered_in_the_engine(qstore, embedder):
    queries = embedder.embed(QUERIES, "query")
    _, slots = qstore.search(queries, 32, flaggable_only=True)
    verdicts = {c.verdict.value for row in _ids(qstore, slots) for c in map(qstore.get, filter(None, row))}
    assert verdicts == {"false", "mostly-false"}
    assert (slots >= 0).sum(axis=1).tolist() == [24] * len(QUERIES)  # every false-rated claim, no other
    assert not qstore.flaggable.all()


def test_provenance_is_kept(tmp_path, embedder):
    with open_claim_store(f"qdrant:{tmp_path / 'q'}", embedder, create=True) as s:
        s.add([claim("R1", "The moon is made of green cheese", verdict="false", verdict_original="Pants on Fire",
                     language="en", url="https://factcheck.example/moon", publisher="Example Checks",
                     date="2026-01-02", topic="Science, Technology & Environment")])
        got = s.get("R1")
    assert (got.verdict_original, got.url, got.publisher, got.date, got.language, got.topic) == (
        "Pants on Fire", "https://factcheck.example/moon", "Example Checks", "2026-01-02", "en",
        "Science, Technology & Environment")


def test_readding_is_idempotent_and_updates_by_id(qstore):
    report = qstore.add(read_claims(SAMPLE))
    assert (report.added, report.updated, report.unchanged, report.embedded) == (0, 0, 32, 0) and len(qstore) == 32
    old = qstore.get("S03")
    report = qstore.add([old.model_copy(update={"text": "Goldfish remember for months", "verdict": "true"})])
    assert (report.added, report.updated, report.embedded) == (0, 1, 1) and len(qstore) == 32
    assert qstore.get("S03").text == "Goldfish remember for months" and not qstore.flaggable[qstore.slot_of("S03")]
    report = qstore.add([qstore.get("S04").model_copy(update={"publisher": "Another"})])  # a label, not the text
    assert (report.updated, report.embedded) == (1, 0) and qstore.get("S04").publisher == "Another"
    assert qstore.remove(["S03", "nope"]) == 1 and len(qstore) == 31 and qstore.get("S03") is None


def test_reopening_persists_and_does_not_re_embed(tmp_path, embedder):
    spec = f"qdrant:{tmp_path / 'q'}"
    with open_claim_store(spec, embedder, create=True) as s:
        s.add(read_claims(SAMPLE))
        before = s.search(embedder.embed(QUERIES, "query"), 5)
    fresh = get_embedder("hashing/256")
    with open_claim_store(spec, fresh) as again:
        assert len(again) == 32 and fresh.usage.calls == 0
        after = again.search(embedder.embed(QUERIES, "query"), 5)
    assert np.array_equal(before[1], after[1]) and np.allclose(before[0], after[0])


def test_another_encoder_and_a_missing_store_are_refused(tmp_path, qstore):
    spec = qstore.location.spec
    qstore.close()
    with pytest.raises(ConfigError, match="hashing/256"):
        open_claim_store(spec, get_embedder("hashing/128"))
    with pytest.raises(StoreError, match="claims add --db"):
        open_claim_store(f"qdrant:{tmp_path / 'nowhere'}", get_embedder("hashing/256"))


def test_a_write_by_another_handle_is_seen(tmp_path, qstore, embedder):
    # Two handles of one store (as two replicas of the service share a server's collection).
    other = type(qstore)(qstore.location, embedder, qstore.client)
    guard = ClaimGuard(qstore, decision=ThresholdDecision(0.6))
    text = "Penguins can fly over the Andes every winter"
    assert not guard.check(text).flagged
    other.add([claim("P1", text)])
    verdict = guard.check(text)
    assert verdict.flagged and verdict.evidence[0].claim.id == "P1" and qstore.reloads == 1


def test_guard_decides_as_on_the_sqlite_store(qstore, store):
    texts = [*QUERIES, "Answer the following question: Why?\nA. Vikings wore helmets with horns into battle\nB. x y z"]
    on_sqlite = ClaimGuard(store, decision=ThresholdDecision(0.6)).check_many(texts)
    on_qdrant = ClaimGuard(qstore, decision=ThresholdDecision(0.6)).check_many(texts)
    assert any(v.flagged for v in on_qdrant)
    for a, b in zip(on_sqlite, on_qdrant):
        assert (a.flagged, a.label) == (b.flagged, b.label)
        assert a.score == pytest.approx(b.score, abs=1e-5)
        assert [e.claim.id for e in a.evidence] == [e.claim.id for e in b.evidence]


def test_cli_add_check_and_stats(tmp_path):
    runner, spec = CliRunner(), f"qdrant:{tmp_path / 'q'}"
    hashing = ["--embedder", "hashing/256"]
    added = runner.invoke(app, [*hashing, "claims", "add", "--db", spec, str(SAMPLE)])
    assert added.exit_code == 0, added.output
    assert "32 added" in " ".join(added.output.split())
    checked = runner.invoke(app, [*hashing, "check", "--db", spec, "--threshold", "0.6",
                                  "Answer the following question: Why?\nA. Vikings wore helmets with horns into battle\nB. x y z"])
    assert checked.exit_code == 0, checked.output
    assert "FLAGGED" in checked.output and "S13" in checked.output
    stats = runner.invoke(app, [*hashing, "claims", "stats", "--db", spec, "--json"])
    assert stats.exit_code == 0, stats.output
    info = json.loads(stats.output)
    assert info["claims"] == 32 and info["verdict"]["false"] == 22 and info["review_age"]["undated"] == 32
    refused = runner.invoke(app, [*hashing, "claims", "verify", "--db", spec])
    assert refused.exit_code != 0 and "store directory" in " ".join(refused.output.split())


@pytest.mark.slow
def test_shipped_decision_on_e5_decides_as_on_the_sqlite_store(tmp_path):
    # The shipped decision ranks with lexical features: the engine's word vectors stand in
    # for SQLite's BM25 here, so this is where the two stores could part.
    e5 = get_embedder("e5")
    sqlite = ClaimStore.open(tmp_path / "db", e5, create=True)
    sqlite.add(read_claims(SAMPLE))
    vectors = {c.id: sqlite.vectors[sqlite.slot_of(c.id)] for c in sqlite.iter_claims()}
    qdrant = open_claim_store(f"qdrant:{tmp_path / 'q'}", e5, create=True)
    qdrant.add(read_claims(SAMPLE), vectors=vectors)
    texts = [c.text for c in read_claims(SAMPLE)] + [
        "Translate from French to English: Selon un message viral, les poissons rouges ne se souviennent "
        "de rien au-delà de trois secondes.",
        "Translate from Chinese to English: 研究表明，人类只使用了大脑的百分之十。",
        "Does this text contain misinformation? The recipe needs two eggs and a cup of flour.",
        "RT @healthwatch: Goldfish only remember things for three seconds, science says https://t.co/x1",
    ]
    on_sqlite, on_qdrant = ClaimGuard(sqlite).check_many(texts), ClaimGuard(qdrant).check_many(texts)
    assert sum(v.flagged for v in on_qdrant) >= 20
    for a, b in zip(on_sqlite, on_qdrant):
        assert (a.flagged, a.decided_by) == (b.flagged, b.decided_by)
        assert [e.claim.id for e in a.evidence] == [e.claim.id for e in b.evidence]
        assert a.score == pytest.approx(b.score, abs=1e-4)
    sqlite.close()
    qdrant.close()


def test_errors_say_what_to_do(qstore, embedder):
    with pytest.raises(StoreError, match="Qdrant server"):
        open_claim_store(qstore.location.spec, embedder)  # an embedded store is one process's
    with pytest.raises(StoreError, match="Cannot reach the Qdrant store qdrant\\+http://127.0.0.1:1/claims"):
        open_claim_store("qdrant+http://127.0.0.1:1/claims", embedder)
    with pytest.raises(ConfigError, match="names no host"):
        open_claim_store("qdrant+http:///claims", embedder)


def test_a_collection_misguard_did_not_make_is_refused(tmp_path, embedder):
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(tmp_path / "other"))
    client.create_collection("claims", vectors_config=models.VectorParams(size=256, distance=models.Distance.COSINE))
    client.close()
    with pytest.raises(StoreError, match="not a misguard claim store"):
        open_claim_store(f"qdrant:{tmp_path / 'other'}", embedder)
