"""How fast ARGUS chooses its channels on a large graph: `ArgusDefense.start_round` (the
call the runtime makes) on a random directed graph where every agent has `degree`
out-neighbours, for round 1 (edge betweenness) and a later round (goals and the previous
round's traffic: one message per agent, built from sentences of the shipped texts, so the
embedder's cache holds them after the first pass, as it does in a run). The rectifier is
never called here: only localization is timed."""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

import networkx as nx
from rich.console import Console
from rich.table import Table

from ...attacks import default_background
from ...config import Settings
from ...defenses import split_sentences
from ...embed import get_embedder
from ...llm import get_llm
from ...mas import DefenseContext, EventLog, EventLogView, SystemView, build_defense
from ...runlog import RunHeader, RunLog, public_settings
from ...mas import load_tasks, sample_tasks_path


def random_out_graph(n_agents: int, degree: int, seed: int) -> nx.DiGraph:
    """Every agent sends to `degree` distinct others chosen at random."""
    rng = random.Random(seed)
    agents = [f"agent_{i + 1}" for i in range(n_agents)]
    graph = nx.DiGraph()
    graph.add_nodes_from(agents)
    for a in agents:
        picked = [b for b in rng.sample(agents, min(degree + 1, n_agents)) if b != a][:degree]
        graph.add_edges_from((a, b) for b in picked)
    return graph


def _traffic_log(graph: nx.DiGraph, pool: list[str], poison: list[str], hijacked: str, seed: int) -> EventLog:
    rng = random.Random(seed)
    log = EventLog()
    for a in graph.nodes():
        targets = list(graph.successors(a))
        if not targets:
            continue
        source = poison if a == hijacked else pool
        text = " ".join(rng.sample(source, min(3, len(source))))
        log.add("message", round=1, id=f"r1-{a}", sender=a, receiver=rng.choice(targets), original=text,
                text=text, delivered=True, action="pass", metadata={})
    log.add("round_end", round=1)
    return log


def run_localization_bench(
    settings: Settings, output: Path, *, agents: int, degree: int, repeats: int, console: Console,
    defense_name: str = "argus",
) -> dict[str, Any]:
    embedder = get_embedder(None, settings.embed)
    tasks = load_tasks(sample_tasks_path())
    pool = [s for t in tasks for s in (*t.ground_truth, t.reference_solution)] + list(default_background())
    pool = [s for text in pool for s in split_sentences(text)]
    poison = [s for t in tasks[:1] for s in (t.misinfo_goal, *t.misinfo_argument)]
    graph = random_out_graph(agents, degree, settings.seed)
    hijacked = "agent_1"
    log = _traffic_log(graph, pool, poison, hijacked, settings.seed)
    (defense,) = build_defense(defense_name, DefenseContext(settings, {"worker": get_llm("mock")}, embedder))
    started = time.perf_counter()
    embedder.embed(sorted(set(pool + poison)), "query")  # what the run embedded as messages passed
    embed_s = time.perf_counter() - started
    defense.goals.add(tasks[0].misinfo_goal)
    view1 = SystemView(graph, 1, EventLogView(EventLog()), tuple(graph.nodes()))
    view2 = SystemView(graph, 2, EventLogView(log), tuple(graph.nodes()))
    first, later = [], []
    report2: dict[str, Any] = {}
    for _ in range(repeats):
        defense.localizer.clear_cache()  # round 1 computes the betweenness; later rounds reuse it
        t0 = time.perf_counter()
        asyncio.run(defense.start_round(view1))
        first.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        report2 = asyncio.run(defense.start_round(view2))
        later.append(time.perf_counter() - t0)
    channels = {tuple(c) for c in report2["localization"]["channels"]}
    hijacked_out = {(hijacked, b) for b in graph.successors(hijacked)}
    row = {
        "agents": agents, "edges": graph.number_of_edges(), "degree": degree, "repeats": repeats,
        "round1_s_median": statistics.median(first), "round1_s_max": max(first),
        "later_round_s_median": statistics.median(later), "later_round_s_max": max(later),
        "embed_unique_sentences_s": embed_s, "unique_sentences": len(set(pool + poison)),
        "channels": len(channels), "hijacked_edge_sent_last_round_monitored": bool(hijacked_out & channels),
        "betweenness": "igraph" if _has_igraph() else "networkx",
    }
    header = RunHeader(
        kind="bench.localization", settings=public_settings(settings),
        components={"embedder": embedder.describe(), "defense": defense.describe()}, seeds={"graph": settings.seed},
        params={"agents": agents, "degree": degree, "repeats": repeats, "defense": defense_name},
    )
    output.mkdir(parents=True, exist_ok=True)
    runlog = RunLog.open(output / "runlog.jsonl", header, resume=False)
    runlog.write("localization", key=f"{agents}:{degree}", **row)
    runlog.close()
    (output / "summary.json").write_text(json.dumps(row, indent=2))
    table = Table(title=f"ARGUS localization, {agents} agents, out-degree {degree} ({row['edges']} edges), {row['betweenness']}")
    for col in ("round 1 s (median)", "round 1 s (max)", "later round s (median)", "later round s (max)", "channels"):
        table.add_column(col, justify="right")
    table.add_row(f"{row['round1_s_median']:.3f}", f"{row['round1_s_max']:.3f}", f"{row['later_round_s_median']:.3f}",
                  f"{row['later_round_s_max']:.3f}", str(row["channels"]))
    console.print(table)
    console.print(f"embedding the {row['unique_sentences']} distinct sentences once took {embed_s:.2f} s (not in the round times)")
    return row


def _has_igraph() -> bool:
    try:
        import igraph  # noqa: F401
    except ImportError:
        return False
    return True
