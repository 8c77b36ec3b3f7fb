"""`misguard memory ...` (scan, repair, log, roll back and verify a shared memory store)
and `misguard bench memory` / `memory-nl` (the poisoning detection and repair benchmarks)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from ..errors import ConfigError
from ._common import MEMORY, console, friendly_errors, print_checks, settings_from
from .bench import bench_app

memory_app = typer.Typer(
    help="Guard a shared agent memory: find poisoned records, repair them (nothing deleted), undo a repair.",
    no_args_is_help=True,
)
StoreArgument = Annotated[str, typer.Argument(help="The memory store: a SQLite file or postgresql://user@host/db.")]
ThresholdOption = Annotated[float, typer.Option(min=0.0, max=1.0, help="Records scored at or above it are flagged (1 - credibility).")]


memory_app = typer.Typer(help="Manage a shared agent memory store.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(memory_app, name="memory", rich_help_panel=MEMORY)


def _guard_for(store: Any, threshold: float) -> Any:
    """The guard for unlabelled memory: credibility (eq. 1) needs no training; evidence
    neighbours are searched on the state block when records carry the hashed features
    `SharedMemory` writes by default, else on the whole embedding."""
    from ..memory import HashedRecordFeaturizer, MemoryGuard

    records, emb = store.records_with_embeddings("active")
    if not records:
        raise ConfigError("the store holds no active records")
    hashed = HashedRecordFeaturizer()
    key_block = hashed.slices()["state"] if emb.ndim == 2 and emb.shape[1] == hashed.dim else None
    return MemoryGuard(threshold=threshold, key_block=key_block)


def _plan_words(counts: dict[str, int]) -> str:
    """A repair plan's counts in plain words."""
    return (f"quarantine {counts.get('quarantine', 0)}, rewrite {counts.get('rewrite', 0)} records, "
            f"dilute {counts.get('dilute', 0)} and prune {counts.get('prune', 0)} reuse edges")


@memory_app.command("scan")
@friendly_errors
def scan(
    store_url: StoreArgument,
    threshold: ThresholdOption = 0.5,
    top: Annotated[int, typer.Option(min=1, help="How many of the least credible records to list.")] = 10,
) -> None:
    """Score every active record (no labels needed) and say what a repair would do; changes nothing."""
    import numpy as np

    from ..memory import RecordArrays, open_store

    with open_store(store_url) as store:
        guard = _guard_for(store, threshold)
        records, emb = store.records_with_embeddings("active")
        arr = RecordArrays.from_records(records, emb=emb)
        scores = guard.score(arr)
        index = {rid: i for i, rid in enumerate(arr.ids)}
        edges = [e for e in store.edges() if e.dst_kind == "memory" and e.src in index and e.dst in index]
        plan = guard.plan(arr, scores, np.array([index[e.src] for e in edges], dtype=np.int64),
                          np.array([index[e.dst] for e in edges], dtype=np.int64))
        table = Table("record", "agent", "channel", "action", "score", title=f"least credible of {len(records)} active records")
        for i in np.argsort(-scores.p_poison)[:top]:
            r = records[int(i)]
            table.add_row(r.id[:12], r.provenance.agent, r.provenance.channel, r.action[:40], f"{scores.p_poison[i]:.2f}")
        console.print(table)
        console.print(f"{int((scores.p_poison >= threshold).sum())} flagged at {threshold}; a repair would "
                      f"{_plan_words(plan.counts)} (`misguard memory repair {store_url}` applies it)",
                      highlight=False, soft_wrap=True)


