"""LangGraph adapter (extra `langgraph`): one call protects a `StateGraph` or a compiled
graph, and `GuardedStore` guards a `BaseStore`.

    guard = protect(builder_or_compiled, defense="argus")
    app.invoke({...})            # unchanged; guard.log is the event log

LangGraph has no message objects between nodes: nodes read and write shared state. Each
node's runnable is wrapped. On the way out, the adapter notes who wrote what: the id of
every message a node returns (ids are given to messages that have none, as `add_messages`
would) and the text of every string channel it writes, `Command` updates and `Send`
packets included. On the way in, everything in the state the node is about to read that
another node wrote, and that this node has not read before, is one message on the edge
(writer -> node), screened once; the node reads the decision: the rewritten text, or for a
block the placeholder text (LangGraph cannot drop a message from shared state). A rewrite
is per receiver: the shared state keeps what the sender wrote, each receiver reads what
the defense decided for it.

The graph: nodes and edges (static, conditional with a path map, `Command[Literal[...]]`
destinations) are read from the builder; edges seen at run time are added. A round is a
LangGraph superstep: a new (thread, step) starts the next round, numbered across runs.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import is_dataclass, replace
from importlib import metadata
from typing import Any

from ..errors import MissingExtraError
from ._core import BLOCK_TEXT, Delivery, IntegrationError, Message, Protection, build_interceptors
from ._memory import HIDDEN, UNKNOWN, GuardedMemory

SUPPORTED = ("1.",)
START, END = "__start__", "__end__"


def _require() -> str:
    try:
        version = metadata.version("langgraph")
    except metadata.PackageNotFoundError:
        raise MissingExtraError("langgraph", "langgraph", "the LangGraph adapter") from None
    if not version.startswith(SUPPORTED):
        raise IntegrationError(
            f"misguard's LangGraph adapter supports langgraph 1.x; this environment has {version}: "
            "pip install 'misguard[langgraph]' (it pins a supported version)")
    return version


def _step_of(config: Mapping[str, Any] | None) -> Hashable:
    """The superstep this node runs in: (thread, namespace, step) from LangGraph's config."""
    config = config or {}
    meta = config.get("metadata") or {}
    conf = config.get("configurable") or {}
    # a node's namespace ends with its own task ("node:<task id>"); the rest names the graph
    # (or subgraph) whose superstep it is, which the nodes of one superstep share
    ns = str(meta.get("langgraph_checkpoint_ns") or conf.get("checkpoint_ns") or "").split("|")[:-1]
    return (conf.get("thread_id"), "|".join(part.split(":")[0] for part in ns), meta.get("langgraph_step"))


