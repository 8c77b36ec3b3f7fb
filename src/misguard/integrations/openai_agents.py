"""OpenAI Agents SDK adapter (extra `openai-agents`): one call protects an agent and every
agent it can reach (handoffs, agents used as tools); `GuardedSession` guards a `Session`.

    guard = protect(triage_agent, defense="claim-guard", claim_store=store)
    result = await Runner.run(triage_agent, "...")      # unchanged

The seam is each agent's `hooks` (`AgentHooks`; hooks the app already set keep running):
`on_llm_end` notes who wrote each output (assistant text, and the arguments of a call to an
agent used as a tool), and `on_llm_start` screens, before every model call of an agent,
the items of its input another agent wrote and it has not read before: assistant messages
handed over with a handoff, the output of an agent used as a tool, the request an agent
sent to an agent it uses as a tool. The SDK hands the hook the very list the model
reads next, so the decision is what the model reads: a rewrite replaces the item's text, a
block removes a message item from the receiver's input (a real drop) and replaces a tool
output with the placeholder text (the call and its output must stay paired). The run's own
items (its `RunResult`, traces) keep what the sender wrote.

The graph: `agent.handoffs` and agents used as tools (`Agent.as_tool`), walked from the
agent given; edges seen at run time are added. A round is an agent turn: each time an agent
starts (the first agent, or one handed off to) the next round begins.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from importlib import metadata
from typing import Any

from ..errors import MissingExtraError
from ._core import BLOCK_TEXT, Delivery, IntegrationError, Message, Protection, build_interceptors
from ._memory import HIDDEN, UNKNOWN, GuardedMemory

SUPPORTED = ("0.24.",)


def _require() -> str:
    try:
        version = metadata.version("openai-agents")
    except metadata.PackageNotFoundError:
        raise MissingExtraError("openai-agents", "openai-agents", "the OpenAI Agents SDK adapter") from None
    if not version.startswith(SUPPORTED):
        raise IntegrationError(
            f"misguard's Agents SDK adapter supports openai-agents 0.24.x (its hooks and items change between "
            f"minor versions); this environment has {version}: pip install 'misguard[openai-agents]'")
    return version


def item_text(item: Any) -> str | None:
    """The text of an input item: a message's text parts, a tool output (None: no text)."""
    if not isinstance(item, Mapping):
        item = item.model_dump(exclude_none=True) if hasattr(item, "model_dump") else None
        if item is None:
            return None
    if item.get("type") == "function_call_output":
        output = item.get("output")
        return output if isinstance(output, str) else None
    if item.get("type", "message") != "message":
        return None
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        return "\n".join(parts) if parts else None
    return None


def _with_text(item: Mapping[str, Any], text: str) -> dict[str, Any]:
    new = copy.deepcopy(dict(item))
    if new.get("type") == "function_call_output":
        new["output"] = text
    elif isinstance(new.get("content"), str):
        new["content"] = text
    else:
        parts = [p for p in new.get("content") or [] if isinstance(p, Mapping) and "text" in p]
        kind = parts[0].get("type", "output_text") if parts else "output_text"
        first = {**parts[0], "text": text} if parts else {"type": kind, "text": text, "annotations": []}
        new["content"] = [first]
    return new


