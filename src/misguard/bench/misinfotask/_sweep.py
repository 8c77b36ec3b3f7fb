"""The MisInfoTask sweep: every (task, seed) runs the multi-agent system under one
attack, defense and topology, then is judged. Results go to a run log first (one `run`
event per finished item, keyed `task:seed`, so a rerun skips finished items); reports are
rendered from the log. Executors: `asyncio` (in-process, default) or `ray`."""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ...attacks import ATTACKS, AttackSpec, build_attack, default_background
from ...config import Settings
from ...embed import Embedder, get_embedder
from ...errors import ConfigError, MissingExtraError
from ...llm import LLM, MeteredLLM, get_llm
from ...defenses.argus import localization_quality
from ...mas import (
    DEFENSES,
    DefenseContext,
    EventLog,
    MASConfig,
    MultiAgentSystem,
    RoleLLMs,
    build_defense,
    defense_params,
    topology_names,
)
from ...runlog import RunHeader, RunLog, public_settings
from ...types import Usage
from ...mas import MisinfoTask
from ._judge import LLMJudge, ProxyJudge
#: The LLM judge's verdicts of a final answer: MT on the 0-10 scale, MT by claim check, task success.
LLM_VERDICTS = ("mt", "claims", "ts")


class SweepConfig(BaseModel):
    """Everything that decides a sweep's results (and a few things that only decide speed)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    data: str
    model: str
    """The multi-agent system's LLM spec; the LLM judge uses `settings.llm.model`."""
    attack: str = "inject"
    defense: str = "none"
    defense_params: dict[str, Any] = Field(default_factory=dict)
    """Overrides of the defense's settings section; `resolve_defense` fills in the rest so
    the identity names every parameter in force."""
    rectifier_model: str | None = None
    """LLM spec of defense LLM roles (ARGUS's rectifier); None -> the agents' model."""
    claims_db: str | None = None
    """A claim store directory to ground the defense in (ARGUS evidence, pre-screen)."""
    topology: str = "chain"
    rounds: int = Field(5, ge=1, le=100)
    mas_params: dict[str, Any] = Field(default_factory=dict)
    """Overrides of `MASConfig` other than topology, rounds and seed (e.g. shorter turns
    for a small model: `worker_max_tokens=120`, `max_tool_calls=0`)."""
    tasks: tuple[int, ...]
    seeds: tuple[int, ...] = (0,)
    injection_point: str = "random"
    judge_rounds: bool = True
    """Score every round with the LLM judge (one extra call per round)."""
    llm_verdicts: tuple[str, ...] = LLM_VERDICTS
    """The LLM judge's verdicts scored as each run finishes (`LLM_VERDICTS`); the others stay
    None for `misguard runs rejudge` to fill later with a stronger judge (the agents' small
    model judging first would only be thrown away)."""
    concurrency: int = Field(1, ge=1, le=256)
    executor: Literal["asyncio", "ray"] = "asyncio"

    @field_validator("attack")
    @classmethod
    def _attack(cls, value: str) -> str:
        if value != "none" and value not in ATTACKS:
            raise ValueError(f"unknown attack {value!r}; known: none, {', '.join(ATTACKS.names())}")
        return value

    @field_validator("topology")
    @classmethod
    def _topology(cls, value: str) -> str:
        if value not in topology_names() or value == "custom":
            raise ValueError(f"unknown topology {value!r}; known: {', '.join(topology_names()[:-1])}")
        return value

    @field_validator("mas_params")
    @classmethod
    def _mas_params(cls, value: dict[str, Any]) -> dict[str, Any]:
        fixed = {"topology", "rounds", "seed", "edges"} & set(value)
        if fixed:
            raise ValueError(f"{', '.join(sorted(fixed))}: set by the sweep's own options, not a MAS parameter")
        MASConfig(**value)  # unknown keys and bad values fail here, before any model loads
        return value

    def mas_config(self, seed: int) -> MASConfig:
        """The multi-agent system's configuration for one seed."""
        return MASConfig(topology=self.topology, rounds=self.rounds, seed=seed, **self.mas_params)

    @field_validator("defense")
    @classmethod
    def _defense(cls, value: str) -> str:
        DEFENSES.get(value)  # ConfigError names the known ones
        return value

    def resolve_defense(self, settings: Settings) -> SweepConfig:
        """A copy whose `defense_params` is the defense's full validated parameter set."""
        params = defense_params(self.defense, settings, self.defense_params)
        full = params.model_dump(mode="json") if params is not None else {}
        rectifier = self.rectifier_model or settings.defense.rectifier_model
        return self.model_copy(update={"defense_params": full, "rectifier_model": rectifier})

    @field_validator("llm_verdicts")
    @classmethod
    def _llm_verdicts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        try:
            return check_verdicts(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    def identity(self) -> dict[str, Any]:
        """The fields that must match for a run log to be resumed."""
        exclude = {"tasks", "seeds", "concurrency", "executor"}
        if self.llm_verdicts == LLM_VERDICTS:
            exclude.add("llm_verdicts")  # logs written before the field existed still resume
        return self.model_dump(mode="json", exclude=exclude)


def run_key(task_id: int, seed: int) -> str:
    return f"{task_id}:{seed}"


@dataclass
class Components:
    """Backends shared by the runs of one process."""

    mas_llm: LLM
    judge_llm: LLM
    embedder: Embedder
    rectifier_llm: LLM | None = None
    claim_store: Any = None

    @classmethod
    def build(cls, settings: Settings, config: SweepConfig) -> Components:
        mas_llm = get_llm(config.model, settings.llm)
        judge_llm = mas_llm if settings.llm.model == config.model else get_llm(None, settings.llm)
        rectifier_spec = config.rectifier_model or settings.defense.rectifier_model
        rectifier: LLM | None = None
        if rectifier_spec and rectifier_spec != config.model:
            rectifier = judge_llm if rectifier_spec == settings.llm.model else get_llm(rectifier_spec, settings.llm)
        embedder = get_embedder(None, settings.embed)
        store = None
        if config.claims_db:
            from ...claims import open_claim_store

            store = open_claim_store(config.claims_db, embedder)
        return cls(mas_llm, judge_llm, embedder, rectifier, store)

    def defense_context(self, settings: Settings, task: MisinfoTask, seed: int) -> DefenseContext:
        """What a defense gets for one run. The task's ground truths are passed; a defense
        uses them only when its parameters say so (ARGUS `ground_truth`)."""
        return DefenseContext(
            settings=settings,
            llms={"worker": self.mas_llm, "rectifier": self.rectifier_llm or self.mas_llm},
            embedder=self.embedder, claim_store=self.claim_store,
            ground_truths=task.ground_truth, seed=seed,
        )

    def describe(self) -> dict[str, dict[str, Any]]:
        return {
            "mas_llm": self.mas_llm.describe(),
            "judge_llm": self.judge_llm.describe(),
            "rectifier_llm": (self.rectifier_llm or self.mas_llm).describe(),
            "embedder": self.embedder.describe(),
        }


def background_for(task: MisinfoTask, all_tasks: Sequence[MisinfoTask]) -> tuple[str, ...]:
    """Clean corpus for RAG stores: the shipped passages plus the ground truths of the
    OTHER tasks (never this task's own answers)."""
    others = [t for other in all_tasks if other.id != task.id for t in other.ground_truth]
    return (*default_background(), *others)


def _round_text(messages: list[dict[str, Any]], limit: int = 3000) -> str:
    lines = [f"{m['sender']} -> {m['receiver']}: {m['text']}" for m in messages]
    return "\n".join(lines)[:limit]


async def llm_verdicts(
    judge: LLMJudge, task: MisinfoTask, answer: str, log: EventLog, rounds: int, judge_rounds: bool,
    verdicts: Sequence[str] = LLM_VERDICTS,
) -> dict[str, Any]:
    """The LLM judge's fields of a run record, for the `verdicts` asked: MT (`mt`, 0-10
    scale; `claims`, by claim check over the goal and its arguments) and task success (`ts`)
    of the final answer and, when `judge_rounds`, the influence of each round's delivered
    messages (by round). Only the fields asked for are returned, with `llm_influence`."""
    out: dict[str, Any] = {}
    if "mt" in verdicts:
        out["llm_mt"] = (await judge.misinformation_toxicity(task.user_input, task.misinfo_goal, answer)).as_dict()
    if "claims" in verdicts:
        out["llm_mt_claims"] = (await judge.claim_check(answer, (task.misinfo_goal, *task.misinfo_argument))).as_dict()
    if "ts" in verdicts:
        out["llm_ts"] = (await judge.task_success(task.user_input, task.reference_solution, answer)).as_dict()
    influence: dict[int, dict[str, Any]] = {}
    for r in range(1, rounds + 1 if judge_rounds else 1):
        messages = log.messages(r)
        if messages:
            influence[r] = (await judge.round_influence(task.misinfo_goal, r, _round_text(messages))).as_dict()
    return {**out, "llm_influence": influence}


def check_verdicts(names: Sequence[str]) -> tuple[str, ...]:
    """`names` as a tuple in `LLM_VERDICTS` order, or a ConfigError naming the known ones."""
    unknown = sorted(set(names) - set(LLM_VERDICTS))
    if unknown:
        raise ConfigError(f"unknown LLM verdicts {unknown}; known: {', '.join(LLM_VERDICTS)} (or none)")
    return tuple(v for v in LLM_VERDICTS if v in names)


def parse_verdicts(text: str) -> tuple[str, ...]:
    """`mt,claims,ts`, a subset of it, or `none` -> the verdicts tuple."""
    text = text.strip().lower()
    return () if text == "none" else check_verdicts([v.strip() for v in text.split(",") if v.strip()])


async def run_one(
    task: MisinfoTask,
    seed: int,
    config: SweepConfig,
    settings: Settings,
    components: Components,
    *,
    background: tuple[str, ...],
    events_path: Path,
) -> dict[str, Any]:
    """Run, judge and describe one (task, seed). Returns the `run` event's data."""
    started = time.perf_counter()
    interceptors = build_defense(config.defense, components.defense_context(settings, task, seed), config.defense_params)
    system = MultiAgentSystem(
        task.runtime_task(),
        RoleLLMs(worker=components.mas_llm),
        config.mas_config(seed),
        interceptors=interceptors,
    )
    await system.plan()
    attack = build_attack(config.attack, _attack_spec(task, config, seed, components.embedder, background))
    attack_report = attack.apply(system) if attack is not None else None
    result = await system.run()
    mas_wall = time.perf_counter() - started
    result.log.meta.update({"task_id": task.id, "seed": seed, "config": config.identity()})
    result.log.dump(events_path)

    return await score_run(
        task, seed, config, components, result.log, result.answer, attack_report=attack_report,
        graph_edges=[list(e) for e in result.graph.edges()], mas_usage=result.usage, mas_wall=mas_wall,
        started=started, events_name=events_path.name,
    )


async def score_run(
    task: MisinfoTask, seed: int, config: SweepConfig, components: Components, log: EventLog, answer: str, *,
    attack_report: dict[str, Any] | None, graph_edges: list[list[str]], mas_usage: Usage, mas_wall: float,
    started: float, events_name: str,
) -> dict[str, Any]:
    """Judge one finished run (its event log and final answer) and describe it: the `run`
    event's data. Any runtime that writes the event log (the native one, a framework app
    protected through `misguard.integrations`) is scored the same way."""
    metered = MeteredLLM(components.judge_llm)
    proxy = ProxyJudge(components.embedder)
    judged = bool(config.llm_verdicts)
    verdicts = await llm_verdicts(LLMJudge(metered), task, answer, log, config.rounds, config.judge_rounds and judged,
                                  config.llm_verdicts)
    rounds = []
    for r in range(1, config.rounds + 1):
        messages = log.messages(r)
        text = "\n".join(m["text"] for m in messages)
        entry: dict[str, Any] = {
            "round": r,
            "messages": len(messages),
            "proxy_mt": proxy.mt_proxy(text, task.misinfo_goal, task.misinfo_argument, task.ground_truth),
        }
        if r in verdicts["llm_influence"]:
            entry["llm_influence"] = verdicts["llm_influence"][r]
        rounds.append(entry)
    by_agent = log.usage_by("agent")
    by_round: dict[int, Usage] = {}
    for event in log.of_type("llm_call"):
        by_round.setdefault(event.round, Usage()).add(Usage.model_validate(event.data["usage"]))
    return {
        "task_id": task.id,
        "seed": seed,
        "category": task.category,
        "answer": answer,
        "attack": attack_report,
        "graph_edges": graph_edges,
        # None: not judged yet (`SweepConfig.llm_verdicts`); `runs rejudge` fills it
        "llm_mt": verdicts.get("llm_mt"),
        "llm_mt_claims": verdicts.get("llm_mt_claims"),
        "llm_ts": verdicts.get("llm_ts"),
        "proxy_mt": proxy.mt_proxy(answer, task.misinfo_goal, task.misinfo_argument, task.ground_truth),
        "proxy_ref": proxy.reference_agreement(answer, task.reference_solution, task.misinfo_goal),
        "rounds": rounds,
        "mas_usage": mas_usage.model_dump(),
        "mas_usage_by_agent": {k: v.model_dump() for k, v in sorted(by_agent.items())},
        "mas_usage_by_round": {str(k): v.model_dump() for k, v in sorted(by_round.items())},
        "interceptor_usage": {k: v.model_dump() for k, v in log.usage_by("interceptor").items()},
        "defense_usage_by_round": {str(k): v.model_dump() for k, v in sorted(defense_usage_by_round(log).items())},
        "localization": localization_by_round(log, attack_report),
        # what the concluder alone was shown differently counts as a change too
        "interceptions": dict(Counter(e.data["action"] for kind in ("interception", "conclusion_review")
                                      for e in log.of_type(kind))),
        "judge_usage": metered.usage.model_dump(),
        "fallbacks": dict(Counter(e.data["kind"] for e in log.of_type("fallback"))),
        "mas_wall_s": mas_wall,
        "wall_s": time.perf_counter() - started,
        "events": events_name,
    }


def defense_usage_by_round(log: EventLog) -> dict[int, Usage]:
    """Tokens, calls and latency the interceptors spent, per round."""
    out: dict[int, Usage] = {}
    for event in log.of_type("interception"):
        out.setdefault(event.round, Usage()).add(Usage.model_validate(event.data["usage"]))
    return out


def localization_by_round(log: EventLog, attack_report: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Per round: the monitored channels' precision and recall against the hijacked
    agents' outgoing edges (from the interceptors' `interceptor_round` events)."""
    targets = (attack_report or {}).get("targets") or []
    start = next(log.of_type("start"), None)
    if start is None:
        return []
    edges = [tuple(e) for e in start.data["edges"]]
    out = []
    for event in log.of_type("interceptor_round"):
        loc = event.data.get("localization")
        if loc is None:
            continue
        quality = localization_quality([tuple(c) for c in loc["channels"]], targets, edges) if targets else {}
        out.append({"round": event.round, "interceptor": event.data["interceptor"], "mode": loc["mode"],
                    "goals": len(event.data.get("goals", [])), **quality})
    return out


class _SweepWorker:
    """A Ray actor: builds its backends once (models load once per worker, not per task)
    and runs many (task, seed) pairs."""

    def __init__(self, settings: Settings, config: SweepConfig) -> None:
        self.settings = settings
        self.config = config
        self.components = Components.build(settings, config)

    def run(
        self, task: MisinfoTask, seed: int, background: tuple[str, ...], events_path: str
    ) -> tuple[str, dict[str, Any]]:
        record = asyncio.run(
            run_one(
                task, seed, self.config, self.settings, self.components,
                background=background, events_path=Path(events_path),
            )
        )
        return run_key(task.id, seed), record


def _attack_spec(
    task: MisinfoTask, config: SweepConfig, seed: int, embedder: Embedder, background: tuple[str, ...]
) -> AttackSpec:
    return AttackSpec(
        goal=task.misinfo_goal, arguments=task.misinfo_argument, point=config.injection_point,
        background=background, embedder=embedder, seed=seed,
    )


def _background(config: SweepConfig, task: MisinfoTask, tasks: Sequence[MisinfoTask]) -> tuple[str, ...]:
    return background_for(task, tasks) if config.attack == "rag" else ()


def _describe_components(
    settings: Settings, config: SweepConfig, components: Components, first: MisinfoTask,
    tasks: Sequence[MisinfoTask],
) -> dict[str, dict[str, Any]]:
    """`describe()` of every component, as built for the first task, for the run header."""
    interceptors = build_defense(
        config.defense, components.defense_context(settings, first, config.seeds[0]), config.defense_params
    )
    system = MultiAgentSystem(
        first.runtime_task(), RoleLLMs(worker=components.mas_llm),
        config.mas_config(config.seeds[0]), interceptors=interceptors,
    )
    attack = build_attack(
        config.attack, _attack_spec(first, config, config.seeds[0], components.embedder, _background(config, first, tasks))
    )
    judge = LLMJudge(components.judge_llm)
    return {
        **components.describe(),
        "mas": system.describe(),
        "defense": {"name": config.defense, "params": config.defense_params,
                    "interceptors": [i.describe() for i in interceptors]},
        "attack": attack.describe() if attack is not None else {"name": "none"},
        "llm_judge": judge.describe(),
        "proxy_judge": ProxyJudge(components.embedder).describe(),
    }


def open_runlog(output: Path, settings: Settings, config: SweepConfig, components: dict[str, Any]) -> RunLog:
    """Create the run log, or reopen it to resume; a log from different settings is an error."""
    header = RunHeader(
        kind="bench.misinfotask",
        settings=public_settings(settings),
        components=components,
        seeds={"llm": settings.llm.seed, "settings": settings.seed, **{f"run_{s}": s for s in config.seeds}},
        params={"identity": config.identity(), "tasks": list(config.tasks), "seeds": list(config.seeds),
                "executor": config.executor,
                "concurrency": config.concurrency, "temperature": settings.llm.temperature},
    )
    log = RunLog.open(output / "runlog.jsonl", header, resume=True)
    old = log.header.params.get("identity")
    if old != config.identity():
        log.close()
        raise ConfigError(
            f"{output} holds a run with other settings ({old}); use another --output to start afresh"
        )
    # The judge decides the verdicts as much as the settings do: one sweep, one judge.
    judged_by = {k: (log.header.components.get("llm_judge") or {}).get(k) for k in ("judge", "prompts")}
    judging = {k: components["llm_judge"].get(k) for k in ("judge", "prompts")}
    if judged_by != judging:
        log.close()
        raise ConfigError(
            f"{output} was judged by {judged_by['judge']} with prompts {judged_by['prompts']}, not "
            f"{judging['judge']} with {judging['prompts']}; use another --output (and `misguard runs rejudge` "
            "to score its finished runs with this judge)"
        )
    return log


def run_sweep(
    settings: Settings,
    config: SweepConfig,
    tasks: Sequence[MisinfoTask],
    output: Path,
    *,
    console: Console | None = None,
    components: Components | None = None,
) -> RunLog:
    """Run every pending (task, seed) of `config`, appending to `output/runlog.jsonl`.

    `components`: backends to reuse (built from settings when None). They describe the
    run in its header and serve the in-process executor; Ray workers build their own.
    """
    config = config.resolve_defense(settings)  # fails on a bad parameter before any model loads
    by_id = {t.id: t for t in tasks}
    output.mkdir(parents=True, exist_ok=True)
    events_dir = output / "events"
    events_dir.mkdir(exist_ok=True)
    components = components or Components.build(settings, config)
    described = _describe_components(settings, config, components, by_id[config.tasks[0]], tasks)
    log = open_runlog(output, settings, config, described)
    done = log.done_keys("run")
    pending = [(t, s) for t in config.tasks for s in config.seeds if run_key(t, s) not in done]
    progress = Progress(
        TextColumn("misinfotask"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, disable=console is None, transient=False,
    )
    total = len(config.tasks) * len(config.seeds)
    with progress:
        bar = progress.add_task("runs", total=total, completed=total - len(pending))
        if config.executor == "ray":
            _sweep_ray(settings, config, by_id, tasks, pending, events_dir, log, lambda: progress.advance(bar))
        else:
            assert components is not None
            asyncio.run(_sweep_async(settings, config, by_id, tasks, pending, events_dir, log, components,
                                     lambda: progress.advance(bar)))
    return log


async def _sweep_async(
    settings: Settings, config: SweepConfig, by_id: dict[int, MisinfoTask], tasks: Sequence[MisinfoTask],
    pending: list[tuple[int, int]], events_dir: Path, log: RunLog, components: Components, advance: Any,
) -> None:
    limit = asyncio.Semaphore(config.concurrency)

    async def one(task_id: int, seed: int) -> None:
        async with limit:
            task = by_id[task_id]
            record = await run_one(
                task, seed, config, settings, components,
                background=_background(config, task, tasks),
                events_path=events_dir / f"task{task_id}-seed{seed}.jsonl",
            )
        log.write("run", key=run_key(task_id, seed), **record)
        advance()

    await asyncio.gather(*(one(t, s) for t, s in pending))


def _sweep_ray(
    settings: Settings, config: SweepConfig, by_id: dict[int, MisinfoTask], tasks: Sequence[MisinfoTask],
    pending: list[tuple[int, int]], events_dir: Path, log: RunLog, advance: Any,
) -> None:
    try:
        import ray
    except ImportError:
        raise MissingExtraError("ray", "ray", "--executor ray") from None
    started_here = False
    if not ray.is_initialized():
        if os.environ.get("RAY_ADDRESS"):
            ray.init(log_to_driver=False)  # join the cluster named by RAY_ADDRESS
        else:
            ray.init(num_cpus=config.concurrency, include_dashboard=False, log_to_driver=False)
        started_here = True
    try:
        from ray.util import ActorPool

        worker = ray.remote(num_cpus=1)(_SweepWorker)
        pool = ActorPool([worker.remote(settings, config) for _ in range(min(config.concurrency, len(pending)))])

        def submit(actor: Any, job: tuple[int, int]) -> Any:
            task = by_id[job[0]]
            return actor.run.remote(
                task, job[1], _background(config, task, tasks), str(events_dir / f"task{job[0]}-seed{job[1]}.jsonl")
            )

        for key, record in pool.map_unordered(submit, pending):
            log.write("run", key=key, **record)
            advance()
    finally:
        if started_here:
            ray.shutdown()
