import numpy as np
import pytest

from misguard.claims import TOPICS, ClaimStore, read_claims
from misguard.embed import get_embedder
from misguard.errors import ConfigError, EmbeddingError, StoreError

from .conftest import SAMPLE, claim


def test_missing_store_is_a_clear_error(tmp_path, embedder):
    with pytest.raises(StoreError, match="claims add --db"):
        ClaimStore.open(tmp_path / "nowhere", embedder)


def test_reingest_updates_by_id_never_duplicates(store):
    n = len(store)
    report = store.add(read_claims(SAMPLE))
    assert (report.added, report.updated, report.embedded) == (0, 0, 0) and len(store) == n
    old = store.get("S03")
    report = store.add([old.model_copy(update={"text": "Goldfish remember for months", "verdict": "true"})])
    assert (report.added, report.updated, report.embedded) == (0, 1, 1) and len(store) == n
    assert store.get("S03").text == "Goldfish remember for months"
    assert store.stats()["claims"] == n


def test_reingest_without_topics_keeps_assigned_topics(tmp_path, embedder):
    # The bench re-ingests LIAR/Snopes rows (no topic) into a store whose topics the topic
    # agent assigned; that used to reset them all to "unassigned".
    store = ClaimStore.open(tmp_path / "s", embedder, create=True)
    bare = [claim(f"T{i}", f"claim number {i} about the moon and taxes") for i in range(3)]
    store.add(bare, assign_topics=lambda vectors: [TOPICS[2]] * len(vectors))
    assert {store.get(c.id).topic for c in bare} == {TOPICS[2]}
    report = store.add(bare)
    assert (report.updated, report.unchanged, report.embedded) == (0, 3, 0)
    assert {store.get(c.id).topic for c in bare} == {TOPICS[2]}
    assert set(store.topic_ids.tolist()) == {2}
    store.add([bare[0].model_copy(update={"topic": TOPICS[4]})])  # an explicit topic still wins
    assert store.get("T0").topic == TOPICS[4] and store.topic_ids[store.slot_of("T0")] == 4
    store.close()


def test_reopening_does_not_re_embed(tmp_path, store):
    fresh = get_embedder("hashing/256")
    again = ClaimStore.open(store.path, fresh)
    assert len(again) == len(store) and fresh.usage.calls == 0
    assert np.allclose(again.vectors, store.vectors)
    again.close()


def test_other_embedder_is_refused(store):
    with pytest.raises(ConfigError, match="hashing/256"):
        ClaimStore.open(store.path, get_embedder("hashing/128"))


def test_search_finds_the_exact_claim_and_respects_topics(store, embedder):
    target = store.get("S13")
    vec = embedder.embed(target.text, "query")
    scores, slots = store.search(vec, 3)
    assert store.get_slots([slots[0, 0]])[slots[0, 0]].id == "S13"
    other = [t for t in TOPICS if t != target.topic][:2]
    _, slots = store.search(vec, 3, topics=[other])
    found = store.get_slots(slots[0])
    assert all(c.topic in other for c in found.values())


def test_flaggable_only_skips_true_claims(store, embedder):
    vec = embedder.embed(store.get("S22").text, "query")  # a TRUE claim
    _, slots = store.search(vec, 40, flaggable_only=True)
    ids = {c.id for c in store.get_slots(slots[0]).values()}
    assert "S22" not in ids and ids


class _Failing:
    """Wraps an embedder and fails on demand, to test atomic ingest."""

    def __init__(self, inner):
        self.inner, self.spec, self.dim = inner, inner.spec, inner.dim

    def embed(self, texts, kind="passage"):
        raise EmbeddingError("boom")


def test_failed_embedding_leaves_the_store_untouched(store):
    before = (len(store), store.generation, store.stats())
    store.embedder = _Failing(store.embedder)
    with pytest.raises(EmbeddingError):
        store.add([claim("X1", "brand new claim")])
    assert (len(store), store.generation, store.stats()) == before
    files = sorted(p.name for p in store.path.iterdir())
    assert files == sorted(["claims.sqlite"] + [f"{k}-{store.generation}.npy" for k in ("index", "topics", "hubs")])


