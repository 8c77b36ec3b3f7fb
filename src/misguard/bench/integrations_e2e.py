"""MisInfoTask end to end on the frameworks (`misguard bench integration-e2e`): each task
runs as a LangGraph app and as an OpenAI Agents SDK app, attack only and protected through
`misguard.integrations` (`protect(...)`), next to the native runtime on the same tasks, model
and seeds; every run is judged and reported as a native sweep is.

The apps are built from the task exactly as the native runtime plans it: the planner's
subtasks, the topology's agents and edges, the attack applied to the planned system (the
hijacked agent's injection), and each worker turn's prompt and answer parsing taken from
the runtime (`MultiAgentSystem.turn_prompt` / `turn_reply`), so the apps differ from the
native run only in what the comparison is about: how messages travel between agents (the
framework's state or runs), who screens them (the adapter) and the model client.

- LangGraph: one node per agent, one inbox channel per agent (a node reads only its own,
  `input_schema`), the topology's edges declared as each node's `destinations`. The graph
  is invoked once per round on a checkpointed thread: every node acts once per superstep,
  as every worker acts once per native round. The adapter screens what a node reads when
  it runs, so the messages of round r are screened in superstep r + 1 (the adapter's round
  r); one last superstep only reads, so that the last round's messages are screened too.
  A message the adapter blocks reaches the node as the placeholder text (LangGraph cannot
  drop state); the node skips it, as the native runtime drops a blocked message.
- Agents SDK: one `Agent` per agent, its handoffs the topology's edges; one `Runner.run`
  per agent per round, its queued messages passed as the assistant items their senders'
  runs produced (the adapter screens them in `on_llm_start`; a block removes the item).
  `round_key` makes all of a round's runs one round. Each agent's model is a thin `Model`
  that renders the runtime's turn prompt around the message it reads and asks the SDK's
  `OpenAIChatCompletionsModel` for the answer (same JSON schema, temperature, seed).

Both apps' models talk to an OpenAI-compatible endpoint: `misguard models serve` of the
native run's model, started in-process on loopback (or any `--base-url`). The planner and
the concluder are the runtime's (the concluder reads what the receivers read, reviewed by
the defense as natively). Tools are off in every runtime (`max_tool_calls = 0`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

from rich.console import Console
from rich.table import Table

from ..config import Settings
from ..errors import ConfigError, LLMOutputError, MissingExtraError
from ..integrations import BLOCK_TEXT, Protection, build_interceptors
from ..llm import LLM, MeteredLLM, get_llm
from ..mas import ConclusionReviewer, EventLog, MisinfoTask, MultiAgentSystem, RoleLLMs
from ..mas._answers import WorkerAction
from ..types import EdgeMessage, Usage
from .misinfotask import SweepConfig, paired_reduction_ci, score_run, summarize
from .misinfotask._sweep import Components, _attack_spec, _describe_components, open_runlog, run_key, run_one

RUNTIMES = ("native", "langgraph", "openai-agents")
ARMS = ("none", "argus")
_WITHHELD = BLOCK_TEXT.split("{")[0]


# -- the model endpoint -------------------------------------------------------------------

@contextlib.contextmanager
def serve_in_process(llm: LLM, model_id: str) -> Iterator[str]:
    """`misguard models serve` of `llm` (a local model) on a free loopback port, in this
    process (one copy of the model for the native runs and the apps); yields its base URL."""
    try:
        import uvicorn
    except ImportError:
        raise MissingExtraError("uvicorn", "service", "serving the model to the framework apps") from None
    from ..llm._serve import create_model_app

    app = create_model_app(llm, model_id=model_id)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="misguard-model-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise ConfigError(f"the in-process model server did not start on 127.0.0.1:{port}")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _answer_schema() -> dict[str, Any]:
    """The response_format the native worker turn sends (`LLM.generate_json`)."""
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": WorkerAction.model_json_schema()}}


# -- the LangGraph app --------------------------------------------------------------------

def langgraph_app(system: MultiAgentSystem, llm: LLM, rounds: int) -> Any:
    """The planned `system` as a LangGraph `StateGraph` builder (not compiled): a node per
    agent, an inbox channel per agent, the topology's edges as the nodes' destinations.
    Invoke it once per round with `{"round": r}` (r = rounds + 1: only read)."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages

    inbox = {a: f"inbox_{a}" for a in system.agent_ids}
    state = TypedDict("TaskState", {"round": int, **{ch: Annotated[list, add_messages] for ch in inbox.values()}})  # type: ignore[misc]
    builder = StateGraph(state)
    consumed: dict[str, set[str]] = {a: set() for a in system.agent_ids}

    def node_for(agent: str) -> Callable[..., Any]:
        async def turn(reading: dict[str, Any]) -> dict[str, Any]:
            r = reading["round"]
            unread = [m for m in reading.get(inbox[agent]) or [] if m.id not in consumed[agent]]
            for m in unread:
                if str(m.content).startswith(_WITHHELD):
                    consumed[agent].add(m.id)  # blocked: the native runtime drops it
            unread = [m for m in unread if m.id not in consumed[agent]]
            if r > rounds:
                return {}
            inbound = None
            if unread:
                first = unread[0]
                consumed[agent].add(first.id)
                inbound = EdgeMessage(sender=first.name, receiver=agent, round=r - 1, text=str(first.content), id=first.id)
            prompt = system.turn_prompt(agent, r, inbound)
            if prompt is None:
                return {}
            messages, suggested = prompt
            try:
                action = await llm.generate_json(messages, schema=WorkerAction, reasks=1,
                                                 max_tokens=system.config.worker_max_tokens)
                raw = action.model_dump_json()
            except LLMOutputError as exc:
                raw = exc.text
            sent = system.turn_reply(agent, r, raw, suggested)
            return {inbox[sent.receiver]: [AIMessage(sent.text, id=sent.id, name=agent)]}

        return turn

    for agent in system.agent_ids:
        reads = TypedDict(f"{agent}_reads", {"round": int, inbox[agent]: Annotated[list, add_messages]})  # type: ignore[misc]
        builder.add_node(agent, node_for(agent), input_schema=reads, destinations=tuple(system.neighbours(agent)))
        builder.add_edge(START, agent)
    return builder


