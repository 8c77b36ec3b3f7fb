"""`verify_store` / `ClaimStore.verify` and the rebuild of a broken vector index."""

from __future__ import annotations

import logging
import sqlite3

import numpy as np
import pytest

from misguard.claims import ClaimGuard, ClaimStore, ThresholdDecision, read_claims, verify_store
from misguard.embed import get_embedder
from misguard.errors import StoreError

from .conftest import SAMPLE, claim

GUM = "Swallowed chewing gum stays in your stomach for seven years"


def failed(report) -> set[str]:
    return {c.name for c in report.problems}


def index_file(store, kind="index"):
    return store.path / f"{kind}-{store.generation}.npy"


def finds_the_gum_claim(path) -> bool:
    with ClaimStore.open(path, get_embedder("hashing/256")) as again:
        verdict = ClaimGuard(again, decision=ThresholdDecision(0.6)).check(GUM)
        return verdict.flagged and verdict.evidence[0].claim.text.startswith("Swallowed chewing gum")


def test_a_sound_store_passes_every_check(store):
    report = store.verify()
    assert report.ok, report.problems
    assert [c.name for c in report.checks] == ["sqlite", "meta", "slots", "lexical", "files", "checksums", "vectors",
                                               "sample", "leftovers"]
    assert report.claims == len(store) and report.generation == store.generation and not report.repaired


def test_a_missing_index_is_rebuilt_on_open_with_a_warning(store, caplog):
    path, n = store.path, len(store)
    store.close()
    (path / f"index-{store.generation}.npy").unlink()
    assert failed(verify_store(path, get_embedder("hashing/256"))) == {"files"}
    with caplog.at_level(logging.WARNING, logger="misguard.claims"):
        with ClaimStore.open(path, get_embedder("hashing/256")) as again:
            assert len(again) == n and again.generation == store.generation + 1
    assert "missing" in caplog.text and "rebuilding" in caplog.text
    assert verify_store(path, get_embedder("hashing/256")).ok and finds_the_gum_claim(path)


def test_a_stale_index_is_rebuilt_on_open(store):
    old = np.load(index_file(store))
    store.add([claim("NEW", "A new claim that owls can turn their heads all the way round")])
    np.save(index_file(store), old)  # a copy of the previous generation's index put back
    path = store.path
    store.close()
    report = verify_store(path, get_embedder("hashing/256"))
    assert "files" in failed(report) and "stale" in report.problems[0].detail
    with ClaimStore.open(path, get_embedder("hashing/256")) as again:
        assert again.vectors.shape[0] == again.stats()["claims"]
        assert again.verify().ok


def test_a_corrupt_index_is_refused_on_open_and_repaired_by_verify(store):
    path = store.path
    index_file(store).write_bytes(b"garbage")
    store.close()
    with pytest.raises(StoreError, match="verify --db .* --repair"):
        ClaimStore.open(path, get_embedder("hashing/256"))
    report = verify_store(path, get_embedder("hashing/256"), repair=True)
    assert report.ok and report.repaired == ["files"]
    assert finds_the_gum_claim(path)


