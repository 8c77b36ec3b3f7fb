"""Demo section: a small poisoned shared memory, its detection and its repair."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..config import Settings
from ..types import MemoryRecord, Provenance


def _e5_walkthrough(settings: Settings, console: Console, folder: Path) -> None:
    """Agents share memories embedded with the configured embedder (e5); retrieval is recorded."""
    from ..embed import get_embedder
    from ..memory import SharedMemory, open_store

    embedder = get_embedder(None, settings.embed)
    with open_store(folder / "walkthrough.db") as store:
        memory = SharedMemory(store, embed_texts=lambda texts: embedder.embed(list(texts), "passage"))
        situation = "pos=2,3; goal=6,3; obstacle=none"
        good = [MemoryRecord(state=situation, context="task=path; reach the goal", action="move east", tags=["nav"],
                             provenance=Provenance(agent=f"agent-{i}"), confidence=0.9, success=1.0) for i in range(3)]
        poison = MemoryRecord(state=situation, context="task=path; reach the goal", action="move west", tags=["nav"],
                              provenance=Provenance(agent="agent-3", channel="tool-output"), confidence=0.97, success=1.0)
        memory.write(good + [poison])
        hits = memory.retrieve(situation, "task=path; reach the goal", agent="agent-1", k=4)
        action, share = memory.vote(hits)
        console.print(f"{embedder.spec}: 4 memories for one situation (one poisoned: 'move west'); agent-1 retrieves "
                      f"{len(hits)}, votes {action!r} ({share:.0%}); {len(store.edges())} reuse edges recorded")


def run(settings: Settings, console: Console) -> None:
    from ..bench.memory import BenchParams, render_tables, run_memory_bench

    with tempfile.TemporaryDirectory(prefix="misguard-memory-demo-") as tmp:
        folder = Path(tmp)
        _e5_walkthrough(settings, console, folder)
        # One baseline and a smaller store keep the section under a minute; `misguard bench
        # memory` runs every registered detector at full size.
        params = BenchParams(ratio=0.05, kind="II", seeds=1, records=4000, scenarios=8, encoder_steps=80, eval_steps=24,
                             methods=("isolation_forest",))
        console.print(f"Benchmark run: {params.records} memory records written by PettingZoo MPE agents (simple_spread, "
                      f"4-8 agents) acting from shared memory in {params.scenarios} scenarios, 5% Type II poisoning "
                      "(copies of genuine records with the action shifted), real SQLite stores")
        started = time.perf_counter()
        summary = run_memory_bench(settings, params, folder / "bench", lambda msg: console.print(f"[dim]{msg}[/]"))
        for table in render_tables({params.ratio: summary})[:1]:
            console.print(table)
        store_db = next((folder / "bench").glob("seed*/eval-proposed-*.db"))
        from ..memory import open_store

        with open_store(store_db) as store:
            log = store.audit_log()
            kinds = Table(title=f"audit log of the repaired store ({store.count()} records kept, none deleted)")
            kinds.add_column("action")
            kinds.add_column("entries")
            for name in sorted({e.action for e in log}):
                kinds.add_row(name, str(sum(e.action == name for e in log)))
            console.print(kinds)
            if log:
                first = log[0]
                store.rollback(first.seq)
                console.print(f"rollback of audit entry {first.seq} ({first.action} {first.target}): status now "
                              f"{store.status(first.target) if first.action == 'quarantine' else 'restored'}")
        console.print(
            f"misbehavior {summary['misbehavior_before']:.1%} -> {summary['misbehavior_after']:.1%}, "
            f"propagation {summary['hops_before']:.2f} -> {summary['hops_after']:.2f} hops, AUC {summary['auc']:.3f}, "
            f"FPR {summary['fpr']:.1%} (one seed, {time.perf_counter() - started:.0f} s; "
            "the benchmark is `misguard bench memory`)"
        )
