"""`GuardedMemory` on its own: provenance, screening, quarantine, rewrite, rollback and a
`MemoryGuard` pass over framework writes (real SQLite store)."""

from __future__ import annotations

import pytest

from misguard.errors import ConfigError
from misguard.integrations import HIDDEN, UNKNOWN, GuardedMemory, MemoryVerdict


class Words:
    """Flags any write containing "poison"."""

    name = "words"

    def check(self, text: str) -> MemoryVerdict:
        return MemoryVerdict("poison" in text, "says poison" if "poison" in text else "")

    def describe(self):
        return {"name": self.name}


@pytest.fixture
def memory(tmp_path):
    m = GuardedMemory(tmp_path / "m.db", screens=[Words()])
    yield m
    m.store.close()


def test_reads_return_the_newest_active_write(memory):
    assert memory.resolve("ns", "k") is UNKNOWN
    memory.write("ns", "k", {"v": 1}, agent="a")
    bad = memory.write("ns", "k", {"v": "poison"}, agent="b")
    assert bad.quarantined and memory.resolve("ns", "k") == {"v": 1}
    memory.delete("ns", "k", agent="a")
    assert memory.resolve("ns", "k") is HIDDEN
    only_bad = memory.write("ns", "j", "poison pill", agent="b")
    assert memory.resolve("ns", "j") is HIDDEN
    memory.release(only_bad.record_id, "false alarm")
    assert memory.resolve("ns", "j") == "poison pill"


def test_provenance_links_a_write_to_what_its_agent_read_in_that_step(memory):
    first = memory.write("ns", "fact", "water boils at 100 C", agent="a")
    memory.resolve("ns", "fact", agent="b", step=3)
    derived = memory.write("ns", "summary", "so tea needs 100 C", agent="b", step=3)
    assert derived.read == (first.record_id,)
    (edge,) = memory.store.edges()
    assert (edge.src, edge.dst, edge.agent) == (first.record_id, derived.record_id, "b")
    memory.end_step("b", 3)
    assert memory.write("ns", "other", "x", agent="b", step=3).read == ()


def test_rewrite_and_rollback_keep_every_version(memory):
    w = memory.write("ns", "k", {"v": 1}, agent="a")
    seq = memory.rewrite(w.record_id, {"v": 2}, "fix")
    assert memory.resolve("ns", "k") == {"v": 2}
    memory.rollback(seq)
    assert memory.resolve("ns", "k") == {"v": 1}
    assert [r.action for r in memory.store.versions(w.record_id)] == ['{"v": 1}', '{"v": 2}', '{"v": 1}']
    assert [e.type for e in memory.log.events] == ["memory_write", "memory_rewrite", "memory_rollback"]


def test_a_memory_guard_pass_repairs_framework_writes(memory):
    from misguard.memory import MemoryGuard

    for i in range(6):
        memory.write("ns", "door", "open", agent=f"a{i}")
    odd = memory.write("ns", "door", "closed", agent="x")
    counts = memory.repair(MemoryGuard(threshold=0.5, repair="isolate"))
    assert counts["quarantine"] >= 1 and memory.store.status(odd.record_id) == "quarantined"
    assert memory.resolve("ns", "door") == "open"


def test_a_store_reopened_keeps_the_index(tmp_path):
    first = GuardedMemory(tmp_path / "m.db")
    first.write("ns", "k", "v1", agent="a")
    first.store.close()
    again = GuardedMemory(tmp_path / "m.db")
    assert again.resolve("ns", "k") == "v1"
    with pytest.raises(ConfigError, match="not a memory screen"):
        GuardedMemory(tmp_path / "n.db", screens=[object()])  # type: ignore[list-item]
