"""Tools over finished MisInfoTask run directories (`misguard runs ...`): merge sweeps of one
configuration, pool the MT change over several task sets, count what a defense did per
message, and replay ARGUS's localization on recorded traffic."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...errors import ConfigError, DataError
from ...mas import EventLogView, SystemView, read_events
from ._report import METRICS, summarize
from ._stats import paired_reduction_ci


def _header(run: Path) -> tuple[dict[str, Any], list[str]]:
    path = run / "runlog.jsonl"
    if not path.is_file():
        raise ConfigError(f"{run} has no runlog.jsonl; pass directories written by `misguard bench misinfotask`")
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    if header.get("type") != "header" or header.get("kind") != "bench.misinfotask":
        raise DataError("not a `bench misinfotask` run log", source=str(path))
    return header, [line for line in lines[1:] if line.strip()]


def _configuration(header: Mapping[str, Any]) -> dict[str, Any]:
    """The identity less the run a re-judged sweep came from (each input has its own)."""
    identity = dict(header["params"]["identity"])
    if "rejudged" in identity:
        identity["rejudged"] = {k: v for k, v in identity["rejudged"].items() if k != "source_run_id"}
    return identity


def merge_sweeps(output: Path, sources: Sequence[Path]) -> dict[str, Any]:
    """One run directory from sweeps of one configuration on disjoint task sets (e.g. two
    processes side by side), which reports read like a single sweep. Refuses inputs of
    another configuration (data, models, attack, defense and its parameters, topology,
    rounds, judge) or with overlapping tasks. The header is the first input's, with the
    union of the tasks and the inputs under `merged_from`; records and event logs are copied."""
    if output.exists():
        raise ConfigError(f"{output} exists; give a new directory")
    if len(sources) < 2:
        raise ConfigError("give at least two run directories to merge")
    read = [_header(s) for s in sources]
    first = _configuration(read[0][0])
    tasks: list[int] = []
    for source, (header, _) in zip(sources, read):
        if _configuration(header) != first:
            raise ConfigError(f"{source}: another configuration than {sources[0]}; only sweeps of one configuration merge")
        overlap = set(tasks) & set(header["params"]["tasks"])
        if overlap:
            raise ConfigError(f"{source}: tasks {sorted(overlap)} are in an earlier input too")
        tasks += header["params"]["tasks"]
    merged = dict(read[0][0])
    merged["params"] = {**merged["params"], "tasks": sorted(tasks), "merged_from": [str(s) for s in sources],
                        "merged_run_ids": [h["run_id"] for h, _ in read]}
    staging = output.with_name(f".{output.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "events").mkdir(parents=True)
    for source in sources:
        for log in sorted((source / "events").glob("*.jsonl")):
            shutil.copy2(log, staging / "events" / log.name)
    with open(staging / "runlog.jsonl", "w", encoding="utf-8") as f:
        f.write(json.dumps(merged) + "\n")
        for _, records in read:
            f.writelines(line + "\n" for line in records)
    staging.rename(output)  # all or nothing
    return {"tasks": len(tasks), "sweeps": len(sources), "records": sum(len(r) for _, r in read)}


def pooled_change(pairs: Sequence[tuple[Path, Path]], seed: int = 0) -> list[dict[str, Any]]:
    """Per metric: the defense's MT change against attack-only, paired by task, over the union
    of several (attack-only, defense) pairs of sweeps on disjoint task sets, with a paired
    bootstrap interval (the statistic `runs report` gives per set)."""
    base: dict[str, dict[str, float]] = {}
    treated: dict[str, dict[str, float]] = {}
    for none_dir, defense_dir in pairs:
        for pooled, run_dir in ((base, none_dir), (treated, defense_dir)):
            _header(run_dir)
            for field, values in summarize(run_dir / "runlog.jsonl")["per_task"].items():
                overlap = set(pooled.setdefault(field, {})) & set(values)
                if overlap:
                    raise ConfigError(f"{run_dir}: tasks {sorted(overlap)} are already in another pair; task sets must be disjoint")
                pooled[field].update(values)
    rows = []
    for label, (field, _) in METRICS.items():
        d = paired_reduction_ci(base.get(field, {}), treated.get(field, {}), seed=seed)
        if not d["n"]:
            continue
        keys = sorted(set(base[field]) & set(treated[field]))
        rows.append({"metric": label, "n": d["n"],
                     "attack_only": sum(base[field][k] for k in keys) / len(keys),
                     "defense": sum(treated[field][k] for k in keys) / len(keys), **d})
    return rows


def defense_decisions(run: Path) -> dict[str, Any]:
    """What the defense did in every run of a sweep directory (from its event logs): messages
    checked, rewritten, blocked; sentences removed; rectifier answers and review flags; senders
    quarantined (and whether each is the agent the attack hijacked); messages kept from the
    concluder; and, per hijacked agent no message caught, its highest message risk."""
    per_run: dict[str, dict[str, int]] = {}
    notes: list[str] = []
    for path in sorted((run / "events").glob("*.jsonl")):
        log = read_events(path)
        events = [e for e in log.of_type("interception")]
        hijacked = {t for e in log.of_type("attack") for t in e.data.get("targets") or []}
        counts: Counter[str] = Counter()
        counts["agents"] = len(next(log.of_type("start")).data["agents"])
        counts["hijacked_agents"] = len(hijacked)
        for e in events:
            d = e.data["details"]
            counts["checked"] += 1
            counts["monitored"] += bool(d.get("monitored"))
            counts[e.data["action"]] += 1
            counts["rectifier_unusable"] += bool(d.get("rectifier_unusable"))
            counts["need_review"] += bool(d.get("need_review"))
            counts["sentences_removed"] += len(d.get("redacted") or [])
            counts["blocked_quarantined"] += e.data["action"] == "block" and "quarantined_in_round" in d
        caught = [e for e in events if e.data["details"].get("quarantined")]
        counts["quarantined"] = len(caught)
        counts["quarantined_hijacked"] = sum(e.data["sender"] in hijacked for e in caught)
        counts["concluder_hidden"] = sum(e.data["action"] == "block" for e in log.of_type("conclusion_review"))
        for e in caught:
            who = "hijacked" if e.data["sender"] in hijacked else "not hijacked"
            notes.append(f"{path.stem}: {e.data['sender']} ({who}) quarantined in round {e.round}")
        for agent in sorted(hijacked - {e.data["sender"] for e in caught}):
            risks = [e.data["details"]["risk"] for e in events if e.data["sender"] == agent and "risk" in e.data["details"]]
            notes.append(f"{path.stem}: hijacked {agent} not caught; highest message risk "
                         f"{max(risks, default=float('nan')):.3f} over {len(risks)} scored messages")
        per_run[path.stem] = dict(counts)
    total: Counter[str] = Counter()
    for counts in per_run.values():
        total.update(counts)
    return {"runs": per_run, "total": dict(total), "notes": notes}


def replay_localization(runs: Sequence[Path], overrides: Mapping[str, Any] | None = None,
                        embedder_spec: str | None = None) -> dict[str, Any]:
    """ARGUS's localization replayed on recorded ARGUS runs, scored against the hijacked
    agents' outgoing edges. Exact when the monitored channels changed no message (no
    rectifier LLM, redaction on every channel): each round's traffic, goals and risks are as
    recorded, so with no `overrides` every round reproduces its recorded channels."""
    import networkx as nx

    from ...config import ArgusSettings
    from ...defenses.argus import ArgusDefense, GoalSet, localization_quality, upgrade_params
    from ...embed import get_embedder
    from ...llm import get_llm

    embedder = get_embedder(embedder_spec or "e5")
    recall: dict[int, list[float]] = defaultdict(list)
    precision: dict[int, list[float]] = defaultdict(list)
    same = total = 0
    for run in runs:
        paths = sorted((run / "events").glob("task*-seed*.jsonl"))
        if not paths:
            raise ConfigError(f"{run} has no events/task*-seed*.jsonl")
        for path in paths:
            header = json.loads(path.open(encoding="utf-8").readline())
            config = header.get("config", {})
            if not str(config.get("defense", "")).startswith("argus"):
                raise ConfigError(f"{path}: not an ARGUS run")
            params = ArgusSettings(**{**upgrade_params(config["defense_params"]), **dict(overrides or {})})
            defense = ArgusDefense(get_llm("mock"), embedder, params)  # localization calls no LLM
            log = read_events(path)
            start = next(log.of_type("start")).data
            hijacked = next(log.of_type("attack")).data["targets"]
            graph = nx.DiGraph()
            graph.add_nodes_from(start["agents"])
            graph.add_edges_from(tuple(e) for e in start["edges"])
            for recorded in log.of_type("interceptor_round"):
                # the goal set as it stood when the round started (interceptions seed it)
                defense.goals = GoalSet(embedder, defense.goals.threshold)
                for goal in recorded.data["goals"]:
                    defense.goals.texts.append(goal)
                    defense.goals.vectors.append(embedder.embed([goal], "query")[0])
                view = SystemView(graph, recorded.round, EventLogView(log), tuple(start["agents"]))
                channels = [tuple(c) for c in asyncio.run(defense.start_round(view))["localization"]["channels"]]
                same += channels == [tuple(c) for c in recorded.data["localization"]["channels"]]
                total += 1
                q = localization_quality(channels, hijacked, list(graph.edges()))
                recall[recorded.round].append(q["recall"])
                precision[recorded.round].append(q["precision"])
    by_round = {r: {"tasks": len(recall[r]), "recall": sum(recall[r]) / len(recall[r]),
                    "precision": sum(precision[r]) / len(precision[r])} for r in sorted(recall)}
    return {"by_round": by_round, "reproduced": same, "rounds": total}