def test_flipped_bytes_inside_a_valid_index_are_detected(store):
    """A valid .npy of the right shape whose numbers changed: only the checksum and the
    re-embedded sample can tell."""
    data = bytearray(index_file(store).read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = bytes(64)
    index_file(store).write_bytes(bytes(data))
    report = store.verify(sample=len(store))
    assert {"checksums", "sample"} <= failed(report) or {"checksums", "vectors"} <= failed(report)
    repaired = store.verify(repair=True)
    assert repaired.ok and "checksums" in repaired.repaired
    assert np.allclose(np.linalg.norm(store.vectors, axis=1), 1.0, atol=1e-3)


def test_an_index_of_other_records_fails_the_sample(tmp_path, store, embedder):
    """Same shape, right checksum (written by a store), wrong claims: the sample catches it."""
    other = ClaimStore.open(tmp_path / "other", embedder, create=True)
    other.add([claim(f"O{i}", f"unrelated claim number {i} about harbours and tides") for i in range(len(store))])
    for kind in ("index", "topics", "hubs"):
        index_file(store, kind).write_bytes(index_file(other, kind).read_bytes())
    con = sqlite3.connect(store.path / "claims.sqlite")
    checksums = con.execute("SELECT value FROM meta WHERE key = 'checksums'").fetchone()
    con.close()
    other_sums = sqlite3.connect(other.path / "claims.sqlite").execute(
        "SELECT value FROM meta WHERE key = 'checksums'").fetchone()
    assert checksums != other_sums
    report = store.verify()
    assert "sample" in failed(report)
    other.close()


def test_a_damaged_lexical_index_is_found_and_repaired(store):
    con = sqlite3.connect(store.path / "claims.sqlite")
    con.execute("DELETE FROM claims_fts WHERE rowid = 3")
    con.commit()
    con.close()
    assert failed(store.verify()) == {"lexical"}
    assert store.verify(repair=True).ok
    assert store.lexical_search(store.get_slots([3])[3].text, 1)[0][0] == 3


def test_unit_length_and_topic_checks(tmp_path, embedder):
    s = ClaimStore.open(tmp_path / "norms", embedder, create=True)
    s.add([claim("A", "first claim"), claim("B", "second claim")], vectors={"A": 2 * np.eye(2, embedder.dim)[0], "B": np.eye(2, embedder.dim)[1]})
    report = s.verify(sample=0)
    assert failed(report) == {"vectors"} and "unit length" in report.problems[0].detail
    s.close()


def test_leftovers_are_reported_and_swept(store):
    (store.path / "index-999.npy").write_bytes(b"x")
    (store.path / "hubs-1.tmp").write_bytes(b"x")
    report = store.verify()
    leftovers = next(c for c in report.checks if c.name == "leftovers")
    assert report.ok and "2 files" in leftovers.detail
    assert store.verify(repair=True).repaired == ["leftovers"]
    assert sorted(p.name for p in store.path.iterdir()) == sorted(
        ["claims.sqlite"] + [f"{k}-{store.generation}.npy" for k in ("index", "topics", "hubs")])


def test_damage_inside_sqlite_is_reported_and_not_papered_over(store):
    path = store.path
    store.close()
    db = path / "claims.sqlite"
    data = bytearray(db.read_bytes())
    page = 4096
    # Zero the second half of the file's pages past the header: b-tree pages of the tables.
    for start in range(2 * page, len(data), 2 * page):
        data[start + 100 : start + 400] = bytes(300)
    db.write_bytes(bytes(data))
    report = verify_store(path, get_embedder("hashing/256"))
    assert "sqlite" in failed(report) and "out of order" in report.problems[0].detail
    with pytest.raises(StoreError, match="restore a backup"):
        verify_store(path, get_embedder("hashing/256"), repair=True)


def test_consistent_reads_run_again_when_a_writer_committed_meanwhile(store, embedder):
    other = ClaimStore.open(store.path, embedder)
    calls: list[int] = []
    drops: list[int] = []

    def read() -> int:
        calls.append(store.generation)
        if len(calls) == 1:  # another handle writes while the first read runs
            other.add([claim("MID", "A claim written in the middle of a read")])
        return len(store)

    n = store.consistent(read, on_reload=lambda: drops.append(1))
    assert n == len(other) and calls == [store.generation - 1, store.generation] and drops == [1]
    other.close()


def test_a_guard_follows_writes_of_another_handle(store, embedder):
    guard = ClaimGuard(store, decision=ThresholdDecision(0.6))
    text = "Koalas drink litres of water every day from rivers and lakes"
    assert guard.check(text).flagged is False
    with ClaimStore.open(store.path, embedder) as other:
        other.add([claim("KOALA", text)])
        other.remove(["S01"])  # slots move: an old index read with new rows would mismatch
    verdict = guard.check(text)
    assert verdict.flagged and verdict.evidence[0].claim.id == "KOALA" and store.reloads == 1
    gum = guard.check(GUM)
    assert gum.flagged and gum.evidence[0].claim.text.startswith("Swallowed chewing gum")


def test_rebuild_renumbers_slots_with_gaps(store):
    path = store.path
    store.close()
    con = sqlite3.connect(path / "claims.sqlite")
    con.execute("UPDATE claims SET slot = slot + 100 WHERE slot >= 5")
    con.commit()
    con.close()
    report = verify_store(path, get_embedder("hashing/256"))
    assert "slots" in failed(report)
    assert verify_store(path, get_embedder("hashing/256"), repair=True).ok
    assert finds_the_gum_claim(path)


def test_every_sample_claim_can_be_reingested_after_a_rebuild(tmp_path, embedder):
    s = ClaimStore.open(tmp_path / "r", embedder, create=True)
    s.add(read_claims(SAMPLE))
    (s.path / f"topics-{s.generation}.npy").unlink()
    s.close()
    again = ClaimStore.open(tmp_path / "r", embedder)
    report = again.add(read_claims(SAMPLE))
    assert (report.added, report.updated, report.embedded) == (0, 0, 0) and again.verify().ok
    again.close()


def test_a_read_that_fails_because_a_removal_moved_the_slots_is_run_again(store, embedder):
    other = ClaimStore.open(store.path, embedder)
    calls: list[int] = []

    def read() -> list[str]:
        slots = range(len(store))  # as the index in memory has them
        calls.append(len(slots))
        if len(calls) == 1:
            other.remove(["S01"])  # meanwhile every later slot moves down: the last one is gone
        claims = store.get_slots(slots)
        return [claims[s].id for s in slots]  # KeyError on the first run

    ids = store.consistent(read)
    assert calls == [32, 31] and "S01" not in ids and len(ids) == 31
    with pytest.raises(KeyError):  # a failure with no write behind it is the caller's
        store.consistent(lambda: store.get_slots([10_000])[10_000])
    other.close()


def test_a_write_through_the_guards_own_store_handle_drops_its_cached_verdicts(store):
    guard = ClaimGuard(store, decision=ThresholdDecision(0.6))
    text = "Hedgehogs can climb tall trees to escape from foxes at night"
    assert guard.check(text).flagged is False
    store.add([claim("HEDGEHOG", text)])
    verdict = guard.check(text)
    assert verdict.flagged and "cache" not in verdict.stages
