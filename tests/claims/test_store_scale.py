"""The approximate index of a large claim store (here made large by lowering the threshold):
persisted per generation, added to without a rebuild, searched with exact scores, and an
add that computes hubness only for what it adds."""

from __future__ import annotations

import numpy as np
import pytest

from misguard.claims import ClaimGuard, ClaimStore, ThresholdDecision, read_claims
from misguard.claims._storage import hubness
from misguard.errors import ConfigError

from .conftest import SAMPLE, claim

DIM = 64


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _add(store: ClaimStore, prefix: str, vectors: np.ndarray, verdict=lambda i: "false") -> None:
    claims = [claim(f"{prefix}{i}", f"{prefix} statement number {i}", verdict(i)) for i in range(len(vectors))]
    store.add(claims, vectors={c.id: v for c, v in zip(claims, vectors)})


@pytest.fixture
def small_threshold(monkeypatch):
    monkeypatch.setattr(ClaimStore, "ann_threshold", 60)


@pytest.fixture
def hashing64():
    from misguard.embed import get_embedder

    return get_embedder("hashing/64")


def test_a_store_past_the_threshold_keeps_an_approximate_index_per_generation(tmp_path, hashing64, small_threshold):
    rng = np.random.default_rng(0)
    with ClaimStore.open(tmp_path / "db", hashing64, create=True) as store:
        _add(store, "a", _unit(rng, 50))
        assert store.stats()["approximate_index"] is None  # below the threshold: exact only
        assert not list((tmp_path / "db").glob("ann-*"))
        _add(store, "b", _unit(rng, 30))
        assert store.stats()["approximate_index"] == "usearch"
        assert [p.name for p in (tmp_path / "db").glob("ann-*")] == [f"ann-{store.generation}.usearch"]
        base = store.generation
        _add(store, "c", _unit(rng, 5))  # a delta beside the base: the index is not written again
        assert store.layout.base == base and store.generation == base + 1
        assert sorted(p.name for p in (tmp_path / "db").glob("ann-*")) == [f"ann-{base}.usearch"]
        assert sorted(p.name for p in (tmp_path / "db").glob("*.npy")) == sorted(
            [f"index-{base}.npy", f"topics-{base + 1}.npy", f"hubs-{base + 1}.npy", f"delta-{base + 1}.npy",
             f"deltaslots-{base + 1}.npy"])
        assert store.verify(sample=0).ok
    with ClaimStore.open(tmp_path / "db", hashing64) as again:
        assert again.stats()["approximate_index"] == "usearch" and len(again) == 85


def test_approximate_search_returns_exact_scores_and_honours_flaggable_only(tmp_path, hashing64, small_threshold):
    rng = np.random.default_rng(1)
    path = tmp_path / "db"
    with ClaimStore.open(path, hashing64, create=True) as store:
        _add(store, "a", _unit(rng, 200), verdict=lambda i: "false" if i % 3 == 0 else "true")
    queries = _unit(rng, 20)
    with ClaimStore.open(path, hashing64) as approx, ClaimStore.open(path, hashing64, index="exact") as exact:
        assert approx.stats()["approximate_index"] == "usearch" and exact.stats()["approximate_index"] is None
        for flaggable in (False, True):
            got_scores, got = approx.search(queries, 5, flaggable_only=flaggable)
            want_scores, want = exact.search(queries, 5, flaggable_only=flaggable)
            # Every slot found is scored as exact search scores it, best first.
            np.testing.assert_allclose(got_scores, np.take_along_axis(queries @ approx.vectors.T, got, axis=1), rtol=1e-5)
            assert (np.diff(got_scores, axis=1) <= 1e-7).all()
            # The graph holds 8-bit vectors and is built on several threads, so on these random
            # vectors (near neighbours a few hundredths apart) a neighbour can rank just outside
            # the candidates it returns: nearly all are found, not always every one.
            recall = np.mean([len(set(g) & set(w)) / len(w) for g, w in zip(got, want)])
            assert recall >= 0.95, recall
            if flaggable:
                assert approx.flaggable[got].all()


def test_changed_and_removed_claims_reach_the_approximate_index(tmp_path, hashing64, small_threshold):
    rng = np.random.default_rng(2)
    with ClaimStore.open(tmp_path / "db", hashing64, create=True) as store:
        vectors = _unit(rng, 100)
        _add(store, "a", vectors)
        moved = _unit(rng, 1)[0]
        store.add([claim("a7", "a statement that changed")], vectors={"a7": moved})
        assert store.search(moved, 1)[1][0, 0] == store.slot_of("a7")
        assert store.remove(["a0", "a1"]) == 2  # slots move down: the index is made anew
        assert store.search(moved, 1)[1][0, 0] == store.slot_of("a7")
        assert store.search(vectors[50], 1)[1][0, 0] == store.slot_of("a50")


