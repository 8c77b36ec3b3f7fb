"""The guard runner: concurrent checks gathered into batches, writes between batches."""

from __future__ import annotations

import asyncio

from misguard.embed import get_embedder
from misguard.service import GuardRunner

from .conftest import HASHING, threshold_guard


async def test_concurrent_checks_share_batches_and_keep_their_order(db):
    batches: list[int] = []
    runner = GuardRunner(str(db), get_embedder(None, HASHING), threshold_guard, max_batch=64,
                         on_batch=lambda n, s: batches.append(n))
    await runner.start()
    try:
        texts = [f"Goldfish can only remember things for three seconds, says post {i}" if i % 2 else
                 f"The bakery on the corner opens at seven, day {i}" for i in range(40)]
        results = await asyncio.gather(*(runner.check([t]) for t in texts))
        assert [r[0].flagged for r in results] == [bool(i % 2) for i in range(40)]
        assert sum(batches) == 40 and len(batches) < 10  # gathered, not one call per request
        many = await runner.check(texts[:3])
        assert [v.flagged for v in many] == [False, True, False]
        assert await runner.run(lambda: len(runner.store())) > 20
    finally:
        await runner.stop()
