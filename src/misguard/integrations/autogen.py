"""AutoGen adapter (extra `autogen`): AutoGen core's `InterventionHandler` on a
`SingleThreadedAgentRuntime`, which also carries AgentChat teams (`RoundRobinGroupChat`,
`SelectorGroupChat`, `GraphFlow`, ...); `GuardedMemory` wraps an `autogen_core.memory.Memory`.

    guard = protect(team, defense="argus")    # or a runtime
    await team.run(task="...")                                          # unchanged

Why AutoGen core and not Microsoft Agent Framework: Agent Framework workflows deliver
messages between executors through private edge runners (`Executor.execute` is documented
"do not override"); no public seam lets a third party rewrite or drop a message on an edge.
AutoGen core's intervention handlers are that seam.

What crosses an edge and what "block" means:
  - `send_message` (direct, core API): one message to one recipient, screened per recipient
    in `on_send`; an RPC answer (`on_response`) is a message from the responder back to the
    sender. A block is the placeholder text by default; `block="drop"` makes it a real drop
    (`DropMessage`: the runtime raises `MessageDroppedException` in the sender's
    `send_message`, and, in autogen-core 0.7.5, `stop_when_idle()` then never returns, with
    or without misguard; `stop()` does).
  - `publish_message` (AgentChat group chats): an agent's response is published once to the
    group topic and every other participant buffers it, so `on_publish` decides once for all
    receivers. misguard screens it on each edge it crosses (to every other participant: all
    buffer it, in a `GraphFlow` too) and applies the strongest decision to the one message:
    block over rewrite over pass (the first rewrite).
    A block is a real drop: nobody buffers it; the team's manager does not see it either.
Rounds: in a group chat, each speaker's turn is a round; for direct messages, the round is
the hop count (a message sent while handling a message of round r is in round r + 1).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any

from ..errors import MissingExtraError
from ._core import BLOCK_TEXT, Delivery, IntegrationError, Message, Protection, build_interceptors
from ._memory import HIDDEN, UNKNOWN, GuardedMemory

SUPPORTED = ("0.7.",)


def _require() -> str:
    try:
        version = metadata.version("autogen-core")
    except metadata.PackageNotFoundError:
        raise MissingExtraError("autogen-core", "autogen", "the AutoGen adapter") from None
    if not version.startswith(SUPPORTED):
        raise IntegrationError(
            f"misguard's AutoGen adapter supports autogen-core 0.7.x; this environment has {version}: "
            "pip install 'misguard[autogen]'")
    return version


def message_text(message: Any) -> str | None:
    """The text of a runtime message: a string, a chat message's `content`, an AgentChat
    agent response's chat message (None: nothing to screen)."""
    if isinstance(message, str):
        return message
    response = getattr(message, "response", None)
    if response is not None and hasattr(response, "chat_message"):
        return message_text(response.chat_message)
    content = getattr(message, "content", None)
    return content if isinstance(content, str) else None


def with_text(message: Any, text: str) -> Any:
    """A copy of `message` whose text is `text` (the original is not changed)."""
    if isinstance(message, str):
        return text
    response = getattr(message, "response", None)
    if response is not None and hasattr(response, "chat_message"):
        chat = with_text(response.chat_message, text)
        new_response = dataclasses.replace(response, chat_message=chat) if dataclasses.is_dataclass(response) \
            else response.model_copy(update={"chat_message": chat})
        return message.model_copy(update={"response": new_response})
    if hasattr(message, "model_copy"):
        return message.model_copy(update={"content": text})
    return dataclasses.replace(message, content=text)


def _agent_name(agent_id: Any, team_id: str | None) -> str:
    """An AgentChat participant's name from its agent id (`<name>_<team id>`)."""
    name = str(getattr(agent_id, "type", agent_id))
    if team_id and name.endswith(f"_{team_id}"):
        return name[: -len(team_id) - 1]
    return name