def _text_of(content: Any) -> str | None:
    """A message's text: a string, or the text blocks of a block list (None: no text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b if isinstance(b, str) else b.get("text", "") for b in content
                 if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")]
        return "\n".join(parts) if parts else None
    return None


class _Adapter:
    """Authorship bookkeeping and the translation between state and edge messages."""

    def __init__(self, protection: Protection) -> None:
        from langchain_core.messages import BaseMessage

        self.protection = protection
        self._message_type = BaseMessage
        self.authors: dict[str, str] = {}  # message id -> node
        self.channels: dict[str, tuple[str, str, int]] = {}  # channel -> (node, text it wrote, write number)
        self.packets: dict[tuple[str, str, str], tuple[str, int]] = {}  # (receiver, channel, text) -> sender, number
        self._writes = itertools.count(1)

    # -- the sender side -------------------------------------------------------------------

    def sent(self, node: str, output: Any) -> None:
        from langgraph.types import Command, Send

        if isinstance(output, Command):
            outputs: Sequence[Any] = [output]
        elif isinstance(output, (list, tuple)):
            outputs = output
        else:
            outputs = [output]
        for item in outputs:
            if isinstance(item, Command):
                self._note_update(node, dict(item._update_as_tuples()))
                gotos = item.goto if isinstance(item.goto, (list, tuple)) else [item.goto]
                for goto in gotos:
                    if isinstance(goto, Send):
                        self._note_packet(node, goto.node, goto.arg)
            elif isinstance(item, Mapping):
                self._note_update(node, item)
            elif hasattr(item, "__dict__") and not isinstance(item, self._message_type):
                self._note_update(node, {k: v for k, v in vars(item).items() if not k.startswith("_")})

    def _note_update(self, node: str, update: Mapping[str, Any]) -> None:
        for channel, value in update.items():
            if isinstance(value, str):
                self.channels[channel] = (node, value, next(self._writes))
            else:
                self._note_messages(node, value)

    def _note_messages(self, node: str, value: Any) -> None:
        items = value if isinstance(value, (list, tuple)) else [value]
        for message in items:
            if isinstance(message, self._message_type):
                if message.id is None:
                    message.id = str(uuid.uuid4())  # what add_messages would do: now we know it
                self.authors.setdefault(message.id, node)

    def _note_packet(self, node: str, receiver: str, arg: Any) -> None:
        if isinstance(arg, Mapping):
            for channel, value in arg.items():
                if isinstance(value, str):
                    self.packets[(receiver, channel, value)] = (node, next(self._writes))
                else:
                    self._note_messages(node, value)

    # -- the receiver side -----------------------------------------------------------------

    def incoming(self, node: str, state: Any) -> list[tuple[str, int | None, str, str, Hashable]]:
        """(channel, index in a message list or None, sender, text, key) of everything in
        `state` another node wrote."""
        fields = _fields(state)
        if fields is None:
            return []
        out: list[tuple[str, int | None, str, str, Hashable]] = []
        for channel, value in fields.items():
            if isinstance(value, str):
                found = self.packets.get((node, channel, value))
                writer = self.channels.get(channel)
                if found is None and writer is not None and writer[1] == value:
                    found = (writer[0], writer[2])
                if found is not None and found[0] != node:
                    out.append((channel, None, found[0], value, ("channel", channel, found[1])))
                continue
            if isinstance(value, (list, tuple)):
                for i, message in enumerate(value):
                    if not isinstance(message, self._message_type) or message.id is None:
                        continue
                    sender = self.authors.get(message.id)
                    text = _text_of(message.content)
                    if sender is not None and sender != node and text is not None:
                        out.append((channel, i, sender, text, ("message", message.id)))
        return out

    def apply(self, state: Any, decisions: list[tuple[str, int | None, Delivery]]) -> Any:
        """`state` with the receiver's reading of each changed item (a new object; the
        shared state is not touched)."""
        changed = [(c, i, d) for c, i, d in decisions if d.changed]
        if not changed:
            return state
        fields = dict(_fields(state) or {})
        for channel, index, delivery in changed:
            if index is None:
                fields[channel] = delivery.text
            else:
                items = list(fields[channel])
                items[index] = items[index].model_copy(update={"content": delivery.text})
                fields[channel] = type(fields[channel])(items) if isinstance(fields[channel], tuple) else items
        return _rebuild(state, fields)


def _fields(state: Any) -> dict[str, Any] | None:
    if isinstance(state, Mapping):
        return dict(state)
    model_fields = getattr(type(state), "model_fields", None)
    if model_fields is not None:
        return {name: getattr(state, name) for name in model_fields}
    if is_dataclass(state) and not isinstance(state, type):
        return {k: v for k, v in vars(state).items()}
    return None


def _rebuild(state: Any, fields: dict[str, Any]) -> Any:
    if isinstance(state, Mapping):
        new = dict(state)
        new.update(fields)
        return new
    if hasattr(state, "model_copy"):
        return state.model_copy(update=fields)
    return replace(state, **fields)


def _node_runnable(adapter: _Adapter, name: str, inner: Any) -> Any:
    from langchain_core.runnables import Runnable

    class GuardedNode(Runnable):  # type: ignore[type-arg]
        """`inner` with its input screened and its output's authorship noted."""

        def __init__(self) -> None:
            self.inner = inner
            self.name = getattr(inner, "name", name)

        def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
            items = adapter.incoming(name, input)
            deliveries = adapter.protection.screen_many_sync(
                [Message(s, name, t, k, {"channel": c}) for c, _, s, t, k in items], step=_step_of(config))
            decisions = [(c, i, d) for (c, i, _, _, _), d in zip(items, deliveries)]
            output = self.inner.invoke(adapter.apply(input, decisions), config, **kwargs)
            adapter.sent(name, output)
            return output

        async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
            items = adapter.incoming(name, input)
            deliveries = await adapter.protection.screen_many(
                [Message(s, name, t, k, {"channel": c}) for c, _, s, t, k in items], step=_step_of(config))
            decisions = [(c, i, d) for (c, i, _, _, _), d in zip(items, deliveries)]
            output = await self.inner.ainvoke(adapter.apply(input, decisions), config, **kwargs)
            adapter.sent(name, output)
            return output

    return GuardedNode()


