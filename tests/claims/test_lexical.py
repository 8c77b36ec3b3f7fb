"""The in-memory lexical index returns what SQLite FTS5's bm25() returns: same slots, same
order (ties: lower slot first), same scores."""

from __future__ import annotations

import csv
import random

import numpy as np
import pytest

from misguard.claims import ClaimStore, _lexical
from misguard.claims._lexical import LexicalIndex, _one_varint_each, _varints

from .conftest import claim

WORDS = [
    *["dam", "bridge", "vaccine", "election", "senator", "budget", "tax", "climate", "ocean", "river", "vote", "school", "wheat"],
    *["café", "São", "Paulo", "Zürich", "naïve", "résumé", "Ærø", "Øresund", "Ångström", "façade", "jalapeño"],
    *["Москва", "выборы", "налог", "Αθήνα", "εκλογές", "東京都", "選挙"],
    *["1987", "2020", "3.5", "1,000", "45%", "12th", "covid-19", "co2"],
]


def _text(rng: random.Random) -> str:
    n = rng.choice([1, 3, 6, 12, 25, 60, 200])  # short claims and long ones (2-byte lengths)
    words = [rng.choice(WORDS) for _ in range(n)]
    if rng.random() < 0.3:
        words += [words[0]] * rng.randint(1, 4)  # repeated words: tf > 1
    return " ".join(w.upper() if rng.random() < 0.1 else w for w in words)