class _Adapter:
    def __init__(self, protection: Protection, drop: bool = False) -> None:
        self.protection = protection
        self.drop = drop
        self.team_id: str | None = None
        self.participants: list[str] = []
        self.turns = 0
        self.hops: dict[str, int] = {}  # agent -> round of the last message it received
        self.current: str | None = None
        self.unscreened: set[str] = set()

    async def screen_broadcast(self, sender: str, text: str) -> Delivery | None:
        self.turns += 1
        self.current = sender
        receivers = [p for p in self.participants if p != sender]
        decisions = await self.protection.screen_many(
            [Message(sender, r, text, metadata={"via": "publish"}) for r in receivers], step=("turn", self.turns))
        blocked = next((d for d in decisions if d.blocked), None)
        return blocked or next((d for d in decisions if d.changed), None)

    async def screen_direct(self, sender: str, receiver: str, text: str, via: str) -> Delivery:
        hop = self.hops.get(sender, 0) + 1
        self.hops[receiver] = max(self.hops.get(receiver, 0), hop)
        return await self.protection.screen(sender, receiver, text, step=("hop", hop), metadata={"via": via})

    async def note_unscreened(self, message: Any) -> None:
        kind = type(message).__name__
        if kind not in self.unscreened:
            self.unscreened.add(kind)
            await self.protection._record("unscreened", {"message_type": kind, "reason": "no text field"})


def _handler(adapter: _Adapter) -> Any:
    from autogen_core import DefaultInterventionHandler, DropMessage

    class MisguardInterventionHandler(DefaultInterventionHandler):  # type: ignore[misc]
        """Screens direct messages, RPC answers and group chat responses."""

        async def on_send(self, message: Any, *, message_context: Any, recipient: Any) -> Any:
            sender = message_context.sender
            text = message_text(message)
            if sender is None or text is None:
                # from outside the runtime (the app's own call), or no text: not an agent edge
                if sender is not None:
                    await adapter.note_unscreened(message)
                return message
            delivery = await adapter.screen_direct(_agent_name(sender, adapter.team_id),
                                                   _agent_name(recipient, adapter.team_id), text, "send")
            if delivery.blocked and adapter.drop:
                return DropMessage
            return with_text(message, delivery.text) if delivery.changed else message

        async def on_response(self, message: Any, *, sender: Any, recipient: Any) -> Any:
            text = message_text(message)
            if recipient is None or text is None:
                return message
            delivery = await adapter.screen_direct(_agent_name(sender, adapter.team_id),
                                                   _agent_name(recipient, adapter.team_id), text, "response")
            if delivery.blocked and adapter.drop:
                return DropMessage
            return with_text(message, delivery.text) if delivery.changed else message

        async def on_publish(self, message: Any, *, message_context: Any) -> Any:
            if type(message).__name__ != "GroupChatAgentResponse":
                return message  # control messages, streaming logs to the app, the task itself
            text = message_text(message)
            if text is None:
                await adapter.note_unscreened(message.response.chat_message)
                return message
            delivery = await adapter.screen_broadcast(message.name, text)
            if delivery is None:
                return message
            # a block is the placeholder text: the manager waits for every response to pick
            # the next speaker, and a dropped one would stall the team
            return with_text(message, delivery.text)

    return MisguardInterventionHandler()


def read_team(team: Any) -> tuple[str | None, list[str], list[tuple[str, str]]]:
    """(team id, participants, declared edges) of an AgentChat team: a `GraphFlow`'s graph
    edges; every ordered pair of participants for broadcast teams."""
    participants = list(getattr(team, "_participant_names", []))
    graph = getattr(team, "_graph", None)
    if graph is not None and hasattr(graph, "nodes"):
        edges = [(name, edge.target) for name, node in graph.nodes.items() for edge in node.edges]
    else:
        edges = [(a, b) for a in participants for b in participants if a != b]
    return getattr(team, "_team_id", None), participants, edges


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
    block: str = "placeholder",
    protection: Protection | None = None,
) -> Protection:
    """Attach a defense to an AutoGen app: an AgentChat team (its runtime) or a
    `SingleThreadedAgentRuntime`, before it runs. Returns the protection. Arguments as in
    `misguard.integrations.langgraph.protect`; `block="drop"` drops blocked direct messages
    (see the module docstring) instead of delivering the placeholder text."""
    if block not in ("placeholder", "drop"):
        raise IntegrationError(f"block must be 'placeholder' or 'drop', not {block!r}")
    version = _require()
    from autogen_core import SingleThreadedAgentRuntime

    runtime = getattr(app, "_runtime", app)
    if not isinstance(runtime, SingleThreadedAgentRuntime):
        raise IntegrationError(
            f"cannot protect {type(app).__name__}: intervention handlers exist only on autogen_core's "
            "SingleThreadedAgentRuntime; pass an AgentChat team or such a runtime")
    team_id, participants, edges = read_team(app) if runtime is not app else (None, [], [])
    if protection is None:
        built = build_interceptors(defense, interceptors=interceptors, settings=settings, llm=llm,
                                   rectifier=rectifier, embedder=embedder, claim_store=claim_store, params=params)
        protection = Protection(built, framework=f"autogen-core {version}", log_path=log_path, block_text=block_text)
    protection.declare(participants, edges)
    adapter = _Adapter(protection, drop=block == "drop")
    adapter.team_id, adapter.participants = team_id, participants
    # AutoGen warns about every RPC answer that is None once any handler is installed (group
    # chat handlers answer None): a false alarm of the runtime, not of this handler.
    warnings.filterwarnings("ignore", message="Intervention handler on_response returned None",
                            category=RuntimeWarning)
    handlers = runtime._intervention_handlers
    if handlers and any(type(h).__name__ == "MisguardInterventionHandler" for h in handlers):
        raise IntegrationError("this runtime is already protected")
    # the runtime reads this list on every message; there is no public setter after construction
    runtime._intervention_handlers = [*(handlers or []), _handler(adapter)]
    protection._autogen = adapter  # type: ignore[attr-defined]
    return protection