def test_another_handle_sees_the_index_a_writer_added_to(tmp_path, hashing64, small_threshold):
    rng = np.random.default_rng(3)
    with ClaimStore.open(tmp_path / "db", hashing64, create=True) as writer:
        _add(writer, "a", _unit(rng, 80))
        with ClaimStore.open(tmp_path / "db", hashing64) as reader:
            new = _unit(rng, 1)
            _add(writer, "late", new)
            assert reader.refresh()
            assert reader.search(new, 1)[1][0, 0] == reader.slot_of("late0")


def test_a_missing_approximate_index_falls_back_to_exact_search_and_the_next_write_makes_it(
        tmp_path, hashing64, small_threshold, caplog):
    rng = np.random.default_rng(4)
    with ClaimStore.open(tmp_path / "db", hashing64, create=True) as store:
        _add(store, "a", _unit(rng, 80))
        generation = store.generation
    (tmp_path / "db" / f"ann-{generation}.usearch").unlink()
    with ClaimStore.open(tmp_path / "db", hashing64) as store:
        assert store.stats()["approximate_index"] is None
        assert "searching exactly" in caplog.text
        assert not store.verify(sample=0).ok  # verify names the missing file
        _add(store, "b", _unit(rng, 1))
        assert store.stats()["approximate_index"] == "usearch"


def test_hubness_of_a_large_store_is_computed_for_the_added_claims_only(tmp_path, hashing64, monkeypatch):
    import misguard.claims._store_write as writes

    monkeypatch.setattr(writes, "HUBNESS_REFERENCE", 40)
    rng = np.random.default_rng(5)
    with ClaimStore.open(tmp_path / "db", hashing64, create=True) as store:
        _add(store, "a", _unit(rng, 30))
        np.testing.assert_allclose(store.hubs, hubness(store.vectors))  # small: every claim again
        _add(store, "b", _unit(rng, 20))  # past 40 claims
        before = store.hubs.copy()
        _add(store, "c", _unit(rng, 3))
        np.testing.assert_array_equal(store.hubs[:50], before)  # the others keep theirs
        fresh = hubness(store.vectors)  # the added claims: as a full computation gives them
        np.testing.assert_allclose(store.hubs[50:], fresh[50:], rtol=1e-5)


def test_verdicts_on_a_small_store_do_not_change_with_the_index_mode(tmp_path, embedder):
    """Below the threshold `auto` is exact search; `approximate` finds the same claims."""
    texts = ["The city of Oslo banned umbrellas in every public park", "vaccines contain microchips",
             "The moon landing was staged in a studio"]
    with ClaimStore.open(tmp_path / "db", embedder, create=True) as store:
        store.add(read_claims(SAMPLE))
    verdicts = {}
    for mode in ("auto", "approximate", "exact"):
        with ClaimStore.open(tmp_path / "db", embedder, index=mode) as store:
            guard = ClaimGuard(store, decision=ThresholdDecision(0.6))
            verdicts[mode] = [(v.flagged, round(v.score, 5)) for v in map(guard.check, texts)]
    assert verdicts["auto"] == verdicts["approximate"] == verdicts["exact"]


def test_an_unknown_index_mode_is_refused(tmp_path, embedder):
    with pytest.raises(ConfigError, match="auto, exact, approximate"):
        ClaimStore.open(tmp_path / "db", embedder, create=True, index="fast")


