"""BM25 over the claim store's FTS5 index, scored in memory with FTS5's own numbers.

SQLite's `bm25()` scores each claim that holds a query word one row at a time through
FTS5's auxiliary-function interface, then sorts them: ~4 ms per query on a store of
10,000 claims, as long as embedding the text. `LexicalIndex` reads what `bm25()` reads
(a word's postings from the `fts5vocab` instance table, their claims' lengths from
`claims_fts_docsize`, the row and token totals from FTS5's averages record), so the
tokenization stays FTS5's, and computes the same formula (sqlite `ext/fts5/fts5_aux.c`,
`fts5Bm25Function`) with numpy, in the same order of operations: the same claims, in the
same order, with the same scores.

A word's postings are read on its first query, each with its claim's length, and kept for
the generation (weighed already: a posting's BM25 term depends only on the word, the claim
and the table's totals), so opening a store or a new generation reads nothing per claim
and memory grows with the words queried, not with the store (`CACHED_POSTINGS` bounds it).
"""

from __future__ import annotations

import math
import sqlite3
import threading

import numpy as np

from ..errors import StoreError

#: FTS5's bm25() constants (`fts5_aux.c`).
K1 = 1.2
B = 0.75
#: FTS5 never lets a word's IDF reach 0 (a word in more than half of the claims).
MIN_IDF = 1e-6
#: Most postings held across queries (12 bytes each: claim and weight; 48 MB at most). The
#: words of 500 LIAR statements hold 1.13 million postings in the 1,000,000-claim synthetic
#: store (the rarest words of a text, each within `LEXICAL_POSTINGS`), the whole index of
#: the 10,301-claim store 172,463. Past the bound every held word is dropped and read again
#: from SQLite when next queried (about as slow as FTS5's own query).
CACHED_POSTINGS = 4_000_000
#: The FTS5 averages record (`FTS5_AVERAGES_ROWID` in `fts5Int.h`): total rows, then the
#: total tokens of each column.
_AVERAGES_ROWID = 1
#: A connection's view of the FTS5 index as (word, claim, column, position) rows.
_INSTANCES = "claims_instances"

Postings = tuple[np.ndarray, np.ndarray]  # (claims ascending, int32; their BM25 weights, float64)