@memory_app.command("repair")
@friendly_errors
def repair(
    store_url: StoreArgument,
    threshold: ThresholdOption = 0.5,
    since: Annotated[Optional[float], typer.Option(help="Only records written at or after this time (provenance.time) may be repaired; older ones still serve as evidence.")] = None,
) -> None:
    """Repair the store along its reuse graph: quarantine, rewrite or dilute (audited, in one
    transaction, nothing deleted); `misguard memory rollback` undoes any entry."""
    from ..memory import open_store

    with open_store(store_url) as store:
        guard = _guard_for(store, threshold)
        _, _, plan, seqs = guard.guard_store(store, since=since)
        console.print(f"repaired: {_plan_words(plan.counts)}; audit entries {seqs[0]}..{seqs[-1]}" if seqs
                      else "nothing to repair", highlight=False, soft_wrap=True)


@memory_app.command("log")
@friendly_errors
def log(store_url: StoreArgument, last: Annotated[int, typer.Option(min=1, help="Entries to show, newest last.")] = 20) -> None:
    """The store's audit log: every repair action, with the number to roll it back by."""
    from ..memory import open_store

    with open_store(store_url) as store:
        entries = store.audit_log()[-last:]
    table = Table("seq", "action", "target", "actor", "reason")
    for e in entries:
        table.add_row(str(e.seq), e.action, str(e.target)[:16], e.actor, (e.reason or "")[:60])
    console.print(table)


@memory_app.command("rollback")
@friendly_errors
def rollback(store_url: StoreArgument, seq: Annotated[int, typer.Argument(help="The audit entry to undo (see `misguard memory log`).")]) -> None:
    """Undo one audit entry (a quarantine, rewrite, dilution or pruning); the undo is audited too."""
    from ..memory import open_store

    with open_store(store_url) as store:
        new = store.rollback(seq)
    console.print(f"rolled back entry {seq} (audit entry {new})")


