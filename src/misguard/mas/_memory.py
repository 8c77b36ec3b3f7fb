"""Bounded short-term memory of one agent."""

from __future__ import annotations

from collections import deque


class ShortTermMemory:
    """The last `capacity` entries; adding to a full memory evicts the OLDEST entry.

    (The upstream ARGUS code evicts the newest, so an agent forgets everything after its
    fifth observation; we keep the recent past, which is what a short-term memory is for.)
    """

    def __init__(self, capacity: int = 5) -> None:
        if capacity < 1:
            raise ValueError("memory capacity must be >= 1")
        self.capacity = capacity
        self._entries: deque[str] = deque(maxlen=capacity)

    def add(self, entry: str) -> None:
        self._entries.append(entry)

    def entries(self) -> list[str]:
        """Oldest first."""
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