def walk_agents(agent: Any) -> tuple[list[Any], list[tuple[str, str, str]]]:
    """Every agent reachable from `agent` and the declared edges (sender, receiver, kind):
    a handoff A -> B; an agent used as a tool A <-> B (A's request, B's answer)."""
    from agents import Agent, Handoff

    if not isinstance(agent, Agent):
        raise IntegrationError(
            f"cannot read agents from {type(agent).__name__}: protect an agents.Agent (the one you pass to Runner.run)")
    seen: dict[str, Any] = {}
    edges: list[tuple[str, str, str]] = []
    todo = [agent]
    while todo:
        current = todo.pop()
        if current.name in seen:
            if seen[current.name] is not current:
                raise IntegrationError(f"two different agents are named {current.name!r}: give each agent its own name")
            continue
        seen[current.name] = current
        for target in current.handoffs:
            if isinstance(target, Handoff):
                # a Handoff object names its target; the agent itself is reached when the run hands off
                edges.append((current.name, target.agent_name, "handoff"))
                continue
            edges.append((current.name, target.name, "handoff"))
            todo.append(target)
        for tool in current.tools:
            inner = getattr(tool, "_agent_instance", None)
            if getattr(tool, "_is_agent_tool", False) and inner is not None:
                edges.append((current.name, inner.name, "tool"))
                edges.append((inner.name, current.name, "tool"))
                todo.append(inner)
    return list(seen.values()), edges


class _Adapter:
    """Authorship and translation between the SDK's items and edge messages."""

    def __init__(self, protection: Protection, round_key: Callable[[str], Hashable] | None = None) -> None:
        self.protection = protection
        self.round_key = round_key
        self.authors: dict[str, str] = {}  # assistant text -> agent
        self.item_authors: dict[str, str] = {}  # output item id -> agent (when the model gives real ids)
        self.calls: dict[str, tuple[str, str]] = {}  # call id -> (caller, agent used as tool)
        self.requests: dict[tuple[str, str], str] = {}  # (agent used as tool, request text) -> caller
        self.tool_agents: dict[str, str] = {}  # tool name -> agent name
        self.turns: dict[str, int] = {}
        self.current: str | None = None
        self.previous: str | None = None

    def started(self, agent: str) -> None:
        self.turns[agent] = self.turns.get(agent, 0) + 1
        if agent != self.current:
            self.previous, self.current = self.current, agent

    def step(self, agent: str) -> Hashable:
        if self.round_key is not None:
            return self.round_key(agent)
        return ("turn", agent, self.turns.get(agent, 0))

    def ended(self, agent: str, response: Any) -> None:
        for item in getattr(response, "output", None) or []:
            data = item.model_dump(exclude_none=True) if hasattr(item, "model_dump") else dict(item)
            if data.get("type") == "function_call" and data.get("name") in self.tool_agents:
                target = self.tool_agents[data["name"]]
                self.calls[data.get("call_id", "")] = (agent, target)
                request = _tool_request(data.get("arguments", ""))
                if request:
                    self.requests[(target, request)] = agent
                continue
            text = item_text(data)
            if text is not None and data.get("role") == "assistant":
                self.authors[text] = agent
                if _real_id(data.get("id")):
                    self.item_authors[data["id"]] = agent

    def incoming(self, agent: str, items: Sequence[Any]) -> list[tuple[int, str, str, Hashable]]:
        """(index, sender, text, key) of the input items another agent wrote; the key is the
        item's id where it has one (a message sent twice with the same text is two
        messages), else its sender and text."""
        out = []
        for i, item in enumerate(items):
            data = item if isinstance(item, Mapping) else (item.model_dump(exclude_none=True) if hasattr(item, "model_dump") else {})
            text = item_text(data)
            if text is None:
                continue
            sender: str | None = None
            if data.get("type") == "function_call_output":
                call = self.calls.get(data.get("call_id", ""))
                sender = call[1] if call is not None and call[0] == agent else None
            elif data.get("role") == "assistant":
                # by id first: two agents may write the same text
                sender = self.item_authors.get(data.get("id") or "") or self.authors.get(text)
            elif data.get("role") == "user":
                sender = self.requests.get((agent, text))
            if sender is None and _nested_history(text):
                # `nest_handoff_history`: the previous agent's turn arrives as one summary message
                sender = self.previous
            if sender is not None and sender != agent:
                item_id = data.get("id")
                key = ("id", sender, item_id) if _real_id(item_id) else ("item", sender, text)
                out.append((i, sender, text, key))
        return out

    async def screen_input(self, agent: str, items: list[Any]) -> None:
        """Screen `items` (the list the model reads next) in place."""
        incoming = self.incoming(agent, items)
        deliveries = await self.protection.screen_many(
            [Message(sender, agent, text, key) for _, sender, text, key in incoming], step=self.step(agent))
        decisions: list[tuple[int, Delivery]] = [(i, d) for (i, _, _, _), d in zip(incoming, deliveries)]
        for i, delivery in sorted(decisions, key=lambda d: d[0], reverse=True):
            if not delivery.changed:
                continue
            item = items[i] if isinstance(items[i], Mapping) else items[i].model_dump(exclude_none=True)
            if delivery.blocked and item.get("type", "message") == "message":
                del items[i]  # a real drop: the receiver never reads it
            else:
                items[i] = _with_text(item, delivery.text)