def read_graph(app: Any) -> tuple[list[str], list[tuple[str, str]]]:
    """The agents (nodes) and declared edges of a `StateGraph` or a compiled graph;
    `__start__` and `__end__` are left out."""
    from langgraph.graph import StateGraph
    from langgraph.graph.state import CompiledStateGraph

    if isinstance(app, CompiledStateGraph):
        drawn = app.get_graph()
        nodes = [n for n in drawn.nodes if n not in (START, END)]
        edges = [(e.source, e.target) for e in drawn.edges]
    elif isinstance(app, StateGraph):
        nodes = list(app.nodes)
        edges = list(app._all_edges)
        for source, branches in app.branches.items():
            for branch in branches.values():
                edges.extend((source, end) for end in (branch.ends or {}).values())
        for source, spec in app.nodes.items():
            ends = spec.ends or ()
            edges.extend((source, end) for end in (ends.values() if isinstance(ends, dict) else ends))
    else:
        raise IntegrationError(
            f"cannot read a graph from {type(app).__name__}: protect a langgraph StateGraph (before or after "
            "compile()); for an agent from langchain.agents.create_agent pass "
            "middleware=[MisguardMiddleware(protection, agent=NAME)]")
    edges = [(a, b) for a, b in dict.fromkeys(edges) if a not in (START, END) and b not in (START, END)]
    return nodes, edges


def protect(
    app: Any,
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
) -> Protection:
    """Attach a defense to a LangGraph app: every node's input is screened for what other
    nodes wrote. `app` is changed in place (a builder: its nodes, before `compile()`; a
    compiled graph: its nodes); nothing else in the app changes. Returns the protection
    (its `log` is the event log; `finish()` closes the run).

    Args:
        defense: defense name(s) from `misguard.mas.DEFENSES` (argus, self-check,
            g-safeguard, claim-guard, ...); see `build_interceptors` for the rest.
        protection: reuse a protection (one log for several apps); the other component
            arguments are then ignored.
    """
    version = _require()
    from langgraph.graph import StateGraph
    from langgraph.graph.state import CompiledStateGraph

    agents, edges = read_graph(app)
    if protection is None:
        built = build_interceptors(defense, interceptors=interceptors, settings=settings, llm=llm,
                                   rectifier=rectifier, embedder=embedder, claim_store=claim_store, params=params)
        protection = Protection(built, framework=f"langgraph {version}", log_path=log_path, block_text=block_text)
    protection.declare(agents, edges)
    adapter = getattr(protection, "_langgraph", None) or _Adapter(protection)
    protection._langgraph = adapter  # type: ignore[attr-defined]
    if isinstance(app, CompiledStateGraph):
        for name in agents:
            node = app.nodes[name]
            if getattr(node.bound, "inner", None) is not None and type(node.bound).__name__ == "GuardedNode":
                raise IntegrationError(f"node {name!r} is already protected")
            app.nodes[name] = node.copy({"bound": _node_runnable(adapter, name, node.bound)})
    elif isinstance(app, StateGraph):
        if app.compiled:
            raise IntegrationError("this builder was compiled already: protect the compiled graph instead")
        for name in agents:
            spec = app.nodes[name]
            app.nodes[name] = replace(spec, runnable=_node_runnable(adapter, name, spec.runnable))
    return protection


