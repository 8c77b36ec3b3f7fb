"""Writing to a claim store: ingest, removal and rebuilds through one write path.

Every write plans its next state (embeddings, hubness) before it takes SQLite's write lock,
on the latest generation. Hubness is computed again for every claim only while the store is
small (at most `HUBNESS_REFERENCE` claims, where every claim is a reference); above that a
write computes it for the claims it adds or changes, and the others keep theirs. Under the lock it checks that no other
handle or process committed meanwhile (if one did, it catches up with the generation on
disk, keeping that writer's claims, and plans again), writes that generation's index files
and commits the records together with the switch of generation. A store of at least
`ANN_THRESHOLD` claims also has an approximate index: an ingest writes its new and changed
vectors as a small delta beside the current base files (`Layout`), and once the delta would
pass `ClaimStore.delta_limit` vectors, adds them to the base's approximate index (no rebuild)
and writes a new base whole; a removal or a rebuild makes it anew.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import MissingExtraError, StoreError
from ..types import Claim, VerdictLabel
from ._ann import AnnIndex, ann_file
from ._storage import (
    _COLUMNS,
    _TOPIC_IDS,
    DELTA_KINDS,
    DELTA_LIMIT,
    HUBNESS_REFERENCE,
    INDEX_KINDS,
    Layout,
    _row,
    _save,
    _set_meta,
    _transaction,
    drop_older_files,
    file_sha256,
    hubness,
    hubness_of,
    index_files,
)
from ._verdicts import FALSE_LIKE

if TYPE_CHECKING:
    from ._store import ClaimStore

log = logging.getLogger("misguard.claims")


@dataclass(frozen=True)
class IngestReport:
    """What one ingest did."""

    added: int
    updated: int
    unchanged: int
    embedded: int
    seconds: float


class StoreWrites:
    """The writing half of `ClaimStore` (a mixin: it uses the store's state and index)."""

    def add(
        self,
        claims: Iterable[Claim],
        *,
        source: str = "input",
        assign_topics: Callable[[np.ndarray], list[str]] | None = None,
        vectors: dict[str, np.ndarray] | None = None,
    ) -> IngestReport:
        """Insert or update claims by id, all or nothing.

        New and changed texts are embedded first; if anything fails (a bad record, the
        embedder), nothing is written. `assign_topics` maps the new vectors to one topic
        each, for claims that arrive without one (the topic agent). `vectors` supplies
        precomputed passage embeddings by claim id (e.g. from another system), skipping
        the embedder for those. Claims another handle or process added meanwhile are kept:
        the write is planned again on the store as it is on disk, under the write lock.
        """
        started = time.perf_counter()
        batch: dict[str, Claim] = {}
        for claim in claims:
            batch[claim.id] = claim  # a repeated id in one file: the last row wins
        if not batch:
            return IngestReport(0, 0, 0, 0, time.perf_counter() - started)
        # Embeddings are kept by (id, text): a plan made again under the write lock (another
        # writer won the race) embeds only what that writer changed, rarely anything.
        prepared = _Embeddings(self, vectors or {}, assign_topics)

        def build() -> _Next:
            plan = self._ingest_plan(batch)
            prepared.embed(plan)
            return self._ingest_next(plan, prepared)

        written = self._write(source, build)
        assert written is not None
        counts = written.counts
        return IngestReport(counts[0], counts[1], counts[2], prepared.embedded, time.perf_counter() - started)

    def _ingest_plan(self, batch: dict[str, Claim]) -> _IngestPlan:
        """What an ingest of `batch` changes in the store as the records are now."""
        existing: dict[str, tuple[int, str, tuple]] = {}
        ids = list(batch)
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._conn.execute(
                f"SELECT slot, {', '.join(_COLUMNS)} FROM claims WHERE id IN ({marks})", chunk
            ):
                existing[row[1]] = (row[0], row[2], tuple(row[1:]))
        # A re-ingested claim that comes without a topic keeps the one it has (e.g. the
        # topic agent's): otherwise every re-ingest of a topic-less file would wipe them.
        topic_col = _COLUMNS.index("topic")
        merged = dict(batch)
        for cid, (_, text, row) in existing.items():
            if not merged[cid].topic and row[topic_col] and text == merged[cid].text:
                merged[cid] = merged[cid].model_copy(update={"topic": row[topic_col]})
        new_ids = [cid for cid in ids if cid not in existing]
        changed = [cid for cid in ids if cid in existing and existing[cid][1] != merged[cid].text]
        return _IngestPlan(merged, existing, new_ids, changed)

    def _ingest_next(self, plan: _IngestPlan, prepared: _Embeddings) -> _Next:
        batch, existing, new_ids, changed = plan.batch, plan.existing, plan.new_ids, plan.changed
        n = len(self)
        vectors = self.vectors
        if plan.to_embed:
            new_vecs = np.stack([prepared.vector(cid, batch[cid].text) for cid in plan.to_embed]).astype(np.float32)
            if new_vecs.shape[1] != self.vectors.shape[1]:
                raise StoreError(f"vectors of width {new_vecs.shape[1]} for a store of width {self.vectors.shape[1]}")
            vectors = self._appended(new_vecs[: len(new_ids)])
            if changed:  # rows of the current state change: never in place (readers hold it)
                vectors = vectors.copy()
            for j, cid in enumerate(changed):
                vectors[existing[cid][0]] = new_vecs[len(new_ids) + j]
            for cid in plan.to_embed:
                topic = prepared.topic(cid, batch[cid].text)
                if not batch[cid].topic and topic is not None:
                    batch[cid] = batch[cid].model_copy(update={"topic": topic})
        slots = {cid: existing[cid][0] for cid in existing}
        slots.update({cid: n + j for j, cid in enumerate(new_ids)})
        topic_ids = np.concatenate([self.topic_ids, np.full(len(new_ids), -1, dtype=np.int16)])
        flags = np.concatenate([self.flaggable, np.zeros(len(new_ids), dtype=bool)])
        updated = unchanged = 0
        rows = []
        for cid in batch:
            row = _row(batch[cid])
            if cid in existing:
                if existing[cid][2] == row:
                    unchanged += 1
                    continue
                updated += 1
            topic_ids[slots[cid]] = _TOPIC_IDS.get(batch[cid].topic or "", -1)
            flags[slots[cid]] = VerdictLabel(batch[cid].verdict) in FALSE_LIKE
            rows.append((slots[cid], *row))

        def write_rows(conn: sqlite3.Connection) -> None:
            conn.executemany(
                f"INSERT OR REPLACE INTO claims (slot, {', '.join(_COLUMNS)}) "
                f"VALUES ({', '.join('?' * (len(_COLUMNS) + 1))})",
                rows,
            )
            conn.executemany("DELETE FROM claims_fts WHERE rowid = ?", [(r[0],) for r in rows])
            conn.executemany("INSERT INTO claims_fts (rowid, text) VALUES (?, ?)", [(r[0], r[2]) for r in rows])

        touched = np.array(sorted(slots[cid] for cid in plan.to_embed), dtype=np.int64)
        if not plan.to_embed:
            hubs = self.hubs
        elif len(vectors) <= HUBNESS_REFERENCE:
            hubs = hubness(vectors)
        else:
            hubs = np.concatenate([self.hubs, np.zeros(len(new_ids), dtype=np.float32)])
            hubs[touched] = hubness_of(vectors, touched)
        return _Next(vectors, topic_ids, hubs, write_rows, (len(new_ids), updated, unchanged), ann_changed=touched,
                     flags=flags)

    def _appended(self, rows: np.ndarray) -> np.ndarray:
        """The vectors with `rows` after them. Kept in a buffer with spare rows, so that a
        small add to a large store does not copy every vector: the current state is a view
        of the buffer's first rows, which this never changes."""
        n, need = len(self), len(self) + len(rows)
        room = self._room
        if room is None or len(room) < need or self.vectors.base is not room:
            room = np.empty((need + max(1024, need // 16), self.vectors.shape[1]), dtype=np.float32)
            room[:n] = self.vectors
            self._room = room
        room[n:need] = rows
        return room[:need]

    def remove(self, claim_ids: Iterable[str], *, source: str = "input") -> int:
        """Delete claims by id, all or nothing; returns how many existed. The slots after
        each removed one move down, in a new index generation (crash-safe like `add`)."""
        wanted = list(dict.fromkeys(claim_ids))

        def build() -> _Next | None:
            gone = sorted(s for s in (self.slot_of(cid) for cid in wanted) if s is not None)
            if not gone:
                return None
            keep = np.ones(len(self), dtype=bool)
            keep[gone] = False
            new_slot = np.cumsum(keep) - 1
            vectors, topic_ids = self.vectors[keep], self.topic_ids[keep]

            def write_rows(conn: sqlite3.Connection) -> None:
                conn.executemany("DELETE FROM claims WHERE slot = ?", [(s,) for s in gone])
                # Ascending order: each target slot is free (removed, or already moved down).
                moves = [(int(new_slot[s]), s) for s in range(gone[0] + 1, len(keep)) if keep[s]]
                conn.executemany("UPDATE claims SET slot = ? WHERE slot = ?", moves)
                # The lexical index is keyed by slot too: rebuild it (removals are rare).
                conn.execute("DELETE FROM claims_fts")
                conn.execute("INSERT INTO claims_fts (rowid, text) SELECT slot, text FROM claims")

            # Above the reference size the others keep their hubness (as when adding).
            hubs = self.hubs[keep] if len(vectors) > HUBNESS_REFERENCE else hubness(vectors)
            return _Next(vectors, topic_ids, hubs, write_rows, (len(gone),))

        written = self._write(source, build)
        return 0 if written is None else written.counts[0]

    def _write(self, source: str, build: Callable[[], _Next | None], *, catch_up: bool = True) -> _Next | None:
        """The one write path. `build` plans the next state from the store as it is (None:
        nothing to write); it runs first without any lock (embedding and hubness are the
        slow part), on the latest generation. Then, under SQLite's write lock: if another
        writer committed meanwhile, catch up with the generation on disk and build again;
        write the new generation's index files, its rows and the switch of generation in
        one commit. Files of older generations are deleted after the commit.
        `catch_up=False`: never load the current index (a rebuild, which does not read it)."""
        if catch_up:
            self.refresh()
            base = self.generation
        else:
            base = self.stored_generation()
        files: list[Path] = []
        try:
            nxt = build()
            with _transaction(self._conn):
                stored = self.stored_generation()
                if stored != base:  # a writer won the race: plan again on what it committed
                    if catch_up:
                        self._load_index()  # inside the lock: no other writer can move on now
                        self.reloads += 1
                    else:
                        self.generation = stored
                    nxt = build()
                self.generation = stored
                self._sweep_unfinished(stored)
                if nxt is None:
                    return nxt
                generation = self.generation + 1
                meta = self._meta()
                delta = self._next_delta(nxt, meta)
                if delta is None:  # a new base, written whole
                    ann = self._next_ann(nxt, generation)
                    library = ann.library if ann is not None else ""
                    # Room for the deltas of the writes to come (in a store with a graph), also
                    # when this write was told to make no delta.
                    spare = max(self.delta_limit, DELTA_LIMIT) if ann is not None else 0
                    layout = Layout(generation, len(nxt.vectors), generation, len(nxt.vectors), spare)
                    arrays = dict(zip(INDEX_KINDS, (nxt.vectors, nxt.topic_ids, nxt.hubs)))
                    sums = {}
                    delta = np.zeros(0, dtype=np.int64)
                else:  # the base's files stay; this generation writes the delta beside them
                    layout = Layout(generation, len(nxt.vectors), self.layout.base, self.layout.base_count,
                                    self.layout.spare)
                    arrays = dict(zip(("topics", "hubs", *DELTA_KINDS),
                                      (nxt.topic_ids, nxt.hubs, nxt.vectors[delta], delta)))
                    old_sums = json.loads(meta.get("checksums", "{}"))
                    sums = {kind: old_sums[kind] for kind in ("index", "ann") if kind in old_sums}
                    ann, library = None, meta.get("ann", "")
                paths = layout.files(self.path, library)
                for kind, array in arrays.items():
                    files.append(paths[kind])
                    sums[kind] = _save(paths[kind], array, layout.spare if kind == "index" else 0)
                if ann is not None:
                    files.append(paths["ann"])
                    ann.save(paths["ann"])
                    sums["ann"] = file_sha256(paths["ann"])
                nxt.write_rows(self._conn)
                _set_meta(self._conn, generation=str(generation), count=str(len(nxt.vectors)),
                          base=str(layout.base), base_count=str(layout.base_count), base_spare=str(layout.spare),
                          checksums=json.dumps(sums, sort_keys=True), ann=library)
                flags = nxt.flags if nxt.flags is not None else self._read_flags(len(nxt.vectors))
        except (OSError, sqlite3.Error) as exc:
            for leftover in files:
                leftover.unlink(missing_ok=True)
            self._reload_ann()  # it may hold this write's claims
            raise StoreError(f"Could not write {self.path} ({source}); nothing was changed: {exc}") from None
        except BaseException:
            for leftover in files:
                leftover.unlink(missing_ok=True)
            self._reload_ann()
            raise
        drop_older_files(self.path, layout)
        self._set_state(layout, nxt.vectors.astype(np.float32, copy=False), nxt.topic_ids, nxt.hubs, flags, delta)
        if ann is not None:
            # Search the file just written, mapped, instead of the copy built in memory: a
            # long-running writer then holds no more of the graph than its searches read.
            ann = AnnIndex.load(paths["ann"], ann.library, self.vectors.shape[1], len(self))
        elif layout.has_delta:
            ann = self._ann  # the base's index, unchanged
        if ann is None and self.index_mode == "approximate":
            ann = AnnIndex.build(self.ann_library, self.vectors)
        self._set_ann(ann)
        return nxt

    def _next_delta(self, nxt: _Next, meta: dict[str, str]) -> np.ndarray | None:
        """Under the write lock: the slots of the next generation's delta, or None when it
        is written whole (not an ingest, no readable approximate index on the base, which
        the whole write makes, or a delta that would pass `delta_limit`)."""
        if nxt.ann_changed is None or not meta.get("ann") or len(nxt.vectors) < self.ann_threshold:
            return None
        if self._current_ann() is None:
            return None
        slots = np.union1d(self.delta_slots, nxt.ann_changed).astype(np.int64)
        return slots if len(slots) <= self.delta_limit else None

    def _next_ann(self, nxt: _Next, generation: int) -> AnnIndex | None:
        """Under the write lock: the approximate index of the next generation, when the store
        is large enough to need one (whatever this handle searches with, so that every
        handle finds it). New and changed claims are added to the current index; without
        one (the store just grew past the threshold, a removal, a rebuild) it is built."""
        if len(nxt.vectors) < self.ann_threshold:
            return None
        current = self._current_ann()
        if nxt.ann_changed is not None and current is not None and len(current) >= self.layout.base_count:
            ann = current.mutable_copy(ann_file(self.path, self.layout.base, current.library))
            self._ann = ann  # from here on it holds this write's claims (dropped if it fails)
            merged = np.union1d(self.delta_slots, nxt.ann_changed).astype(np.int64)  # the delta joins the base
            ann.add(merged, nxt.vectors[merged])
            return ann
        log.info("building the approximate index of %s (%d claims)", self.path, len(nxt.vectors))
        try:
            return AnnIndex.build(self.ann_library, nxt.vectors)
        except MissingExtraError as exc:
            # The store stays whole and searchable (exactly); a write with the extra makes it.
            log.warning("%s; %s is searched exactly until a write made with it", exc, self.path)
            return None

    def _sweep_unfinished(self, stored: int) -> None:
        """Under the write lock: delete what writers that crashed before their commit left
        (temp files, files of generations never committed). Only writers make such files,
        and only while they hold this lock, so none of them is at work now."""
        for leftover in self.path.glob("*.tmp"):
            leftover.unlink(missing_ok=True)
        for gen, files in index_files(self.path).items():
            if gen > stored:
                for file in files:
                    file.unlink(missing_ok=True)

    def sweep(self) -> None:
        """Delete leftover files: unfinished writes and index files of older generations."""
        with _transaction(self._conn):
            self._sweep_unfinished(self.stored_generation())
            drop_older_files(self.path, Layout.of(self._meta()))

@dataclass
class _IngestPlan:
    batch: dict[str, Claim]
    existing: dict[str, tuple[int, str, tuple]]
    new_ids: list[str]
    changed: list[str]

    @property
    def to_embed(self) -> list[str]:
        return self.new_ids + self.changed


@dataclass
class _Next:
    """The next state a write commits: its index arrays and how to write its rows."""

    vectors: np.ndarray
    topic_ids: np.ndarray
    hubs: np.ndarray
    write_rows: Callable[[sqlite3.Connection], None]
    counts: tuple[int, ...]
    #: slots whose vectors are new or changed (added to the approximate index); None: make
    #: that index anew (slots moved, or a rebuild)
    ann_changed: np.ndarray | None = None
    #: which slots hold a false-like verdict, when the write knows (an ingest: the rows it
    #: writes and the others as they were); None: read from the records after the write
    flags: np.ndarray | None = None


class _Embeddings:
    """Passage vectors (and assigned topics) by (claim id, text), made once per ingest even
    when the ingest is planned again under the write lock."""

    def __init__(self, store: ClaimStore, supplied: dict[str, np.ndarray],
                 assign_topics: Callable[[np.ndarray], list[str]] | None) -> None:
        self.store = store
        self.supplied = supplied
        self.assign_topics = assign_topics
        self.vectors: dict[tuple[str, str], np.ndarray] = {}
        self.topics: dict[tuple[str, str], str | None] = {}
        self.embedded = 0

    def embed(self, plan: _IngestPlan) -> None:
        """Embed (or take from `supplied`) the plan's new and changed texts not seen yet, and
        assign topics to those of them that come without one."""
        keys = [(cid, plan.batch[cid].text) for cid in plan.to_embed]
        todo = [key for key in dict.fromkeys(keys) if key not in self.vectors]
        if not todo:
            return
        need = [key for key in todo if key[0] not in self.supplied]
        fresh = self.store.embedder.embed([text for _, text in need], "passage") if need else None
        self.embedded += len(need)
        given = {key: r for r, key in enumerate(need)}
        for key in todo:
            vec = fresh[given[key]] if fresh is not None and key in given else self.supplied[key[0]]
            self.vectors[key] = np.asarray(vec, dtype=np.float32)
        untopical = [key for key in todo if not plan.batch[key[0]].topic]
        if self.assign_topics is not None and untopical:
            for key, topic in zip(untopical, self.assign_topics(np.stack([self.vectors[k] for k in untopical]))):
                self.topics[key] = topic

    def vector(self, cid: str, text: str) -> np.ndarray:
        return self.vectors[(cid, text)]

    def topic(self, cid: str, text: str) -> str | None:
        return self.topics.get((cid, text))
