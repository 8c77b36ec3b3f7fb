from __future__ import annotations

import pytest

from misguard.mas import ShortTermMemory


def test_memory_evicts_the_oldest_entry():
    memory = ShortTermMemory(capacity=3)
    for i in range(5):
        memory.add(f"e{i}")
    assert memory.entries() == ["e2", "e3", "e4"]
    assert len(memory) == 3


def test_memory_capacity_must_be_positive():
    with pytest.raises(ValueError):
        ShortTermMemory(0)
