"""Several writers on one claim store: handles in other processes (or the same one) whose
in-memory view is behind the disk must never lose a write."""

from __future__ import annotations

import multiprocessing

import numpy as np

from misguard.claims import ClaimStore, read_claims
from misguard.embed import get_embedder

from .conftest import SAMPLE, claim


def _writer(path: str, name: str, opened, go, rounds: int) -> None:
    """Open the store, wait until every writer has opened it, then add `rounds` claims one
    at a time (each `add` its own ingest)."""
    store = ClaimStore.open(path, get_embedder("hashing/256"))
    opened.wait()
    go.wait()
    for i in range(rounds):
        store.add([claim(f"{name}-{i}", f"writer {name} reports finding number {i} about {name} lighthouses")])
    store.close()


def test_two_processes_that_opened_the_store_first_both_keep_their_claims(store):
    """Both processes open the store before either writes; then they add claims turn about.
    Every `add` starts from an in-memory view the other process has made stale."""
    base = len(store)
    store.close()
    ctx = multiprocessing.get_context("spawn")
    opened, go = ctx.Barrier(3), ctx.Barrier(3)
    rounds = 6
    procs = [ctx.Process(target=_writer, args=(str(store.path), name, opened, go, rounds)) for name in ("a", "b")]
    for p in procs:
        p.start()
    opened.wait()
    go.wait()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    again = ClaimStore.open(store.path, get_embedder("hashing/256"))
    try:
        ids = {c.id for c in again.iter_claims()}
        wanted = {f"{n}-{i}" for n in ("a", "b") for i in range(rounds)}
        assert wanted <= ids and len(again) == base + 2 * rounds
        assert again.generation == 1 + 2 * rounds  # one generation per add, none skipped
        # Every slot's vector is its own claim's: the index was not built from a stale view.
        embedder = get_embedder("hashing/256")
        for cid in sorted(wanted):
            c = again.get(cid)
            vec = embedder.embed([c.text], "passage")[0]
            assert np.allclose(again.vectors[again.slot_of(cid)], vec, atol=1e-6)
        assert sorted(again.texts_of_slots(range(len(again)))) == list(range(len(again)))
    finally:
        again.close()


def test_a_stale_handle_sees_the_other_handles_claims_and_adds_its_own(tmp_path, embedder):
    first = ClaimStore.open(tmp_path / "db", embedder, create=True)
    second = ClaimStore.open(tmp_path / "db", embedder)
    first.add(read_claims(SAMPLE))
    report = second.add([claim("LATE", "A late claim that the moon is made of cheese")])
    assert report.added == 1
    assert len(second) == len(first) + 1 and second.get("S03") is not None
    assert second.get_slots([second.slot_of("S03")])[second.slot_of("S03")].id == "S03"
    # An update through the stale handle keeps the other handle's text changes elsewhere.
    first.add([claim("S03", "Goldfish have a memory of several months", "true")])
    second.add([claim("S05", first.get("S05").text + " (updated)")])
    first.close()
    second.close()
    reopened = ClaimStore.open(tmp_path / "db", embedder)
    assert reopened.get("S03").text == "Goldfish have a memory of several months"
    assert reopened.get("S05").text.endswith("(updated)") and reopened.get("LATE") is not None
    vec = embedder.embed(["Goldfish have a memory of several months"], "passage")[0]
    assert np.allclose(reopened.vectors[reopened.slot_of("S03")], vec, atol=1e-6)
    reopened.close()


def test_a_stale_handle_removes_what_the_disk_holds(tmp_path, embedder):
    first = ClaimStore.open(tmp_path / "db", embedder, create=True)
    first.add(read_claims(SAMPLE))
    second = ClaimStore.open(tmp_path / "db", embedder)
    first.add([claim("NEW", "A new claim about penguins flying south")])
    assert second.remove(["S01"]) == 1
    second.close()
    first.close()
    reopened = ClaimStore.open(tmp_path / "db", embedder)
    assert reopened.get("S01") is None and reopened.get("NEW") is not None
    slot = reopened.slot_of("NEW")
    vec = embedder.embed(["A new claim about penguins flying south"], "passage")[0]
    assert np.allclose(reopened.vectors[slot], vec, atol=1e-6)
    reopened.close()


def test_a_writer_that_commits_while_another_plans_is_caught_up_under_the_lock(tmp_path, embedder):
    """The second writer commits after the first one planned its write (outside the lock)
    and before it takes the lock: the first one plans again on the new generation."""
    first = ClaimStore.open(tmp_path / "db", embedder, create=True)
    first.add(read_claims(SAMPLE))
    second = ClaimStore.open(tmp_path / "db", embedder)
    raced: list[int] = []

    def topics_while_the_other_writes(vectors):
        if not raced:  # during the first plan only
            raced.append(second.add([claim("RACE", "A claim committed while the other writer planned")]).added)
        return [None] * len(vectors)

    report = first.add([claim("MINE", "The writer that planned first still adds its claim")],
                       assign_topics=topics_while_the_other_writes)
    assert raced == [1] and report.added == 1 and first.reloads == 1
    assert len(first) == 34 and first.generation == 3 and first.verify().ok
    for cid, text in (("RACE", "A claim committed while the other writer planned"),
                      ("MINE", "The writer that planned first still adds its claim")):
        vec = embedder.embed([text], "passage")[0]
        assert np.allclose(first.vectors[first.slot_of(cid)], vec, atol=1e-6)
    first.close()
    second.close()