async def run_langgraph(system: MultiAgentSystem, llm: LLM, protection: Protection, rounds: int) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from ..integrations.langgraph import protect

    builder = langgraph_app(system, llm, rounds)
    protect(builder, protection=protection)
    app = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": system.task.id}}
    for r in range(1, rounds + 2):
        await app.ainvoke({"round": r}, config)


# -- the Agents SDK app -------------------------------------------------------------------

def _turn_model(system: MultiAgentSystem, agent: str, inner: Any, usage: Usage) -> Any:
    """An SDK `Model` for one agent: renders the runtime's turn prompt around the message
    the agent reads (the screened input item) and asks `inner` (an SDK model) for the
    answer; its calls and tokens are added to `usage`."""
    from agents import ModelSettings
    from agents.items import ModelResponse
    from agents.models.interface import Model, ModelTracing
    from agents.usage import Usage as SDKUsage
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    from ..integrations.openai_agents import item_text

    class TurnModel(Model):
        def __init__(self) -> None:
            self.round = 0
            self.queue: list[tuple[str, str]] = []  # (message id, sender) passed this run
            self.read: list[str] = []  # ids the agent read (or that were withheld) this run
            self.sent: EdgeMessage | None = None

        async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any,
                               output_schema: Any, handoffs: Any, tracing: Any, **kwargs: Any) -> Any:
            seen = {}
            for item in input if isinstance(input, list) else []:
                data = item if isinstance(item, dict) else item.model_dump(exclude_none=True)
                if data.get("role") == "assistant" and data.get("id"):
                    seen[data["id"]] = item_text(data)
            # what the adapter removed was blocked: dropped, as natively
            self.read = [i for i, _ in self.queue if i not in seen]
            self.sent = None
            unread = [(i, s) for i, s in self.queue if i in seen]
            if self.round > system.config.rounds:
                return ModelResponse(output=[], usage=SDKUsage(), response_id=None)
            inbound = None
            if unread:
                i, sender = unread[0]
                self.read.append(i)
                inbound = EdgeMessage(sender=sender, receiver=agent, round=self.round - 1, text=seen[i] or "", id=i)
            prompt = system.turn_prompt(agent, self.round, inbound)
            if prompt is None:
                return ModelResponse(output=[], usage=SDKUsage(), response_id=None)
            (sys_msg, user_msg), suggested = prompt
            settings = system.llms.worker.settings
            response = await inner.get_response(
                sys_msg.content, [{"role": "user", "content": user_msg.content}],
                ModelSettings(temperature=settings.temperature, max_tokens=system.config.worker_max_tokens,
                              extra_body={"seed": settings.seed, "response_format": _answer_schema()}),
                [], None, [], ModelTracing.DISABLED, previous_response_id=None, conversation_id=None, prompt=None)
            usage.add(Usage(calls=1, prompt_tokens=response.usage.input_tokens,
                            completion_tokens=response.usage.output_tokens))
            raw = "".join(item_text(o.model_dump(exclude_none=True)) or "" for o in response.output)
            self.sent = system.turn_reply(agent, self.round, raw, suggested)
            text = ResponseOutputText(text=self.sent.text, type="output_text", annotations=[])
            message = ResponseOutputMessage(id=self.sent.id, content=[text], role="assistant", status="completed",
                                            type="message")
            return ModelResponse(output=[message], usage=response.usage, response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the task app runs without streaming")

    return TurnModel()


def agents_app(system: MultiAgentSystem, model_for: Callable[[str], Any], usage: Usage) -> dict[str, Any]:
    """The planned `system` as Agents SDK agents (name -> `Agent`): each agent's handoffs
    are its topology neighbours; its model renders the runtime's turn (see `_turn_model`)."""
    from agents import Agent

    agents = {a: Agent(name=a, model=_turn_model(system, a, model_for(a), usage)) for a in system.agent_ids}
    for a, agent in agents.items():
        agent.handoffs = [agents[b] for b in system.neighbours(a)]
    return agents


async def run_agents(system: MultiAgentSystem, model_for: Callable[[str], Any], protection: Protection,
                     rounds: int, usage: Usage) -> None:
    from agents import Runner, set_tracing_disabled

    from ..integrations.openai_agents import protect

    set_tracing_disabled(True)
    agents = agents_app(system, model_for, usage)
    current = [0]
    protect(agents[system.agent_ids[0]], protection=protection, round_key=lambda _: ("round", current[0]))
    queues: dict[str, list[tuple[str, str, str]]] = {a: [] for a in system.agent_ids}  # (id, sender, text)

    async def turn(name: str, r: int) -> EdgeMessage | None:
        model = agents[name].model
        model.round, model.queue = r, [(i, s) for i, s, _ in queues[name]]
        if r > rounds and not queues[name]:
            return None
        items = [{"type": "message", "role": "assistant", "id": i, "status": "completed",
                  "content": [{"type": "output_text", "text": text, "annotations": []}]} for i, _, text in queues[name]]
        await Runner.run(agents[name], items or [{"role": "user", "content": "(your turn)"}], max_turns=1)
        read = set(model.read)
        queues[name] = [q for q in queues[name] if q[0] not in read]
        return model.sent

    for r in range(1, rounds + 2):
        current[0] = r
        sent = await asyncio.gather(*(turn(a, r) for a in system.agent_ids))
        for message in sent:
            if message is not None:
                queues[message.receiver].append((message.id, message.sender, message.text))


# -- one run ------------------------------------------------------------------------------

async def run_framework_one(
    runtime: str, task: MisinfoTask, seed: int, config: SweepConfig, settings: Settings, components: Components,
    app_llm: LLM, *, events_path: Path, model_for: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """Plan the task and apply the attack as the native run does, run it as a `runtime` app
    protected by `config.defense` through the adapter, conclude, judge. Returns the `run`
    event's data (as `run_one`). `app_llm`: the apps' OpenAI-compatible model (planner,
    concluder, LangGraph turns); `model_for(agent)`: the Agents SDK model of each agent."""
    from ..attacks import build_attack

    started = time.perf_counter()
    metered = MeteredLLM(app_llm)
    log = EventLog(meta={"task_id": task.id})
    system = MultiAgentSystem(task.runtime_task(), RoleLLMs(worker=metered), config.mas_config(seed), log=log)
    await system.plan()
    attack = build_attack(config.attack, _attack_spec(task, config, seed, components.embedder, ()))
    attack_report = attack.apply(system) if attack is not None else None
    context = components.defense_context(settings, task, seed)
    interceptors = build_interceptors(config.defense, settings=settings, llm=context.llms["worker"],
                                      rectifier=context.llms["rectifier"], embedder=components.embedder,
                                      claim_store=components.claim_store, params={config.defense: config.defense_params})
    protection = Protection(interceptors, framework=f"{runtime} {_version(runtime)}", log=log)
    sdk_usage = Usage()
    sdk_client = None
    try:
        if runtime == "langgraph":
            await run_langgraph(system, metered, protection, config.rounds)
        elif runtime == "openai-agents":
            if model_for is None:
                sdk_client, model_for = _sdk_models(app_llm)
            await run_agents(system, model_for, protection, config.rounds, sdk_usage)
        else:
            raise ConfigError(f"unknown framework runtime {runtime!r}; choose from {', '.join(RUNTIMES[1:])}")
        for interceptor in protection.interceptors:
            if isinstance(interceptor, ConclusionReviewer):
                system.add_interceptor(interceptor)  # the concluder reads what the defense lets it, as natively
        system.round = config.rounds
        answer = await system.conclude()
    finally:
        protection.finish()
        await app_llm.aclose()
        if sdk_client is not None:
            await sdk_client.close()
    mas_wall = time.perf_counter() - started
    log.meta.update({"task_id": task.id, "seed": seed, "config": config.identity(), "runtime": runtime})
    log.dump(events_path)
    usage = metered.usage.model_copy()
    usage.add(sdk_usage)
    return await score_run(task, seed, config, components, log, answer, attack_report=attack_report,
                           graph_edges=[list(e) for e in system.graph.edges()], mas_usage=usage, mas_wall=mas_wall,
                           started=started, events_name=events_path.name)


def _sdk_models(app_llm: LLM) -> tuple[Any, Callable[[str], Any]]:
    """The SDK's chat-completions model at the apps' endpoint: the client (one for all
    agents, closed by the caller) and agent -> model."""
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    base_url = app_llm.settings.base_url
    client = AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0, timeout=app_llm.settings.timeout_s)
    return client, lambda _agent: OpenAIChatCompletionsModel(model=app_llm.model, openai_client=client)


def _version(runtime: str) -> str:
    from importlib import metadata

    return metadata.version({"langgraph": "langgraph", "openai-agents": "openai-agents"}[runtime])


# -- the bench ----------------------------------------------------------------------------

def run_dir(output: Path, runtime: str, arm: str) -> Path:
    """Where one runtime x arm writes its sweep-style run log and event files."""
    return output / runtime / arm


def run_integration_e2e(
    settings: Settings, tasks: Sequence[MisinfoTask], output: Path, *, model: str, task_ids: Sequence[int],
    runtimes: Sequence[str] = RUNTIMES, arms: Sequence[str] = ARMS, rounds: int = 2, seed: int = 0,
    base_url: str | None = None, injection_point: str = "random", data: str = "",
    mas_params: dict[str, Any] | None = None, console: Console | None = None,
    components: Components | None = None, app_llm: LLM | None = None,
    model_for: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """Every pending (task, arm, runtime), interleaved task by task; each runtime x arm is a
    resumable run log in `output/<runtime>/<arm>` that `misguard runs report` reads. The
    judge is the runs' model (`components.judge_llm`). Returns the summary (also written
    to `output/summary.json`). `mas_params`: `MASConfig` overrides (tools stay off: the
    apps have none)."""
    console = console or Console()
    if (mas_params or {}).get("max_tool_calls", 0):
        raise ConfigError("max_tool_calls must stay 0: the framework apps' agents have no tools")
    unknown = sorted(set(runtimes) - set(RUNTIMES))
    if unknown:
        raise ConfigError(f"unknown runtime(s) {unknown}; choose from {', '.join(RUNTIMES)}")
    if not runtimes or not arms:
        raise ConfigError("name at least one runtime and one arm (a defense, or none for the attack only)")
    by_id = {t.id: t for t in tasks}
    missing = [i for i in task_ids if i not in by_id]
    if missing:
        raise ConfigError(f"no task with id {missing} in the data ({len(by_id)} tasks, ids {min(by_id)}-{max(by_id)})")
    configs = {arm: SweepConfig(data=data, model=model, attack="inject", defense=arm, topology="chain",
                                rounds=rounds, mas_params={**(mas_params or {}), "max_tool_calls": 0}, tasks=tuple(task_ids), seeds=(seed,),
                                injection_point=injection_point, judge_rounds=False).resolve_defense(settings)
               for arm in arms}
    if components is None:
        mas_llm = get_llm(model, settings.llm)
        from ..embed import get_embedder

        components = Components(mas_llm, mas_llm, get_embedder(None, settings.embed))
    output.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        app_settings = None
        if app_llm is None and any(r != "native" for r in runtimes):
            if base_url is None:
                model_id = model.split("/", 1)[1].lstrip("/") if "/" in model else model
                base_url = stack.enter_context(serve_in_process(components.mas_llm, model_id))
            else:
                model_id = model.split("/", 1)[-1]
            app_settings = settings.llm.model_copy(update={"base_url": base_url})
            app_llm = get_llm(f"openai/{model_id}", app_settings)
        logs = {}
        for runtime in runtimes:
            for arm in arms:
                described = _describe_components(settings, configs[arm], components, by_id[task_ids[0]], tasks)
                described["runtime"] = {"name": runtime, **({"version": _version(runtime)} if runtime != "native" else {}),
                                        **({"endpoint": app_llm.describe()} if runtime != "native" and app_llm else {})}
                directory = run_dir(output, runtime, arm)
                (directory / "events").mkdir(parents=True, exist_ok=True)
                logs[(runtime, arm)] = open_runlog(directory, settings, configs[arm], described)
        try:
            for task_id in task_ids:
                for arm in arms:
                    for runtime in runtimes:
                        log = logs[(runtime, arm)]
                        if run_key(task_id, seed) in log.done_keys("run"):
                            continue
                        events = run_dir(output, runtime, arm) / "events" / f"task{task_id}-seed{seed}.jsonl"
                        config, task = configs[arm], by_id[task_id]
                        if runtime == "native":
                            record = asyncio.run(run_one(task, seed, config, settings, components, background=(),
                                                         events_path=events))
                        else:
                            assert app_llm is not None
                            # a client per run: an HTTP client's connections belong to the event
                            # loop of the run that opened them (each run is its own asyncio.run)
                            run_llm = get_llm(app_llm.spec, app_settings) if app_settings is not None else app_llm
                            record = asyncio.run(run_framework_one(runtime, task, seed, config, settings, components,
                                                                   run_llm, events_path=events, model_for=model_for))
                        log.write("run", key=run_key(task_id, seed), **record)
                        console.print(f"task {task_id} {arm:>5} {runtime:>13}: MT claims "
                                      f"{(record['llm_mt_claims'] or {}).get('score')}, proxy "
                                      f"{(record['proxy_mt'] or {}).get('score')}, {record['mas_wall_s']:.0f} s",
                                      highlight=False)
        finally:
            for log in logs.values():
                log.close()
    summary = summarize_e2e(output, runtimes, arms)
    (output / "summary.json").write_text(json.dumps(summary, indent=2))
    console.print(e2e_table(summary))
    return summary


#: The figures compared across runtimes: (label, metric label of `summarize`).
MT_METRICS = (("MT claims", "MT (LLM claim check, 0-10)"), ("MT proxy", "MT proxy (embeddings, 0-10)"))


def summarize_e2e(output: Path, runtimes: Sequence[str] = RUNTIMES, arms: Sequence[str] = ARMS) -> dict[str, Any]:
    """Per runtime: each arm's MT (`summarize` of its run log) and, for each defended arm,
    the paired MT change against the attack only (`none`, over the tasks both finished)
    and the defense's localization by round; per task: the MT of every runtime x arm."""
    out: dict[str, Any] = {"runtimes": {}, "per_task": {}}
    for runtime in runtimes:
        summaries = {}
        for arm in arms:
            path = run_dir(output, runtime, arm) / "runlog.jsonl"
            if path.exists():
                summaries[arm] = summarize(path)
        entry: dict[str, Any] = {
            "arms": {arm: {"runs": s["runs"], **{label: s["metrics"][m] for label, m in MT_METRICS},
                           "actions": _actions(run_dir(output, runtime, arm))}
                     for arm, s in summaries.items()},
            "changes": {}, "localization": {},
        }
        for arm, s in summaries.items():
            if arm == "none":
                continue
            entry["localization"][arm] = s["localization"]
            if "none" in summaries:
                entry["changes"][arm] = {
                    label: paired_reduction_ci(summaries["none"]["per_task"][_field(m)], s["per_task"][_field(m)])
                    for label, m in MT_METRICS}
        if runtime != "native":
            entry["same_as_native"] = {arm: _same_decisions(output, runtime, arm) for arm in summaries}
        out["runtimes"][runtime] = entry
        for arm, s in summaries.items():
            for label, m in MT_METRICS:
                for key, value in s["per_task"][_field(m)].items():
                    out["per_task"].setdefault(key, {}).setdefault(f"{runtime}/{arm}", {})[label] = value
    return out


def _same_decisions(output: Path, runtime: str, arm: str) -> dict[str, int]:
    """Per-message agreement with the native run of the same task and arm: of the messages
    both runs sent (same round, sender, receiver and text: where decoding gave the same
    words), how many got the same decision (action and delivered text)."""
    from ..mas import read_events

    def keyed(path: Path) -> dict[tuple[Any, ...], tuple[Any, ...]]:
        return {(m["round"], m["sender"], m["receiver"], m["original"]): (m["action"], m["text"])
                for m in read_events(path).messages(delivered_only=False)}

    out = {"tasks": 0, "messages": 0, "common": 0, "same": 0}
    for path in sorted((run_dir(output, runtime, arm) / "events").glob("*.jsonl")):
        native = run_dir(output, "native", arm) / "events" / path.name
        if not native.exists():
            continue
        ours, theirs = keyed(path), keyed(native)
        common = set(ours) & set(theirs)
        out["tasks"] += 1
        out["messages"] += len(ours)
        out["common"] += len(common)
        out["same"] += sum(ours[k] == theirs[k] for k in common)
    return out


def _actions(directory: Path) -> dict[str, int]:
    """What the interceptors did over the arm's runs (pass, rewrite, block), and the
    messages that crossed edges."""
    from ..runlog import read_runlog

    _, events = read_runlog(directory / "runlog.jsonl")
    out: dict[str, int] = {}
    for event in events:
        if event.type == "run":
            out["messages"] = out.get("messages", 0) + sum(r["messages"] for r in event.data["rounds"])
            for action, count in event.data["interceptions"].items():
                out[action] = out.get(action, 0) + count
    return out


def _field(metric_label: str) -> str:
    from .misinfotask._report import METRICS

    return METRICS[metric_label][0]


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _rows(summary: dict[str, Any]) -> list[list[str]]:
    """One row per runtime x defended arm (per runtime when only the attack ran)."""
    rows = []
    for runtime, entry in summary["runtimes"].items():
        arms = entry["arms"]
        base = arms.get("none") or {}
        for arm in [a for a in arms if a != "none"] or [None]:
            treated = arms.get(arm) or {} if arm else {}
            row = [runtime, arm or "-", f"{base.get('runs', 0)} / {treated.get('runs', 0)}"]
            for label, _ in MT_METRICS:
                change = (entry["changes"].get(arm) or {}).get(label) or {}
                row += [_fmt(base.get(label, {}).get("mean")), _fmt(treated.get(label, {}).get("mean")),
                        f"{_fmt(change.get('diff'), '+.2f')} [{_fmt(change.get('diff_lo'), '+.2f')}, "
                        f"{_fmt(change.get('diff_hi'), '+.2f')}]" if change.get("n") else "-"]
            row.append(", ".join(f"r{x['round']} {x['recall']:.2f}" for x in entry["localization"].get(arm) or [])
                       or "-")
            acted = treated.get("actions") or {}
            row.append(f"{acted.get('messages', 0)}; {acted.get('rewrite', 0)}, {acted.get('block', 0)}" if arm else "-")
            same = (entry.get("same_as_native") or {}).get(arm) if arm else None
            row.append(f"{same['same']} of {same['common']} (of {same['messages']})" if same else "-")
            rows.append(row)
    return rows


_COLUMNS = ("runtime", "defense", "runs (attack only / defended)", "MT claims, attack only", "MT claims, defended", "change [95% CI]",
            "MT proxy, attack only", "MT proxy, defended", "change [95% CI]", "localization recall by round",
            "defended: messages delivered; rewrites, blocks (concluder review included)",
            "defended: same decision as native, of the messages with the same words (of all)")


def e2e_table(summary: dict[str, Any]) -> Table:
    table = Table(title="MisInfoTask end to end: the native runtime and the framework apps (MT 0-10; change: "
                        "defended - attack only, paired over tasks)")
    for col in _COLUMNS:
        table.add_column(col, justify="right")
    for row in _rows(summary):
        table.add_row(*row)
    return table


def e2e_markdown(summary: dict[str, Any]) -> str:
    """The table as markdown, for docs/BENCHMARKS.md."""
    lines = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in _rows(summary)]
    return "\n".join(lines) + "\n"


__all__ = ["ARMS", "RUNTIMES", "agents_app", "e2e_markdown", "e2e_table", "langgraph_app", "run_agents",
           "run_framework_one", "run_integration_e2e", "run_langgraph", "serve_in_process", "summarize_e2e"]