def _digest(content: Any) -> str:
    """Memory contents carry no id: a content digest (plus its occurrence) is the key."""
    raw = json.dumps(content, sort_keys=True, default=str)
    return hashlib.sha1(raw.encode()).hexdigest()[:16]


class GuardedAutogenMemory:
    """Factory for an `autogen_core.memory.Memory` over another: see `wrap`."""

    @staticmethod
    def wrap(inner: Any, memory: GuardedMemory, *, name: str = "memory", agent: str | None = None,
             protection: Protection | None = None) -> Any:
        """Every `add` is recorded in `memory` (agent: `agent`, else the speaker of the
        current turn when `protection` protects the team, else "app") and screened; `query`
        and `update_context` leave quarantined contents out and return rewrites."""
        _require()
        from autogen_core.memory import Memory, MemoryContent, MemoryQueryResult, UpdateContextResult
        from autogen_core.models import SystemMessage

        adapter: _Adapter | None = getattr(protection, "_autogen", None) if protection else None
        counts: dict[str, int] = {}

        def writer() -> str:
            return agent or (adapter.current if adapter is not None and adapter.current else "app")

        def resolved(results: Sequence[Any]) -> list[Any]:
            out = []
            seen: dict[str, int] = {}
            for item in results:
                base = _digest(item.content)
                seen[base] = seen.get(base, 0) + 1
                value = memory.resolve(name, f"{base}.{seen[base]}", agent=writer())
                if value is HIDDEN:
                    continue
                out.append(item if value is UNKNOWN else item.model_copy(update={"content": value}))
            return out

        class _Guarded(Memory):  # type: ignore[misc]
            component_type = "memory"

            def __init__(self) -> None:
                self.inner = inner
                self.memory = memory

            async def add(self, content: Any, cancellation_token: Any = None) -> None:
                base = _digest(content.content)
                counts[base] = counts.get(base, 0) + 1
                key = f"{base}.{counts[base]}"
                text = content.content if isinstance(content.content, str) else None
                memory.write(name, key, content.content, agent=writer(), text=text)
                await inner.add(content, cancellation_token)

            async def query(self, query: Any, cancellation_token: Any = None, **kwargs: Any) -> Any:
                result = await inner.query(query, cancellation_token, **kwargs)
                return MemoryQueryResult(results=resolved(result.results))

            async def update_context(self, model_context: Any) -> Any:
                messages = await model_context.get_messages()
                last = messages[-1].content if messages and isinstance(messages[-1].content, str) else ""
                results = (await self.query(MemoryContent(content=last, mime_type="text/plain"))).results
                if results:
                    lines = "\n".join(f"{i}. {r.content}" for i, r in enumerate(results, 1))
                    await model_context.add_message(SystemMessage(content=f"\nRelevant memory content (in chronological order):\n{lines}\n"))
                return UpdateContextResult(memories=MemoryQueryResult(results=results))

            async def clear(self) -> None:
                await inner.clear()

            async def close(self) -> None:
                await inner.close()

        return _Guarded()


__all__ = ["GuardedAutogenMemory", "message_text", "protect", "read_team", "with_text"]