def test_precomputed_vectors_and_hubness(tmp_path, embedder):
    s = ClaimStore.open(tmp_path / "v", embedder, create=True)
    vecs = np.eye(4, embedder.dim, dtype=np.float32)
    s.add([claim(f"c{i}", f"text {i}") for i in range(4)], vectors={f"c{i}": vecs[i] for i in range(4)})
    assert embedder.usage.calls == 0 and len(s) == 4
    assert s.hubs[0] == pytest.approx(0.0)  # orthogonal claims: nobody is a hub


def test_wide_exact_search_returns_the_true_top_k_best_first(tmp_path, embedder):
    # 3,000 claims: wide enough for the block pass of the top-k selection, with exact
    # copies (equal scores) and a third not rated false.
    rng = np.random.default_rng(7)
    vecs = rng.standard_normal((3000, embedder.dim)).astype(np.float32)
    vecs[1500:1520] = vecs[10]
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    s = ClaimStore.open(tmp_path / "wide", embedder, create=True)
    s.add([claim(f"c{i}", f"text {i}", "true" if i % 3 == 0 else "false") for i in range(3000)],
          vectors={f"c{i}": vecs[i] for i in range(3000)})
    queries = np.concatenate([vecs[[10, 42, 2999]], rng.standard_normal((5, embedder.dim)).astype(np.float32)])
    sims = queries @ s.vectors.T
    false_rated = np.flatnonzero(s.flaggable)
    for k in (1, 5, 30):
        scores, slots = s.search(queries, k)
        assert np.array_equal(scores, -np.sort(-sims, axis=1)[:, :k])
        assert np.array_equal(np.take_along_axis(sims, slots, axis=1), scores)
        assert all(len(set(row)) == k and list(row) == sorted(row, key=lambda c, r=r: (-sims[r, c], c))
                   for r, row in enumerate(slots))
        flaggable, every = s.search_flaggable_and_every(queries, k)
        assert np.array_equal(every, slots)
        assert np.isin(flaggable, false_rated).all()
        assert np.array_equal(np.take_along_axis(sims, flaggable, axis=1),
                              -np.sort(-sims[:, false_rated], axis=1)[:, :k])


def test_corrupt_index_is_a_store_error(store):
    (store.path / f"index-{store.generation}.npy").write_bytes(b"garbage")
    with pytest.raises(StoreError, match="missing or corrupt"):
        ClaimStore.open(store.path, store.embedder)


def test_search_is_the_same_with_and_without_the_blas_thread_limit(store, embedder, monkeypatch):
    ids = ["S13", "S01", "S05"]
    queries = embedder.embed([store.get(cid).text for cid in ids], "query")
    limited = store.search(queries, 5)
    assert store._blas not in (None, False)  # threadpoolctl comes with the claims extra
    # As if threadpoolctl were absent: the plain product must give the very same result.
    monkeypatch.setattr(store, "_blas", False)
    plain = store.search(queries, 5)
    assert np.array_equal(limited[0], plain[0]) and np.array_equal(limited[1], plain[1])
    assert [store.get_slots([s])[s].id for s in limited[1][:, 0]] == ids


def test_lexical_index_follows_ingests_and_finds_rare_words(tmp_path, embedder):
    store = ClaimStore.open(tmp_path / "lex", embedder, create=True)
    store.add([claim("A", "The Zyxwick dam burst in 1987 and flooded Oslo"), claim("B", "Tea cures colds", "true"),
               claim("C", "Zyxwick is a fictional town")])
    slots = [slot for slot, _ in store.lexical_search("was the zyxwick dam really burst?", 5)]
    assert store.get_slots(slots[:1])[slots[0]].id == "A" and store.slot_of("C") in slots
    assert store.slot_of("B") not in [s for s, _ in store.lexical_search("tea colds", 5, flaggable_only=True)]
    store.add([claim("A", "Bananas are radioactive enough to harm you")])  # changed text re-indexed
    assert store.slot_of("A") not in [s for s, _ in store.lexical_search("Zyxwick dam", 5)]
    assert [s for s, _ in store.lexical_search("radioactive bananas", 5)] == [store.slot_of("A")]
    assert store.lexical_search("a the of", 5) == [] and store.lexical_search("", 5) == []
    store.close()