class LexicalIndex:
    """One generation of the FTS5 table `claims_fts`: its row and token totals, and the
    weighed postings of the words queried so far. Thread-safe: a word read twice at once
    is weighed twice, the same way."""

    def __init__(self, generation: int, rows: int, tokens: int) -> None:
        self.generation = generation
        self.rows = rows
        self.avgdl = tokens / rows if rows else 1.0  # C: (double)nToken / (double)nRow
        self._held: dict[str, Postings] = {}
        self._count = 0
        self._lock = threading.Lock()

    @classmethod
    def read(cls, conn: sqlite3.Connection, generation: int) -> LexicalIndex:
        """The totals of the table as `conn` sees it (inside the read transaction that names
        `generation`)."""
        row = conn.execute("SELECT block FROM claims_fts_data WHERE id = ?", (_AVERAGES_ROWID,)).fetchone()
        totals = _varints(bytes(row[0])) if row and row[0] else [0, 0]
        if len(totals) != 2:
            raise StoreError(f"the lexical index has {len(totals) - 1} columns, not 1: check it with "
                             f"misguard claims verify")
        return cls(generation, *totals)

    def held(self, terms: list[str]) -> dict[str, Postings]:
        """The postings of those `terms` read already."""
        held = self._held
        return {t: held[t] for t in terms if t in held}

    def hold(self, conn: sqlite3.Connection, term: str) -> Postings:
        """Read a word's postings (each occurrence, with its claim's length), weigh them and
        keep them for the next queries (inside a read transaction of this generation)."""
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_INSTANCES} USING fts5vocab(main, claims_fts, instance)")
        rows = conn.execute(f"SELECT i.doc, d.sz FROM temp.{_INSTANCES} AS i JOIN claims_fts_docsize AS d "
                            "ON d.id = i.doc WHERE i.term = ?", (term,)).fetchall()
        claims = np.fromiter((doc for doc, _ in rows), np.int64, len(rows))
        docs, first, tf = np.unique(claims, return_index=True, return_counts=True)
        lengths = _one_varint_each([rows[i][1] for i in first]) if len(rows) else np.zeros(0, np.int64)
        postings = docs.astype(np.int32), self._weights(len(docs), tf.astype(np.float64), lengths)
        with self._lock:
            if self._count + len(docs) > CACHED_POSTINGS:
                self._held, self._count = {}, 0  # readers keep the dict they looked into
            if term not in self._held:
                self._held[term] = postings
                self._count += len(docs)
        return postings

    def _weights(self, hits: int, tf: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Each posting's BM25 term, as `fts5Bm25Function` computes it (same operation order)."""
        idf = math.log((self.rows - hits + 0.5) / (hits + 0.5))
        if idf <= 0.0:
            idf = MIN_IDF
        d = lengths.astype(np.float64)
        return idf * ((tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * d / self.avgdl)))

    @staticmethod
    def top(postings: list[Postings], wanted: int) -> list[tuple[int, float]]:
        """The `wanted` best claims for the OR of these words (in the query's phrase order)
        -> [(claim, score)], best first: FTS5's `ORDER BY rank` (ties: lower rowid first)."""
        if wanted <= 0 or not postings:
            return []
        if len(postings) == 1:
            claims, scores = postings[0]
        else:
            every = np.concatenate([c for c, _ in postings])
            order = np.argsort(every, kind="stable")
            ordered = every[order]
            first = np.empty(len(ordered), dtype=bool)  # the first posting of each claim
            first[0] = True
            np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
            where = np.empty(len(every), dtype=np.int64)  # each posting's claim, as a row of `claims`
            where[order] = np.cumsum(first) - 1
            claims = ordered[first]
            scores = np.zeros(len(claims))
            start = 0
            for c, w in postings:  # phrase by phrase, as FTS5 sums them (not a pairwise sum)
                scores[where[start : start + len(c)]] += w
                start += len(c)
        rest = np.arange(len(claims))
        if len(claims) > 4 * wanted:  # only the best and every claim tied with the last of them
            cut = np.partition(-scores, wanted - 1)[wanted - 1]
            rest = np.flatnonzero(-scores <= cut)
        order = rest[np.argsort(-scores[rest], kind="stable")][:wanted]
        return [(int(c), float(s)) for c, s in zip(claims[order], scores[order], strict=True)]


def _varints(blob: bytes) -> list[int]:
    """SQLite varints (big-endian 7-bit groups, the 9th byte whole) read from `blob`."""
    out, value, i = [], 0, 0
    while i < len(blob):
        value, length = 0, 0
        while True:
            byte = blob[i]
            i += 1
            length += 1
            if length == 9:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        out.append(value)
    return out


def _one_varint_each(blobs: list[bytes]) -> np.ndarray:
    """The one varint of each blob (a claim's token count in `claims_fts_docsize`), vectorized."""
    sizes = np.fromiter(map(len, blobs), np.int64, len(blobs))
    data = np.frombuffer(b"".join(blobs), dtype=np.uint8).astype(np.int64)
    ends = np.cumsum(sizes)
    if sizes.min() < 1 or sizes.max() > 8 or (data[ends - 1] >= 0x80).any() or \
            (np.count_nonzero(data >= 0x80) != int((sizes - 1).sum())):
        raise StoreError("the lexical index's document sizes are not one count per claim: check it with "
                         "misguard claims verify")
    values = np.zeros(len(blobs), dtype=np.int64)
    starts = ends - sizes
    for i in range(int(sizes.max())):
        longer = sizes > i
        values[longer] = (values[longer] << 7) | (data[starts[longer] + i] & 0x7F)
    return values


__all__ = ["CACHED_POSTINGS", "LexicalIndex"]