def _real_id(item_id: Any) -> bool:
    """An item id that names one item (chat-completions models give every item the same
    placeholder id)."""
    from agents.models.fake_id import FAKE_RESPONSES_ID

    return isinstance(item_id, str) and bool(item_id) and item_id != FAKE_RESPONSES_ID


def _nested_history(text: str) -> bool:
    from agents.handoffs import get_conversation_history_wrappers

    start, _ = get_conversation_history_wrappers()
    return start in text


def _tool_request(arguments: str) -> str:
    """The text an agent used as a tool receives: the `input` of the call's arguments."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments
    return str(parsed.get("input", "")) if isinstance(parsed, Mapping) else str(parsed)


def _hooks(adapter: _Adapter, inner: Any) -> Any:
    from agents import AgentHooks

    class GuardedHooks(AgentHooks):  # type: ignore[misc]
        """misguard's screening, then the agent's own hooks (if any)."""

        def __init__(self) -> None:
            self.inner = inner

        async def on_start(self, context: Any, agent: Any) -> None:
            adapter.started(agent.name)
            if inner is not None:
                await inner.on_start(context, agent)

        async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
            await adapter.screen_input(agent.name, input_items)
            if inner is not None:
                await inner.on_llm_start(context, agent, system_prompt, input_items)

        async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
            adapter.ended(agent.name, response)
            if inner is not None:
                await inner.on_llm_end(context, agent, response)

        async def on_end(self, context: Any, agent: Any, output: Any) -> None:
            if inner is not None:
                await inner.on_end(context, agent, output)

        async def on_handoff(self, context: Any, agent: Any, source: Any) -> None:
            if inner is not None:
                await inner.on_handoff(context, agent, source)

        async def on_tool_start(self, context: Any, agent: Any, tool: Any) -> None:
            if inner is not None:
                await inner.on_tool_start(context, agent, tool)

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            if inner is not None:
                await inner.on_tool_end(context, agent, tool, result)

    return GuardedHooks()


def protect(
    agent: Any,
    defense: str | Sequence[str] | None = None,
    *,
    interceptors: Sequence[Any] = (),
    settings: Any = None,
    llm: Any = None,
    rectifier: Any = None,
    embedder: Any = None,
    claim_store: Any = None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
    log_path: Any = None,
    block_text: str = BLOCK_TEXT,
    protection: Protection | None = None,
    round_key: Callable[[str], Hashable] | None = None,
) -> Protection:
    """Attach a defense to an Agents SDK app: `agent` and every agent it reaches get hooks
    that screen what other agents wrote before each model call. Returns the protection.
    Arguments as in `misguard.integrations.langgraph.protect`, and:

    Args:
        round_key: agent name -> the app's step it is running in; a new key starts the
            next round. Default: every agent turn is a round (an app whose agents run
            side by side in rounds, e.g. one `Runner.run` per agent per round, returns
            its round number so that all of a round's turns are one round).
    """
    version = _require()
    agents_found, edges = walk_agents(agent)
    if protection is None:
        built = build_interceptors(defense, interceptors=interceptors, settings=settings, llm=llm,
                                   rectifier=rectifier, embedder=embedder, claim_store=claim_store, params=params)
        protection = Protection(built, framework=f"openai-agents {version}", log_path=log_path, block_text=block_text)
    protection.declare([a.name for a in agents_found], [(a, b) for a, b, _ in edges])
    adapter = getattr(protection, "_agents_sdk", None) or _Adapter(protection, round_key)
    protection._agents_sdk = adapter  # type: ignore[attr-defined]
    for found in agents_found:
        if type(found.hooks).__name__ == "GuardedHooks":
            raise IntegrationError(f"agent {found.name!r} is already protected")
        for tool in found.tools:
            inner = getattr(tool, "_agent_instance", None)
            if getattr(tool, "_is_agent_tool", False) and inner is not None:
                adapter.tool_agents[tool.name] = inner.name
        found.hooks = _hooks(adapter, found.hooks)
    return protection


class GuardedSession:
    """A `agents.memory.Session` over another: every item added is recorded in `memory`
    (agent: the author of the text when a protection knows it, else the run's current agent
    or the item's role), screened, and left out of `get_items` while quarantined.

    Args:
        inner: the app's session (e.g. `agents.SQLiteSession`).
        memory: the guarded memory; its scope for this session is `inner.session_id`.
        protection: the app's protection (to name the agent that wrote each item).
    """

    def __init__(self, inner: Any, memory: GuardedMemory, *, protection: Protection | None = None) -> None:
        _require()
        self.inner = inner
        self.memory = memory
        self.session_id = inner.session_id
        self.session_settings = getattr(inner, "session_settings", None)
        self._adapter: _Adapter | None = getattr(protection, "_agents_sdk", None) if protection else None

    def _author(self, item: Mapping[str, Any], text: str) -> str:
        if self._adapter is not None:
            if text in self._adapter.authors:
                return self._adapter.authors[text]
            if self._adapter.current is not None and item.get("role") != "user":
                return self._adapter.current
        return str(item.get("role") or item.get("type") or "app")

    @staticmethod
    def _keys(items: Sequence[Any]) -> list[str]:
        """A key per item: its content's digest and occurrence (items carry no stable id)."""
        import hashlib

        counts: dict[str, int] = {}
        keys = []
        for item in items:
            data = item if isinstance(item, Mapping) else item.model_dump(exclude_none=True)
            digest = hashlib.sha1(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]
            counts[digest] = counts.get(digest, 0) + 1
            keys.append(f"{digest}.{counts[digest]}")
        return keys

    async def get_items(self, limit: int | None = None) -> list[Any]:
        items = await self.inner.get_items()
        reader = self._adapter.current if self._adapter is not None and self._adapter.current else "app"
        out = []
        for item, key in zip(items, self._keys(items)):
            value = self.memory.resolve(self.session_id, key, agent=reader)
            if value is HIDDEN:
                continue
            out.append(item if value is UNKNOWN else value)
        return out[-limit:] if limit else out

    async def add_items(self, items: list[Any]) -> None:
        before = await self.inner.get_items()
        keys = self._keys([*before, *items])[len(before):]
        for item, key in zip(items, keys):
            data = item if isinstance(item, Mapping) else item.model_dump(exclude_none=True)
            text = item_text(data)
            agent = self._author(data, text or "")
            self.memory.write(self.session_id, key, dict(data), agent=agent, text=text)
        await self.inner.add_items(items)

    async def pop_item(self) -> Any:
        items = await self.inner.get_items()
        if items:
            self.memory.delete(self.session_id, self._keys(items)[-1], agent="app")
        return await self.inner.pop_item()

    async def clear_session(self) -> None:
        items = await self.inner.get_items()
        for key in self._keys(items):
            self.memory.delete(self.session_id, key, agent="app")
        await self.inner.clear_session()


__all__ = ["GuardedSession", "item_text", "protect", "walk_agents"]