def test_a_lexical_query_drops_words_whose_claims_exceed_the_postings_budget(tmp_path, embedder, monkeypatch):
    from misguard.claims import _store

    store = ClaimStore.open(tmp_path / "budget", embedder, create=True)
    store.add([claim("RARE", "The Quorvath bridge collapsed")]
              + [claim(f"C{i}", f"Common words everywhere number {i}") for i in range(8)])
    query = "did the quorvath bridge hold common words?"
    every = {store.get_slots([s])[s].id for s, _ in store.lexical_search(query, 20)}
    assert "RARE" in every and "C0" in every  # within the budget: the common words retrieve too
    monkeypatch.setattr(_store, "LEXICAL_POSTINGS", 3)
    budgeted = [store.get_slots([s])[s].id for s, _ in store.lexical_search(query, 20)]
    assert budgeted == ["RARE"]  # the rarest words only: 'common'/'words' hold 8 claims each
    monkeypatch.setattr(_store, "LEXICAL_POSTINGS", 0)
    assert store.lexical_search("common words", 20)  # the rarest word is always kept
    store.close()


def test_lexical_index_is_atomic_with_the_records(store, monkeypatch):
    # A failure inside the write transaction (after the records and the lexical index are
    # written, before the generation switches) rolls both back.
    import sqlite3

    from misguard.claims import _store_write

    before = (len(store), store.lexical_search("goldfish remember", 10))

    def fail(conn, **values):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(_store_write, "_set_meta", fail)
    with pytest.raises(StoreError, match="nothing was changed"):
        store.add([claim("NEW", "Goldfish remember three seconds, new study shows")])
    assert (len(store), store.lexical_search("goldfish remember", 10)) == before
    assert store.get("NEW") is None


def test_a_store_made_before_the_lexical_index_is_indexed_on_open(tmp_path, store):
    import sqlite3

    store.close()
    conn = sqlite3.connect(tmp_path / "db" / "claims.sqlite")
    conn.execute("DELETE FROM claims_fts")
    conn.commit()
    conn.close()
    again = ClaimStore.open(tmp_path / "db", get_embedder("hashing/256"))
    assert [s for s, _ in again.lexical_search("knuckles arthritis", 1)] == [again.slot_of("S28")]
    again.close()


def test_store_is_readable_from_other_threads(store, embedder):
    """A store opened on one thread is read on another (a service's worker threads); each
    thread gets its own SQLite connection instead of a ProgrammingError."""
    from concurrent.futures import ThreadPoolExecutor

    def read(_: int) -> tuple[str | None, int]:
        return store.get("S03").id, store.stored_generation()

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(read, range(16)))
    assert results == [("S03", store.generation)] * 16


def test_stored_generation_sees_another_process_ingest(tmp_path, store, embedder):
    other = ClaimStore.open(store.path, embedder)
    try:
        other.add([claim("X1", "A brand new claim about lighthouses")])
        assert store.stored_generation() == other.generation == store.generation + 1
    finally:
        other.close()


def test_closed_store_refuses_new_threads(tmp_path, embedder):
    import threading

    s = ClaimStore.open(tmp_path / "closed", embedder, create=True)
    s.close()
    errors: list[Exception] = []
    worker = threading.Thread(target=lambda: errors.append(_capture(lambda: s.get("x"))))
    worker.start()
    worker.join()
    assert isinstance(errors[0], StoreError) and "closed" in str(errors[0])


def _capture(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the test inspects it
        return exc
    return None


def test_remove_deletes_by_id_and_keeps_the_others_searchable(store, embedder):
    before = len(store)
    keep_vec = store.vectors[store.slot_of("S13")].copy()
    assert store.remove(["S03", "missing-id", "S03"]) == 1
    assert len(store) == before - 1 and store.get("S03") is None
    assert np.allclose(store.vectors[store.slot_of("S13")], keep_vec)
    _, slots = store.search(embedder.embed("Vikings wore helmets with horns into battle", "query"), 1)
    assert store.get_slots(slots[0])[int(slots[0][0])].id == "S13"
    reopened = ClaimStore.open(store.path, embedder)
    try:
        assert len(reopened) == before - 1 and [c.id for c in reopened.iter_claims()] == [c.id for c in store.iter_claims()]
    finally:
        reopened.close()
    # The lexical index follows the renumbered slots.
    [(slot, _)] = store.lexical_search("Vikings helmets horns battle", 1)
    assert slot == store.slot_of("S13")
    assert store.remove(["missing-id"]) == 0