class MisguardMiddleware:
    """Factory for a LangChain 1.x `AgentMiddleware` guarding a `create_agent` agent: before
    each model call, messages in its context that another agent wrote (an `AIMessage` or
    `HumanMessage` whose `name` is another agent, a `ToolMessage` of a tool that is another
    agent, or a message a protected graph node wrote) are screened, and the model reads the
    decision. Use `MisguardMiddleware.build(protection, agent="writer")`."""

    @staticmethod
    def build(protection: Protection, *, agent: str, tool_agents: Mapping[str, str] | None = None) -> Any:
        _require()
        try:
            from langchain.agents.middleware import AgentMiddleware
        except ImportError:
            raise MissingExtraError("langchain", "langgraph", "the create_agent middleware") from None
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

        adapter: _Adapter = getattr(protection, "_langgraph", None) or _Adapter(protection)
        protection._langgraph = adapter  # type: ignore[attr-defined]
        protection.declare([agent])
        tools = dict(tool_agents or {})
        calls = [0]

        def sender_of(message: Any) -> str | None:
            by_id = adapter.authors.get(message.id) if message.id else None
            if by_id is not None:
                return by_id
            if isinstance(message, ToolMessage):
                return tools.get(message.name or "")
            if isinstance(message, (AIMessage, HumanMessage)) and message.name:
                return message.name
            return None

        def pending(request: Any) -> list[tuple[int, str, str, Hashable]]:
            out = []
            for i, message in enumerate(request.messages):
                sender, text = sender_of(message), _text_of(message.content)
                if sender is not None and sender != agent and text is not None:
                    key = ("message", message.id) if message.id else ("content", sender, text)
                    out.append((i, sender, text, key))
            return out

        def applied(request: Any, decisions: list[tuple[int, Delivery]]) -> Any:
            if not any(d.changed for _, d in decisions):
                return request
            messages = list(request.messages)
            for i, delivery in decisions:
                if delivery.changed:
                    messages[i] = messages[i].model_copy(update={"content": delivery.text})
            return request.override(messages=messages)

        class Middleware(AgentMiddleware):  # type: ignore[misc]
            name = f"misguard[{agent}]"

            def wrap_model_call(self, request: Any, handler: Any) -> Any:
                calls[0] += 1
                step = ("agent", agent, calls[0])
                items = pending(request)
                deliveries = protection.screen_many_sync([Message(s, agent, t, k) for _, s, t, k in items], step=step)
                return handler(applied(request, [(i, d) for (i, _, _, _), d in zip(items, deliveries)]))

            async def awrap_model_call(self, request: Any, handler: Any) -> Any:
                calls[0] += 1
                step = ("agent", agent, calls[0])
                items = pending(request)
                deliveries = await protection.screen_many([Message(s, agent, t, k) for _, s, t, k in items], step=step)
                return await handler(applied(request, [(i, d) for (i, _, _, _), d in zip(items, deliveries)]))

        return Middleware()


def _agent_of(config: Mapping[str, Any] | None) -> tuple[str, Hashable]:
    meta = (config or {}).get("metadata") or {}
    return str(meta.get("langgraph_node") or "app"), _step_of(config)


class GuardedStore:
    """Factory for a `BaseStore` that guards another: see `GuardedStore.wrap`."""

    @staticmethod
    def wrap(inner: Any, memory: GuardedMemory) -> Any:
        """A `langgraph.store.base.BaseStore` over `inner`: every put is recorded in
        `memory` (agent = the node writing, from LangGraph's run config; its reads in the
        same step as provenance) and screened; gets and searches return what
        `memory.resolve` says (a quarantined write is not returned)."""
        _require()
        from langgraph.config import get_config
        from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchOp

        def whoami() -> tuple[str, Hashable]:
            try:
                return _agent_of(get_config())
            except RuntimeError:  # outside a graph run: the app itself
                return "app", None

        def before(ops: list[Any]) -> None:
            agent, step = whoami()
            for op in ops:
                if isinstance(op, PutOp):
                    scope = "/".join(op.namespace)
                    if op.value is None:
                        memory.delete(scope, op.key, agent=agent)
                    else:
                        memory.write(scope, op.key, op.value, agent=agent, step=step)

        def after(ops: list[Any], results: list[Any]) -> list[Any]:
            agent, step = whoami()
            out = []
            for op, result in zip(ops, results):
                if isinstance(op, GetOp):
                    out.append(_resolved(result, agent, step))
                elif isinstance(op, SearchOp):
                    out.append([r for r in (_resolved(item, agent, step) for item in result or []) if r is not None])
                else:
                    out.append(result)
            return out

        def _resolved(item: Any, agent: str, step: Hashable) -> Any:
            if item is None:
                return None
            value = memory.resolve("/".join(item.namespace), item.key, agent=agent, step=step)
            if value is UNKNOWN:
                return item
            if value is HIDDEN:
                return None
            if value == item.value:
                return item
            fields = dict(namespace=item.namespace, key=item.key, value=value, created_at=item.created_at,
                          updated_at=item.updated_at)
            if type(item) is Item:
                return Item(**fields)
            return type(item)(**fields, score=getattr(item, "score", None))

        class _GuardedStore(BaseStore):
            """A guarded `BaseStore` (reads filtered by misguard's memory guard)."""

            def __init__(self) -> None:
                self.inner = inner
                self.memory = memory
                self.supports_ttl = getattr(inner, "supports_ttl", False)

            def batch(self, ops: Any) -> list[Any]:
                ops = list(ops)
                before(ops)
                return after(ops, self.inner.batch(ops))

            async def abatch(self, ops: Any) -> list[Any]:
                ops = list(ops)
                before(ops)
                return after(ops, await self.inner.abatch(ops))

        return _GuardedStore()


__all__ = ["GuardedStore", "MisguardMiddleware", "protect", "read_graph"]