@memory_app.command("verify")
@friendly_errors
def verify(
    store_url: StoreArgument,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Check a memory store: database integrity, heads against their version history, reuse
    edges, and that the audit log explains every status, version, weight and pruning.
    Exits 1 when a problem is found."""
    from ..memory import open_store

    if "://" not in store_url and not Path(store_url).is_file():
        raise ConfigError(f"no memory store at {store_url}; give a SQLite file or a postgresql:// URL")
    with open_store(store_url) as store:
        report = store.verify()
    print_checks(report, json_out)
    if not json_out:
        state = "ok" if report.ok else f"{len(report.problems)} problem(s)"
        console.print(f"{report.location}: {report.records} records, {report.edges} reuse edges, "
                      f"{report.audit_entries} audit entries: {state}", highlight=False)
    if not report.ok:
        raise typer.Exit(1)


def _ratios(ratio: float, ratios: str) -> list[float]:
    try:
        values = [float(r) for r in ratios.split(",") if r.strip()] if ratios else [ratio]
    except ValueError:
        raise ConfigError(f"--ratios must be comma-separated numbers, got {ratios!r}") from None
    if not values or any(not 0 < r < 1 for r in values):
        raise ConfigError("poisoning ratios must lie strictly between 0 and 1 (e.g. 0.05)")
    return values


@bench_app.command("memory")
@friendly_errors
def memory(
    ctx: typer.Context,
    ratio: Annotated[float, typer.Option(help="Poisoning ratio of the memory stream (0.05 = 5%).")] = 0.05,
    ratios: Annotated[str, typer.Option(help="Comma-separated ratios for Table 2 (overrides --ratio), e.g. 0.005,0.01,0.02,0.05,0.1.")] = "",
    type: Annotated[str, typer.Option("--type", help="Poisoning type: I (instruction injection), II (structural camouflage), III (cross-agent consistency).")] = "II",
    seeds: Annotated[int, typer.Option(help="Number of seeds (--first-seed .. --first-seed + N - 1).")] = 5,
    records: Annotated[int, typer.Option(help="Memory records per seed (the paper: ~210,000).")] = 20_000,
    scenarios: Annotated[int, typer.Option(help="Scenarios (task instances, 4-8 agents each) per seed.")] = 60,
    capabilities: Annotated[str, typer.Option(help="Adversary capabilities, e.g. C1,C2,C3 (C4 = adaptive; poison that hides: C5 credible provenance, C6 synonyms, C7 slow, C8 a notice to the guard).")] = "C1,C2,C3",
    backend: Annotated[str, typer.Option(help="Memory store: sqlite (embedded) or postgres.")] = "sqlite",
    postgres_url: Annotated[str, typer.Option(help="postgresql://user@host:port/db for --backend postgres.", envvar="MISGUARD_MEMORY__POSTGRES_URL")] = "",
    encoder_steps: Annotated[int, typer.Option(help="Contrastive training steps.")] = 300,
    methods: Annotated[str, typer.Option(help="Comma-separated detectors from the registry (default: all registered); 'proposed' always runs.")] = "",
    holdout_type: Annotated[bool, typer.Option("--holdout-type", help="Train and validate on the other two attack types; test on --type only.")] = False,
    eval_steps: Annotated[int, typer.Option(help="Evaluation cycles per test scenario (before and after repair).")] = 40,
    repair_rounds: Annotated[int, typer.Option(help="Repair passes over each test store before the evaluation episodes; each re-scores what the previous left.", min=1)] = 1,
    online_window: Annotated[int, typer.Option(help="Also rebuild each test scenario with the guard repairing the memory every N cycles while agents act (online containment; 0 = off).", min=0)] = 0,
    online_horizon: Annotated[int, typer.Option(help="Online passes may repair records of the last N cycles (0 = any active record).", min=0)] = 0,
    repair_upstream: Annotated[bool, typer.Option(help="This method's repair also retraces reuse paths upstream: contested records a repaired record reused are repaired too (the default; --no-repair-upstream is the paper's repair).")] = True,
    first_seed: Annotated[int, typer.Option(help="First seed (seeds first..first+N-1); tuning runs use seeds the reported runs do not.", min=0)] = 0,
    output: Annotated[Path, typer.Option(help="Directory for the run log, summary.json and stores.")] = Path("runs/bench-memory"),
) -> None:
    """Poison the shared memory of MPE agents, detect (eq. 1 + NT-Xent + eq. 4, and every registered
    detector) and repair (eq. 5); print Tables 1 and 2."""
    from ..bench.memory import BenchParams, render_tables, run_memory_bench

    kind = type.upper()
    if kind not in ("I", "II", "III"):
        raise ConfigError(f"--type must be I, II or III, got {type!r}")
    caps = tuple(c.strip().upper() for c in capabilities.split(",") if c.strip())
    if any(c not in ("C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8") for c in caps):
        raise ConfigError(f"--capabilities takes C1..C8, got {capabilities!r}")
    if backend not in ("sqlite", "postgres"):
        raise ConfigError(f"--backend must be sqlite or postgres, got {backend!r}")
    if backend == "postgres" and not postgres_url:
        raise ConfigError("--backend postgres needs --postgres-url postgresql://user@host:port/db")
    if seeds < 1 or records < 1000 or scenarios < 5:
        raise ConfigError("need --seeds >= 1, --records >= 1000 and --scenarios >= 5")
    settings = settings_from(ctx)
    values = _ratios(ratio, ratios)
    summaries = {}
    for r in values:
        params = BenchParams(ratio=r, kind=kind, seeds=seeds, records=records, scenarios=scenarios, capabilities=caps,
                             backend=backend, postgres_url=postgres_url, encoder_steps=encoder_steps,
                             methods=tuple(m.strip() for m in methods.split(",") if m.strip()), holdout=holdout_type,
                             eval_steps=eval_steps, repair_rounds=repair_rounds, online_window=online_window,
                             online_horizon=online_horizon, repair_upstream=repair_upstream, first_seed=first_seed)
        params.method_names()  # unknown detector names fail before any work
        out = output if len(values) == 1 else output / f"ratio-{r:g}"
        summaries[r] = run_memory_bench(settings, params, out, lambda msg: console.print(f"[dim]{msg}[/]"))
    for table in render_tables(summaries):
        console.print(table)
    if len(values) > 1:
        import json

        output.mkdir(parents=True, exist_ok=True)
        (output / "summary.json").write_text(json.dumps({f"{r:g}": s for r, s in summaries.items()}, indent=2, default=float))
    last = summaries[values[-1]]
    console.print(
        f"score throughput {last['timings']['score_records_per_s']:,.0f} records/s after embedding"
        f" ({last['timings'].get('score_records_per_cpu_s', float('nan')):,.0f} per CPU-second); "
        f"{last['timings']['total_s']:.0f} s per seed; summary: {output / 'summary.json'}"
    )


@bench_app.command("memory-nl")
@friendly_errors
def memory_nl(
    ctx: typer.Context,
    type: Annotated[str, typer.Option("--type", help="Poisoning type: I (instruction injection), II (camouflaged note), III (agreeing notes by two agents).")] = "II",
    seeds: Annotated[int, typer.Option(help="Number of seeds (--first-seed .. --first-seed + N - 1).", min=1)] = 2,
    first_seed: Annotated[int, typer.Option(help="First seed.", min=0)] = 0,
    facts: Annotated[int, typer.Option(help="Facts of the knowledge base the team is asked about (of 24 shipped).", min=2)] = 24,
    poisoned_facts: Annotated[int, typer.Option(help="Facts the attacker writes a poisoned note for.", min=1)] = 6,
    agents: Annotated[int, typer.Option(help="Agents in the team.", min=2)] = 4,
    observations: Annotated[int, typer.Option(help="Honest notes per fact, written by agents who looked it up.", min=1)] = 2,
    rounds: Annotated[int, typer.Option(help="Reuse rounds under attack (each: one question per fact, answered from memory).", min=1)] = 3,
    after_rounds: Annotated[int, typer.Option(help="Reuse rounds after repair, on the repaired and on an unrepaired copy.", min=1)] = 2,
    k: Annotated[int, typer.Option(help="Notes retrieved per question.", min=1)] = 4,
    threshold: Annotated[Optional[float], typer.Option(help="Guard threshold on 1 - credibility (default: best F1 on --tune-seeds tuning seeds, never the reported ones).")] = None,
    tune_seeds: Annotated[int, typer.Option(help="Tuning seeds (1000, 1001, ...) the threshold is chosen on.", min=1)] = 1,
    attacker_llm: Annotated[str, typer.Option(help="Model spec of the attacker that writes the poison (default: the agents' --llm).")] = "",
    output: Annotated[Path, typer.Option(help="Directory for the run log, summary.json and stores.")] = Path("runs/bench-memory-nl"),
) -> None:
    """Natural-language shared memory: LLM agents write and reuse notes, an LLM writes the poison;
    the memory guard (credibility, no LLM) detects and repairs. The agents' model is `--llm`
    (`misguard --llm local/qwen2.5-0.5b bench memory-nl`), any OpenAI-compatible URL included."""
    from ..bench.memory._nl import NLParams, render_nl, run_nl_bench
    from ..embed import get_embedder
    from ..llm import get_llm

    settings = settings_from(ctx)
    params = NLParams(kind=type.upper(), facts=facts, poisoned_facts=poisoned_facts, agents=agents, observations=observations,
                      rounds=rounds, after_rounds=after_rounds, k=k, threshold=threshold, tune_seeds=tune_seeds)
    llm = get_llm(None, settings.llm)
    attacker = get_llm(attacker_llm, settings.llm) if attacker_llm else None
    summary = run_nl_bench(settings, params, list(range(first_seed, first_seed + seeds)), output, llm=llm, attacker=attacker,
                           embedder=get_embedder(None, settings.embed), log=lambda msg: console.print(f"[dim]{msg}[/]"))
    console.print(render_nl(summary))
    console.print(f"summary: {output / 'summary.json'}")

