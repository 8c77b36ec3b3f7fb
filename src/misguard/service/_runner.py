"""The claim guard behind the service: one worker thread, micro-batched checks, reloads.

Why one worker thread: a check spends its time in the embedder, which already uses every
core, so checks running side by side only compete. Gathering the texts of concurrent
requests into one `ClaimGuard.check_many` call instead gives one embedding batch for all
of them. Store writes run on the same thread, so a check never sees half an ingest.

Why reloads: replicas of the service share one store directory. When another process
ingests, the store's generation on disk moves on; the guard then reloads the index and
drops its verdict cache before it checks, and checks a batch again if a write landed while
it ran (`ClaimStore.consistent`): every answer comes from one state of the store.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from ..claims import ClaimGuard, ClaimStore, open_claim_store
from ..embed import Embedder
from ..types import Verdict

log = logging.getLogger("misguard.service")
T = TypeVar("T")

GuardFactory = Callable[[ClaimStore], ClaimGuard]


@dataclass
class _Pending:
    texts: list[str]
    future: asyncio.Future[list[Verdict]]
    enqueued: float = field(default_factory=time.perf_counter)


class GuardRunner:
    """Owns the store and the guard; every use of them happens on its worker thread.

    Args:
        db: the claim store directory (must exist).
        embedder: the embedder the store was built with.
        make_guard: builds the guard over a (re)opened store.
        max_batch: most texts in one `check_many` call.
        window_s: a batch waits for more texts while some arrived in the last window.
        max_wait_s: the longest a batch waits to fill up.
        on_batch: called with (texts in the batch, seconds) after each batch (metrics).
    """

    def __init__(
        self,
        db: str,
        embedder: Embedder,
        make_guard: GuardFactory,
        *,
        max_batch: int = 64,
        window_s: float = 0.0,
        max_wait_s: float = 0.1,
        on_batch: Callable[[int, float], None] | None = None,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.make_guard = make_guard
        self.max_batch = max_batch
        self.window_s = window_s
        self.max_wait_s = max_wait_s
        self._last_batch_s = 0.0
        self.on_batch = on_batch
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="misguard-guard")
        self._store: ClaimStore | None = None
        self._guard: ClaimGuard | None = None
        self._queue: asyncio.Queue[_Pending] | None = None
        self._task: asyncio.Task[None] | None = None

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Open the store and warm the guard up (on the worker thread: ready means the
        first check loads nothing), then start batching."""
        await self.run(self._open)
        await self.run(self._warm_up)
        self._queue = asyncio.Queue()
        self._task = asyncio.create_task(self._loop(), name="misguard-batcher")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        if self._store is not None:
            await self.run(self._store.close)
        self._executor.shutdown(wait=True)

    @property
    def ready(self) -> bool:
        return self._guard is not None and self._task is not None and not self._task.done()

    # -- work ----------------------------------------------------------------------------

    async def check(self, texts: Sequence[str]) -> list[Verdict]:
        """Verdicts for `texts`, checked together with other requests' texts."""
        if self._queue is None:
            raise RuntimeError("the guard runner is not started")
        future: asyncio.Future[list[Verdict]] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Pending(list(texts), future))
        return await future

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """Run `fn(*args)` on the worker thread, between batches."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def guard(self) -> ClaimGuard:
        """The current guard (worker thread only). It follows the store's generation on
        disk by itself (`ClaimGuard.check_many`)."""
        assert self._guard is not None
        return self._guard

    def store(self) -> ClaimStore:
        """The current store (worker thread only)."""
        assert self._store is not None
        return self._store

    @property
    def reloads(self) -> int:
        """How often the store was reloaded because another process (or replica) wrote."""
        return self._store.reloads if self._store is not None else 0

    def after_write(self) -> None:
        """Drop the verdict cache after this process changed the store (worker thread)."""
        assert self._store is not None
        self._guard = self.make_guard(self._store)

    # -- internals -----------------------------------------------------------------------

    def _open(self) -> None:
        store = open_claim_store(self.db, self.embedder)
        self._guard = self.make_guard(store)
        self._store = store

    def _warm_up(self) -> None:
        """Load the embedder and the topic agent's centroids (embedded on first use)."""
        assert self._guard is not None
        self.embedder.embed(["warm-up"], "query")
        self._guard.topics.centroids("query")

    def _check_batch(self, texts: list[str]) -> list[Verdict]:
        started = time.perf_counter()
        reloads = self.reloads
        verdicts = self.guard().check_many(texts)
        if self.reloads != reloads:
            log.info("claim store %s changed on disk; serving generation %d", self.db, self.store().generation)
        self._last_batch_s = time.perf_counter() - started
        if self.on_batch is not None:
            self.on_batch(len(texts), self._last_batch_s)
        return verdicts

    async def _loop(self) -> None:
        assert self._queue is not None
        while True:
            batch = [await self._queue.get()]
            size = len(batch[0].texts)
            # Take what is queued. With a window, also wait for more while texts keep
            # arriving: one window at a time, up to max_batch or a quarter of the last
            # batch's duration. Without one (the default) the texts that arrive during a
            # check form the next batch: clients then fall into groups whose round trips
            # overlap the other group's check, instead of the embedder idling through them.
            waited, limit = 0.0, min(self.max_wait_s, max(self.window_s, 0.25 * self._last_batch_s))
            while size < self.max_batch:
                if self._queue.empty():
                    if self.window_s <= 0 or waited >= limit:
                        break
                    await asyncio.sleep(self.window_s)
                    waited += self.window_s
                    if self._queue.empty():
                        break
                    continue
                item = self._queue.get_nowait()
                batch.append(item)
                size += len(item.texts)
            live = [p for p in batch if not p.future.done()]  # a timed-out request left
            if not live:
                continue
            texts = [t for p in live for t in p.texts]
            try:
                verdicts = await self.run(self._check_batch, texts)
            except Exception as exc:  # noqa: BLE001 - handed to every waiting request
                for p in live:
                    if not p.future.done():
                        p.future.set_exception(exc)
                continue
            start = 0
            for p in live:
                if not p.future.done():
                    p.future.set_result(verdicts[start : start + len(p.texts)])
                start += len(p.texts)