def _claims(rng: random.Random, n: int, prefix: str) -> list:
    texts = [_text(rng) for _ in range(n)]
    texts += texts[: n // 10]  # duplicates: exact ties, broken by slot
    return [claim(f"{prefix}{i}", t, rng.choice(["false", "true", "mostly-false"])) for i, t in enumerate(texts)]


def _queries(rng: random.Random, texts: list[str], n: int) -> list[str]:
    out = []
    for _ in range(n):
        words = rng.choice(texts).split()
        picked = rng.sample(words, min(len(words), rng.randint(1, 15)))
        picked += rng.sample(WORDS, rng.randint(0, 4)) + rng.sample(["zzyzx", "qwertyuiop", "nowhere9"], rng.randint(0, 2))
        if rng.random() < 0.3:
            picked += picked[:2]  # a word twice in the query
        out.append(" ".join(picked))
    return out + ["", "the and for", "zzyzx only", "CAFÉ cafe café", "1987 1987 1987"]


def _assert_same_as_fts5(store: ClaimStore, queries: list[str]) -> int:
    """Every query, plain and flaggable-only, in memory and by FTS5; returns how many
    answers held a tie (so the tie order was exercised)."""
    ties = 0
    for text in queries:
        terms = store._lexical_terms(text)
        for k in (1, 5, 20, 60):
            postings = store._lexical_postings(terms) if terms else []
            assert postings is not None
            mine = LexicalIndex.top(postings, k)
            theirs = store._fts5_search(terms, k) if terms else []
            assert [s for s, _ in mine] == [s for s, _ in theirs], (text, k)
            assert [v for _, v in mine] == pytest.approx([v for _, v in theirs], rel=1e-9, abs=0), (text, k)
            ties += len({v for _, v in mine}) < len(mine)
            for flaggable_only in (False, True):
                # the public method: same filtering of the same rows
                answer = store.lexical_search(text, k, flaggable_only=flaggable_only)
                wanted = store._fts5_search(terms, 3 * k if flaggable_only else k) if terms else []
                wanted = [(s, v) for s, v in wanted if not flaggable_only or store.flaggable[s]][:k]
                assert [s for s, _ in answer] == [s for s, _ in wanted], (text, k, flaggable_only)
    return ties


def test_lexical_search_matches_fts5_on_varied_text(tmp_path, embedder):
    rng = random.Random(7)
    store = ClaimStore.open(tmp_path / "lex", embedder, create=True)
    store.add(_claims(rng, 300, "A"))
    texts = [c.text for c in store.iter_claims()]
    ties = _assert_same_as_fts5(store, _queries(rng, texts, 150))
    assert ties > 10  # the duplicates made tied scores, whose order was compared
    index = store._lexical
    assert index is not None and index.generation == store.generation
    assert index.rows == len(store)

    # Claims added (and one changed) after the index was built: a new generation, read anew.
    store.add(_claims(rng, 40, "B") + [claim("A0", "Øresund bridge tax 2020 2020 2020")])
    assert store._lexical is None or store._lexical.generation != index.generation
    _assert_same_as_fts5(store, _queries(rng, [c.text for c in store.iter_claims()], 60))
    assert store.lexical_search("øresund bridge tax 2020", 1)[0][0] == store.slot_of("A0")
    store.close()


def test_the_in_memory_index_answers_without_fts5(tmp_path, embedder, monkeypatch):
    store = ClaimStore.open(tmp_path / "lex", embedder, create=True)
    store.add(_claims(random.Random(3), 50, "A"))
    expected = store.lexical_search("vaccine São Paulo 1987", 10)
    assert expected

    def no_fts5(*args, **kwargs):
        raise AssertionError("FTS5 was queried")

    monkeypatch.setattr(store, "_fts5_search", no_fts5)
    assert store.lexical_search("vaccine São Paulo 1987", 10) == expected
    store.close()


def test_a_bounded_cache_gives_the_same_answers(tmp_path, embedder, monkeypatch):
    rng = random.Random(11)
    store = ClaimStore.open(tmp_path / "lex", embedder, create=True)
    store.add(_claims(rng, 200, "A"))
    monkeypatch.setattr(_lexical, "CACHED_POSTINGS", 150)  # dropped again and again
    _assert_same_as_fts5(store, _queries(rng, [c.text for c in store.iter_claims()], 60))
    assert store._lexical._count <= 150
    store.close()


def test_a_handle_behind_the_store_on_disk_asks_fts5_until_it_refreshes(tmp_path, embedder):
    path = tmp_path / "lex"
    reader = ClaimStore.open(path, embedder, create=True)
    reader.add([claim("A", "the quorvath bridge collapsed"), claim("B", "a bridge in Lima")])
    before = reader.lexical_search("quorvath bridge", 5)
    assert [s for s, _ in before] == [0, 1]
    with ClaimStore.open(path, embedder) as writer:
        writer.add([claim("C", "quorvath quorvath quorvath lima")])
    # Another process wrote. Words read already: this handle's generation answers; a word
    # not read yet: FTS5, which reads the latest (what this handle did before).
    assert reader.lexical_search("quorvath bridge", 5) == before
    latest = reader._fts5_search(["lima"], 5)
    assert [s for s, _ in latest] == [1, 2]
    assert reader.lexical_search("lima", 5) == latest[:1]  # slot 2 is not this handle's yet
    reader.refresh()
    assert sorted(s for s, _ in reader.lexical_search("quorvath bridge", 5)) == [0, 1, 2]
    _assert_same_as_fts5(reader, ["quorvath bridge", "lima collapsed"])
    reader.close()


def test_lexical_search_matches_fts5_on_real_statements(tmp_path, embedder, shared_data):
    rows = list(csv.reader((shared_data / "claims" / "liar" / "train.tsv").open(encoding="utf-8"), delimiter="\t"))
    rng = random.Random(5)
    rng.shuffle(rows)
    store = ClaimStore.open(tmp_path / "liar", embedder, create=True)
    store.add([claim(f"L{i}", r[2], "false" if r[1] in ("false", "pants-fire") else "true")
               for i, r in enumerate(rows[:2000])])
    queries = [r[2] for r in rows[2000:2300]]  # statements not in the store
    ties = _assert_same_as_fts5(store, queries)
    assert ties > 0
    store.close()


def test_varints_are_read_as_sqlite_writes_them():
    assert _varints(bytes([0x05])) == [5]
    assert _varints(bytes([0xD0, 0x3D, 0x8B, 0xBB, 0x37])) == [10301, 187831]
    assert _varints(bytes([0xFF] * 8 + [0x01])) == [(1 << 64) - 255]  # nine bytes: the last whole
    blobs = [bytes([0x05]), bytes([0x81, 0x00]), bytes([0x81, 0x80, 0x00])]
    assert _one_varint_each(blobs).tolist() == [5, 128, 16384]
    with pytest.raises(Exception, match="one count per claim"):
        _one_varint_each([bytes([0x81])])
    assert np.array_equal(_one_varint_each([bytes([0x7F])]), [127])