def test_the_e5_runtime_loads_after_the_approximate_index(tmp_path):
    """usearch's compiled module loaded before onnxruntime crashed the process on import."""
    import subprocess
    import sys

    pytest.importorskip("onnxruntime")
    code = ("from misguard.claims._ann import AnnIndex; import numpy as np; "
            "AnnIndex.build('usearch', np.eye(4, dtype=np.float32)); import onnxruntime; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-500:]


@pytest.fixture
def small_delta(monkeypatch, small_threshold):
    monkeypatch.setattr(ClaimStore, "delta_limit", 12)


def test_small_adds_write_a_delta_searched_exactly_and_merged_past_its_limit(tmp_path, hashing64, small_delta):
    rng = np.random.default_rng(5)
    path = tmp_path / "db"
    with ClaimStore.open(path, hashing64, create=True) as store:
        _add(store, "a", _unit(rng, 80))
        base = store.generation
        assert not store.layout.has_delta and len(store.delta_slots) == 0
        added = _unit(rng, 10)
        for i in range(10):  # one claim per add: each a delta generation over the same base
            _add(store, f"d{i}-", added[i : i + 1])
        assert store.layout.base == base and list(store.delta_slots) == list(range(80, 90))
        # Every delta claim is found, as the nearest to its own vector, by the approximate search.
        scores, slots = store.search(added, 3)
        assert list(slots[:, 0]) == list(range(80, 90)) and np.allclose(scores[:, 0], 1.0, atol=1e-5)
        # A changed text's new vector replaces the base's one in the delta (the base index keeps the old).
        changed = _unit(rng, 1)
        old = store.get_slots([3])[3]
        store.add([old.model_copy(update={"text": old.text + " (revised)"})], vectors={old.id: changed[0]})
        assert 3 in store.delta_slots and store.search(changed, 1)[1][0, 0] == 3
        assert store.verify(sample=0).ok
        with ClaimStore.open(path, hashing64) as again, ClaimStore.open(path, hashing64, index="exact") as exact:
            assert again.layout == store.layout and list(again.delta_slots) == list(store.delta_slots)
            # The base is mapped copy-on-write with the delta laid over its spare rows.
            assert isinstance(again.vectors.base, np.memmap) and np.array_equal(again.vectors, store.vectors)
            queries = _unit(rng, 20)
            assert np.array_equal(again.search(queries, 5)[1], exact.search(queries, 5)[1])
            _add(again, "e", _unit(rng, 1))  # into the mapping's spare rows; the file stays as written
            assert again.verify(sample=0).ok and len(again) == 91
        store.refresh()
        # Past the limit the delta joins the base: index and approximate index written whole.
        _add(store, "m", _unit(rng, 3))
        assert not store.layout.has_delta and store.layout.base == store.generation and len(store) == 94
        assert sorted(p.name for p in path.glob("*")) == sorted(
            ["claims.sqlite"] + [f"{k}-{store.generation}.npy" for k in ("index", "topics", "hubs")]
            + [f"ann-{store.generation}.usearch"])
        assert store.search(changed, 1)[1][0, 0] == 3 and store.verify(sample=0).ok


def test_a_delta_write_that_died_before_its_commit_leaves_the_store_as_it_was(tmp_path, hashing64, small_delta,
                                                                            monkeypatch):
    rng = np.random.default_rng(6)
    path = tmp_path / "db"
    with ClaimStore.open(path, hashing64, create=True) as store:
        _add(store, "a", _unit(rng, 80))
        _add(store, "d", _unit(rng, 2))
        layout = store.layout

        def dies(*args, **kwargs):
            raise KeyboardInterrupt

        # The delta files are written, then the process dies before its rows commit.
        monkeypatch.setattr("misguard.claims._store_write._set_meta", dies)
        with pytest.raises(KeyboardInterrupt):
            _add(store, "x", _unit(rng, 1))
        monkeypatch.undo()
    with ClaimStore.open(path, hashing64) as again:
        assert again.layout == layout and len(again) == 82 and again.get("x0") is None
        assert again.verify(sample=0).ok



def test_the_same_query_searched_twice_walks_the_graph_once(monkeypatch):
    from misguard.claims._ann import AnnIndex

    rng = np.random.default_rng(7)
    index = AnnIndex.build("usearch", _unit(rng, 200))
    walks = []
    real = index._impl.search
    monkeypatch.setattr(index._impl, "search", lambda *a, **kw: walks.append(1) or real(*a, **kw))
    query = _unit(rng, 1)
    first = index.search(query, 10)
    assert np.array_equal(index.search(query, 10), first) and len(walks) == 1
    index.search(_unit(rng, 1), 10)  # another query walks again
    index.add(np.array([500]), query)  # so does the same query once the graph changed
    again = index.search(query, 10)
    assert len(walks) == 3 and again[0, 0] == 500


def test_a_whole_write_leaves_room_for_later_deltas_even_when_told_to_make_none(tmp_path, hashing64,
                                                                               small_threshold, monkeypatch):
    rng = np.random.default_rng(8)
    path = tmp_path / "db"
    with ClaimStore.open(path, hashing64, create=True) as store:
        _add(store, "a", _unit(rng, 80))
        monkeypatch.setattr(ClaimStore, "delta_limit", 0)
        _add(store, "w", _unit(rng, 1))
        assert not store.layout.has_delta and store.layout.spare > 0
        monkeypatch.undo()
        monkeypatch.setattr(ClaimStore, "ann_threshold", 60)
        _add(store, "d", _unit(rng, 1))
        assert store.layout.has_delta
    with ClaimStore.open(path, hashing64) as again:  # the delta lies over the mapping's spare rows
        assert isinstance(again.vectors.base, np.memmap) and len(again) == 82
