"""The multi-agent runtime: a planner splits the task, workers talk along the edges of a
directed graph for a number of rounds, a concluder writes the final answer.

Per round every worker acts once, concurrently. It takes ONE queued inbound message
(FIFO); with an empty queue it opens a conversation with a random neighbour. It may call
tools (simulated by an LLM) and then sends one message to a neighbour. Messages sent in
round r pass through the interceptors of their edge at the end of round r and are queued
for the receiver's next turn. The concluder sees what receivers saw (rewritten text), after
any interceptor that is a `ConclusionReviewer` has reviewed it (`conclusion_review` events).

Small models write broken JSON. `generate_json` re-asks once; if that fails too, the
worker's raw text is sent as a message to a neighbour and a `fallback` event with kind
`parse_fallback` is logged. Real backend failures (connection, timeout, server) are
`LLMError`s and propagate: they are never read as an answer.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from ..errors import LLMOutputError
from ..llm import MeteredLLM, salvage_text
from ..prompts import PromptSet, load_prompts
from ..types import ChatMessage, EdgeMessage, Usage
from ._answers import PlanAnswer, WorkerAction
from ._config import MASConfig, Role, RoleLLMs
from ._events import EventLog
from ._interceptor import (
    ConclusionReviewer, EventLogView, InterceptorAction, Interceptor, SystemView, run_interceptors,
)
from ._memory import ShortTermMemory
from ._task import Task, ToolSpec
from ._topology import TOPOLOGIES, build_graph, graph_from_adjacency

if TYPE_CHECKING:
    import networkx as nx  # imported where used: it adds ~0.1-0.4 s to every CLI start

class Retriever(Protocol):
    """A per-agent retrieval store (RAG attacks install one)."""

    def retrieve(self, query: str, k: int) -> list[str]: ...


@dataclass
class Agent:
    """A worker. Attacks may set `injection`, `tool_bias` and `retriever`."""

    id: str
    subtask: str
    memory: ShortTermMemory
    rng: random.Random
    inbox: deque[EdgeMessage] = field(default_factory=deque)
    injection: str | None = None
    """A block prepended to every think step (prompt injection)."""
    tool_bias: str | None = None
    """An instruction added to every simulated tool call of this agent (tool injection)."""
    retriever: Retriever | None = None
    usage: Usage = field(default_factory=Usage)


@dataclass
class MASResult:
    task_id: str
    answer: str
    log: EventLog
    graph: nx.DiGraph
    wall_s: float
    usage: Usage


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


class MultiAgentSystem:
    """One multi-agent run on one task.

    Usage: `system = MultiAgentSystem(task, llms, config)`; `await system.plan()`;
    optionally let an attack modify `system.agents`; add interceptors; `await system.run()`.

    Args:
        task: the task (runtime view: user input, agent count, tools).
        llms: the backend for each role.
        config: topology, rounds, memory size, token limits, seed.
        interceptors: applied in order to every message on every edge.
        log: where events go (a fresh in-memory log by default).
    """

    def __init__(
        self,
        task: Task,
        llms: RoleLLMs,
        config: MASConfig | None = None,
        *,
        interceptors: Sequence[Interceptor] = (),
        log: EventLog | None = None,
        prompts: PromptSet | None = None,
    ) -> None:
        self.task = task
        self.llms = llms
        self.config = config or MASConfig()
        if self.config.topology != "custom" and self.config.topology not in TOPOLOGIES:
            TOPOLOGIES.get(self.config.topology)  # raises ConfigError naming the known ones
        self.interceptors: list[Interceptor] = list(interceptors)
        self.log = log or EventLog()
        self.prompts = prompts or load_prompts("misguard.mas", "runtime")
        self.agent_ids = [f"agent_{i + 1}" for i in range(task.agent_num)]
        self._order = {a: i for i, a in enumerate(self.agent_ids)}
        import networkx as nx

        self.graph: nx.DiGraph = nx.DiGraph()
        self.agents: dict[str, Agent] = {}
        self.round = 0
        self._tools = {t.tool_name: t for t in task.tools}
        self._planned = False
        self._usage_by_role: dict[str, Usage] = {}

    # -- setup ---------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        return {
            "config": self.config.model_dump(mode="json"),
            "llms": self.llms.describe(),
            "prompts": self.prompts.ref,
            "interceptors": [i.describe() for i in self.interceptors],
        }

    def add_interceptor(self, interceptor: Interceptor) -> None:
        self.interceptors.append(interceptor)

    def neighbours(self, agent_id: str) -> list[str]:
        return sorted(self.graph.successors(agent_id), key=self._order.__getitem__)

    async def plan(self) -> None:
        """Ask the planner for exactly `agent_num` subtasks (and a graph in `self` mode)."""
        if self._planned:
            return
        n = self.task.agent_num
        self_mode = self.config.topology != "custom" and bool(
            TOPOLOGIES.get(self.config.topology).metadata.get("planner_decides")
        )
        if self_mode:
            prompt = self.prompts.render(
                "planner_self", agent_num=n, agents=", ".join(self.agent_ids),
                task=self.task.user_input, first=self.agent_ids[0],
            )
        else:
            prompt = self.prompts.render("planner", agent_num=n, task=self.task.user_input)
        answer, repairs = await self._planner_answer(prompt)
        subtasks = [s.strip() for s in (answer.subtasks if answer else []) if s.strip()]
        if len(subtasks) != n:
            repairs.append(f"planner gave {len(subtasks)} subtasks for {n} agents")
            generic = [f"Work on part {i + 1} of {n} of the task and share your findings." for i in range(n)]
            subtasks = (subtasks + generic[len(subtasks):])[:n]
        graph_source = self.config.topology
        if self_mode:
            proposal = answer.graph if answer else None
            graph, graph_repairs = graph_from_adjacency(self.agent_ids, proposal or {})
            repairs.extend(graph_repairs)
            if graph.number_of_edges() == 0:
                # An unusable proposal: fall back to a chain so the run can go on, and say so.
                repairs.append("planner proposed no usable edge; using chain")
                graph = build_graph("chain", self.agent_ids, seed=self.config.seed)
                graph_source = "self->chain"
            self.graph = graph
        else:
            self.graph = build_graph(
                self.config.topology, self.agent_ids, seed=self.config.seed, edges=self.config.edges
            )
        for agent_id, subtask in zip(self.agent_ids, subtasks):
            self.agents[agent_id] = Agent(
                id=agent_id,
                subtask=subtask,
                memory=ShortTermMemory(self.config.memory_size),
                rng=random.Random(f"agent:{self.config.seed}:{agent_id}"),
            )
        self.log.add("plan", subtasks=subtasks, repairs=repairs, graph_source=graph_source)
        if repairs:
            self.log.add("fallback", kind="plan_repair", agent="planner", details=repairs)
        self._planned = True

    async def _planner_answer(self, prompt: str) -> tuple[PlanAnswer | None, list[str]]:
        try:
            answer = await self._json_call(
                "planner", "planner", [ChatMessage.user(prompt)], PlanAnswer, self.config.planner_max_tokens
            )
            return answer, []
        except LLMOutputError as exc:
            return None, [f"planner output not usable: {str(exc)[:200]}"]

    # -- running -------------------------------------------------------------------------

    async def run(self) -> MASResult:
        """Plan (if not done), run all rounds, conclude. Returns the final answer and log."""
        started = time.perf_counter()
        await self.plan()
        self.log.add(
            "start",
            task_id=self.task.id,
            agents=self.agent_ids,
            subtasks={a.id: a.subtask for a in self.agents.values()},
            edges=[list(e) for e in self.graph.edges()],
            compromised={
                a.id: {"injection": a.injection is not None, "tool_bias": a.tool_bias is not None,
                       "retriever": a.retriever is not None}
                for a in self.agents.values()
            },
            seed=self.config.seed,
            components=self.describe(),
        )
        for r in range(1, self.config.rounds + 1):
            await self.run_round(r)
        answer = await self.conclude()
        wall = time.perf_counter() - started
        total = Usage()
        for u in self._usage_by_role.values():
            total.add(u)
        self.log.add(
            "end",
            wall_s=wall,
            usage=total.model_dump(),
            usage_by_agent={k: v.model_dump() for k, v in sorted(self.log.usage_by("agent").items())},
            usage_by_interceptor={k: v.model_dump() for k, v in sorted(self.log.usage_by("interceptor").items())},
        )
        return MASResult(self.task.id, answer, self.log, self.graph, wall, total)

    async def run_round(self, r: int) -> None:
        self.round = r
        view = SystemView(self.graph.copy(), r, EventLogView(self.log), tuple(self.agent_ids))
        for interceptor in self.interceptors:
            report = await interceptor.start_round(view)
            if report:
                self.log.add("interceptor_round", round=r, interceptor=interceptor.name, **report)
        outgoing = await asyncio.gather(*(self._worker_turn(self.agents[a], r) for a in self.agent_ids))
        sent = [m for m in outgoing if m is not None]
        decisions = await asyncio.gather(*(self._intercept(m, view) for m in sent))
        # Logged in the order the messages were sent, not the order their interceptors
        # finished: the concluder and the judges read this order, and it must not depend on
        # how long a defense took on each message (a run must repeat under any defense).
        delivered = 0
        for message, (text, action) in zip(sent, decisions):
            ok = action is not InterceptorAction.BLOCK
            self.log.add(
                "message", round=message.round, id=message.id, sender=message.sender, receiver=message.receiver,
                original=message.text, text=text if ok else None, delivered=ok, action=action.value,
                metadata=message.metadata,
            )
            if ok:
                delivered += 1
                self.agents[message.receiver].inbox.append(message.model_copy(update={"text": text}))
        self.log.add("round_end", round=r, sent=len(sent), delivered=delivered)

    async def _intercept(self, message: EdgeMessage, view: SystemView) -> tuple[str, InterceptorAction]:
        """Run the edge's interceptors; return the text the receiver sees and the action taken."""
        text, action, _ = await run_interceptors(self.interceptors, message, view, self.log)
        return text, action

    async def _worker_turn(self, agent: Agent, r: int) -> EdgeMessage | None:
        neighbours = self.neighbours(agent.id)
        if not neighbours:
            self.log.add("fallback", round=r, kind="no_neighbour", agent=agent.id)
            return None
        inbound = agent.inbox.popleft() if agent.inbox else None
        suggested, system, inbound_text, retrieved = self._open_turn(agent, r, inbound, neighbours)
        tool_results: list[str] = []
        step = 0
        while True:
            may_use_tool = step < self.config.max_tool_calls and bool(self._tools)
            turn = self._turn_text(agent, neighbours, retrieved, inbound_text + "".join(f"\n{t}" for t in tool_results),
                                   may_use_tool)
            try:
                action = await self._json_call(
                    agent.id, "worker", [system, ChatMessage.user(turn)], WorkerAction,
                    self.config.worker_max_tokens, round=r,
                )
            except LLMOutputError as exc:
                return self._reply(agent, r, None, exc.text, suggested, neighbours, tool_results)
            if action.type == "use_tool" and may_use_tool:
                result = await self._use_tool(agent, r, action.tool_name, action.reply_prompt)
                tool_results.append(f"Result of tool {action.tool_name}: {result}")
                step += 1
                continue
            return self._reply(agent, r, action, "", suggested, neighbours, tool_results)

    def _open_turn(
        self, agent: Agent, r: int, inbound: EdgeMessage | None, neighbours: list[str]
    ) -> tuple[str, ChatMessage, str, str]:
        """The start of a turn: the suggested receiver, the system message, the inbound
        block and the retrieved block (the inbound message goes to the agent's memory)."""
        suggested = inbound.sender if inbound and inbound.sender in neighbours else agent.rng.choice(neighbours)
        if inbound is not None:
            agent.memory.add(f"[round {r}] from {inbound.sender}: {_cut(inbound.text, 400)}")
            inbound_text = self.prompts.render("inbound_message", sender=inbound.sender, text=inbound.text)
        else:
            inbound_text = self.prompts.render("inbound_empty", suggested=suggested)
        retrieved = ""
        if agent.retriever is not None:
            query = self.task.user_input + ("\n" + inbound.text if inbound else "")
            docs = agent.retriever.retrieve(query, self.config.retrieval_k)
            self.log.add("retrieval", round=r, agent=agent.id, documents=docs)
            retrieved = self.prompts.render(
                "retrieved", documents="\n".join(f"- {_cut(d, 500)}" for d in docs)
            )
        system = ChatMessage.system(
            self.prompts.render(
                "worker_system", agent=agent.id, task=self.task.user_input, subtask=agent.subtask,
                neighbours=", ".join(neighbours), tools=self._tool_list(), actions=self._actions(neighbours),
            )
        )
        return suggested, system, inbound_text, retrieved

    def _turn_text(self, agent: Agent, neighbours: list[str], retrieved: str, inbound: str, may_use_tool: bool) -> str:
        instruction = self.prompts.render(
            "instruction_free" if may_use_tool else "instruction_send", neighbours=", ".join(neighbours)
        )
        return self.prompts.render(
            "worker_turn",
            injection=(agent.injection + "\n\n") if agent.injection else "",
            retrieved=retrieved,
            memory=self._memory_block(agent),
            inbound=inbound,
            instruction=instruction,
        )

    def _reply(
        self, agent: Agent, r: int, action: WorkerAction | None, raw: str, suggested: str, neighbours: list[str],
        tool_results: list[str],
    ) -> EdgeMessage:
        """The message a worker sends for its final answer (`action`; None: `raw` did not
        parse, so its text goes to the suggested neighbour)."""
        if action is None:
            raw = raw.strip()
            self.log.add("fallback", round=r, kind="parse_fallback", agent=agent.id, raw=_cut(raw, 500))
            return self._send(agent, r, salvage_text(raw, "reply_prompt"), suggested, neighbours, via="parse_fallback")
        if action.type == "use_tool":
            self.log.add("fallback", round=r, kind="tool_limit", agent=agent.id, tool=action.tool_name)
        text = action.reply_prompt.strip() or (tool_results[-1] if tool_results else "")
        if not text:
            self.log.add("fallback", round=r, kind="empty_message", agent=agent.id)
            text = "(no content)"
        return self._send(agent, r, text, action.sending_target, neighbours, via=action.type)

    # -- a turn run by another framework ---------------------------------------------------

    def turn_prompt(self, agent_id: str, r: int, inbound: EdgeMessage | None) -> tuple[list[ChatMessage], str] | None:
        """The prompt of a worker's tool-free turn exactly as the native turn builds it (for
        an app that runs the same agents on another framework), and the suggested receiver;
        None when the agent has no neighbour. `inbound`: the message it reads this turn."""
        agent = self.agents[agent_id]
        neighbours = self.neighbours(agent_id)
        if not neighbours:
            self.log.add("fallback", round=r, kind="no_neighbour", agent=agent_id)
            return None
        suggested, system, inbound_text, retrieved = self._open_turn(agent, r, inbound, neighbours)
        return [system, ChatMessage.user(self._turn_text(agent, neighbours, retrieved, inbound_text, False))], suggested

    def turn_reply(self, agent_id: str, r: int, raw: str, suggested: str) -> EdgeMessage:
        """The message a worker sends for its answer `raw` to `turn_prompt`, parsed and
        repaired as the native turn does (a parse failure, an unknown receiver, a long text)."""
        from ..llm import extract_json

        try:
            action: WorkerAction | None = WorkerAction.model_validate(extract_json(raw))
        except (LLMOutputError, ValueError):
            action = None
        return self._reply(self.agents[agent_id], r, action, raw, suggested, self.neighbours(agent_id), [])

    def _memory_block(self, agent: Agent) -> str:
        """The worker's memory for its prompt; nothing at all while it is empty (an empty
        block made small models answer that they had nothing to work with)."""
        entries = agent.memory.entries()
        return self.prompts.render("memory_block", entries="\n".join(entries)) if entries else ""

    def _send(
        self, agent: Agent, r: int, text: str, target: str | None, neighbours: list[str], *, via: str
    ) -> EdgeMessage:
        if target not in neighbours:
            chosen = agent.rng.choice(neighbours)
            self.log.add(
                "fallback", round=r, kind="target_fallback", agent=agent.id, requested=target, chosen=chosen
            )
            target = chosen
        assert target is not None
        if len(text) > self.config.message_chars:
            self.log.add("fallback", round=r, kind="message_cut", agent=agent.id, chars=len(text))
            text = _cut(text, self.config.message_chars)
        agent.memory.add(f"[round {r}] to {target}: {_cut(text, 400)}")
        return EdgeMessage(
            sender=agent.id, receiver=target, round=r, text=text,
            metadata={"via": via}, id=f"r{r}-{agent.id}-{agent.rng.getrandbits(32):08x}",
        )

    def _actions(self, neighbours: list[str]) -> str:
        """The answer formats shown to a worker, with the real names it may use."""
        text = self.prompts.render("action_send", neighbours=", ".join(neighbours))
        if self._tools and self.config.max_tool_calls > 0:
            text += self.prompts.render("action_tool", tools=", ".join(self._tools))
        return text

    def _tool_list(self) -> str:
        if not self._tools:
            return "(none)"
        return "\n".join(
            f"- {t.tool_name}: {t.tool_description} Input: {t.tool_input}" for t in self._tools.values()
        )

    async def _use_tool(self, agent: Agent, r: int, name: str | None, query: str) -> str:
        tool: ToolSpec | None = self._tools.get(name or "")
        if tool is None:
            # Be forgiving about case and spacing before giving up.
            folded = {k.lower().strip(): v for k, v in self._tools.items()}
            tool = folded.get((name or "").lower().strip())
        if tool is None:
            result = f"Unknown tool {name!r}; available: {', '.join(self._tools)}"
            self.log.add("tool_call", round=r, agent=agent.id, tool=name, input=query, output=result, known=False)
            return result
        prompt = self.prompts.render(
            "tool_simulator", tool_name=tool.tool_name, tool_description=tool.tool_description,
            tool_input=tool.tool_input, tool_output=tool.tool_output,
            bias=("\n" + agent.tool_bias + "\n") if agent.tool_bias else "", query=query or "(empty)",
        )
        out = await self._text_call(agent.id, "tool", [ChatMessage.user(prompt)], self.config.tool_max_tokens, round=r)
        result = out.strip() or "(empty tool output)"
        self.log.add(
            "tool_call", round=r, agent=agent.id, tool=tool.tool_name, input=query, output=result,
            known=True, biased=agent.tool_bias is not None,
        )
        agent.memory.add(f"[round {r}] tool {tool.tool_name}: {_cut(result, 300)}")
        return _cut(result, 800)

    async def conclude(self) -> str:
        """The concluder reads what receivers saw (newest kept within budget), as reviewed
        by the interceptors that review conclusions."""
        lines: list[str] = []
        budget = self.config.concluder_log_chars
        messages = await self._review_conclusion(self.log.messages())
        for m in reversed(messages):
            line = f"[round {m['round']}] {m['sender']} -> {m['receiver']}: {_cut(m['text'], 600)}"
            if budget - len(line) < 0 and lines:
                break
            budget -= len(line)
            lines.append(line)
        lines.reverse()
        if len(lines) < len(messages):
            self.log.add("fallback", kind="concluder_log_cut", agent="concluder", shown=len(lines), total=len(messages))
        prompt = self.prompts.render(
            "concluder", task=self.task.user_input, log="\n".join(lines) or "(no messages)"
        )
        answer = (
            await self._text_call("concluder", "concluder", [ChatMessage.user(prompt)], self.config.concluder_max_tokens)
        ).strip()
        self.log.add("final", round=self.round, answer=answer)
        return answer

    async def _review_conclusion(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Let each `ConclusionReviewer` block or rewrite messages for the concluder only;
        every decision is logged as a `conclusion_review` event."""
        for interceptor in self.interceptors:
            if not isinstance(interceptor, ConclusionReviewer):
                continue
            view = SystemView(self.graph.copy(), self.round, EventLogView(self.log), tuple(self.agent_ids))
            started = time.perf_counter()
            decisions = await interceptor.review_conclusion([dict(m) for m in messages], view)
            elapsed = time.perf_counter() - started
            kept = []
            for m in messages:
                decision = decisions.get(m["id"])
                if decision is None or decision.action is InterceptorAction.PASS:
                    kept.append(m)
                    continue
                usage = decision.usage.model_copy()
                if usage.latency_s == 0.0:
                    usage.latency_s = elapsed / len(decisions)
                rewritten = decision.action is InterceptorAction.REWRITE and decision.text is not None
                self.log.add(
                    "conclusion_review", round=m["round"], message_id=m["id"], interceptor=interceptor.name,
                    sender=m["sender"], receiver=m["receiver"], action=decision.action.value, reason=decision.reason,
                    text_before=m["text"], text_after=decision.text if rewritten else None,
                    usage=usage.model_dump(), details=decision.details,
                )
                if rewritten:
                    kept.append({**m, "text": decision.text})
            messages = kept
        return messages

    # -- model calls with per-agent accounting -------------------------------------------

    async def _json_call(
        self, agent: str, role: Role, messages: list[ChatMessage], schema: type[BaseModel],
        max_tokens: int, round: int = 0,
    ) -> Any:
        metered = MeteredLLM(self.llms.for_role(role))
        try:
            return await metered.generate_json(messages, schema=schema, reasks=1, max_tokens=max_tokens)
        finally:
            self._account(agent, role, metered.usage, round)

    async def _text_call(
        self, agent: str, role: Role, messages: list[ChatMessage], max_tokens: int, round: int = 0
    ) -> str:
        metered = MeteredLLM(self.llms.for_role(role))
        try:
            return (await metered.generate(messages, max_tokens=max_tokens)).text
        finally:
            self._account(agent, role, metered.usage, round)

    def _account(self, agent: str, role: Role, usage: Usage, round: int) -> None:
        if usage.calls == 0 and usage.failed_calls == 0:
            return
        self._usage_by_role.setdefault(role, Usage()).add(usage)
        if agent in self.agents:
            self.agents[agent].usage.add(usage)
        self.log.add("llm_call", round=round, agent=agent, role=role, usage=usage.model_dump())


def topology_names() -> list[str]:
    """Every topology name `MASConfig.topology` accepts."""
    return [*TOPOLOGIES.names(), "custom"]
