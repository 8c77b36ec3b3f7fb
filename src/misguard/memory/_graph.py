"""The memory propagation graph over record indices, and hop distances on it."""

from __future__ import annotations

from collections import deque

import numpy as np


def hop_distances(n: int, src: np.ndarray, dst: np.ndarray, origins: np.ndarray, blocked: np.ndarray | None = None) -> np.ndarray:
    """Shortest directed hop count from the nearest origin to every node (-1 if unreachable).

    `blocked` nodes neither receive nor pass influence (quarantined records): edges out of
    them are ignored, which is how isolation cuts a propagation path.
    """
    order = np.argsort(src, kind="stable")
    s, d = src[order], dst[order]
    starts = np.searchsorted(s, np.arange(n + 1))
    dist = np.full(n, -1, dtype=np.int64)
    queue: deque[int] = deque()
    for o in np.flatnonzero(origins):
        if blocked is not None and blocked[o]:
            continue
        dist[o] = 0
        queue.append(int(o))
    while queue:
        u = queue.popleft()
        for v in d[starts[u]:starts[u + 1]]:
            if dist[v] < 0 and (blocked is None or not blocked[v]):
                dist[v] = dist[u] + 1
                queue.append(int(v))
    return dist


def mean_hops(dist: np.ndarray, affected: np.ndarray) -> float:
    """Mean hop count over affected nodes reached from an origin (0.0 when none are)."""
    reach = affected & (dist > 0)
    return float(dist[reach].mean()) if reach.any() else 0.0
