"""The framework-neutral layer: a `Protection` holds the interceptors of one or more
defenses, the communication graph, the round counter and the event log, and decides what
a receiver reads of a message another agent sent. Adapters only translate: a framework
message crossing from one agent to another becomes an `EdgeMessage`, and the decision
(pass, rewrite, block) goes back as the text the receiver reads.

Every interceptor runs on one event loop owned by the protection (a daemon thread), so a
defense's state and its LLM client see one loop whether the app calls in from sync code,
from worker threads or from its own event loop.

Events are the native runtime's (`misguard.mas` event log, same schema and version):
`start`, `interceptor_round`, `interception`, `message`, `round_end`, `end`, plus
`edge_discovered` (an edge seen at run time that the framework did not declare) and the
memory events of `GuardedMemory`.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Awaitable, Hashable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..config import Settings, load_settings
from ..errors import ConfigError, MisguardError
from ..mas import (
    DefenseContext,
    EventLog,
    EventLogView,
    InterceptorAction,
    Interceptor,
    SystemView,
    build_defense,
    run_interceptors,
)
from ..types import EdgeMessage, Usage

if TYPE_CHECKING:
    import networkx as nx

    from ..embed import Embedder
    from ..llm import LLM

T = TypeVar("T")

#: What a blocked message becomes where a framework cannot drop it.
BLOCK_TEXT = "[message withheld by misguard: {reason}]"


class IntegrationError(ConfigError):
    """An app or framework the adapter cannot protect (and says what to do instead)."""


@dataclass(frozen=True)
class Delivery:
    """What the receiver reads of one message.

    Attributes:
        action: pass, rewrite or block (the strongest action of the interceptors).
        text: the text the receiver reads (the original, the rewrite, or for a block the
            text the adapter shows where the framework cannot drop a message).
        original: what the sender wrote.
        message_id: the `EdgeMessage` id in the event log.
        reason: the last deciding interceptor's reason.
    """

    action: InterceptorAction
    text: str
    original: str
    message_id: str
    reason: str = ""

    @property
    def blocked(self) -> bool:
        return self.action is InterceptorAction.BLOCK

    @property
    def changed(self) -> bool:
        return self.action is not InterceptorAction.PASS


@dataclass(frozen=True)
class Message:
    """One message for `Protection.screen_many`: `key` identifies it for its receiver (a
    message screened once for a receiver is not screened again)."""

    sender: str
    receiver: str
    text: str
    key: Hashable = None
    metadata: Mapping[str, Any] | None = None


class _LoopThread:
    """An event loop on a daemon thread; coroutines are submitted from any thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="misguard-protection", daemon=True)
        self._thread.start()

    def submit(self, coro: Awaitable[T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]

    def run(self, coro: Awaitable[T]) -> T:
        if threading.current_thread() is self._thread:
            raise RuntimeError("a protection cannot wait for itself")
        return self.submit(coro).result()

    def close(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)
        if not self.loop.is_running():
            self.loop.close()


class Protection:
    """Interceptors on the messages between a framework's agents.

    Args:
        interceptors: applied in order to every message (as in the native runtime).
        framework: the adapter's name and version, for the log header.
        log: the event log (default: in memory; `log_path` streams it to a JSONL file).
        block_text: what a blocked message becomes where the framework cannot drop it;
            `{reason}` is replaced by the interceptor's reason.
        components: extra descriptions for the `start` event.
    """

    def __init__(
        self,
        interceptors: Sequence[Interceptor],
        *,
        framework: str = "",
        log: EventLog | None = None,
        log_path: str | Path | None = None,
        block_text: str = BLOCK_TEXT,
        components: Mapping[str, Any] | None = None,
    ) -> None:
        import networkx as nx

        for interceptor in interceptors:
            if not isinstance(interceptor, Interceptor):
                raise ConfigError(f"{interceptor!r} is not an interceptor (needs name, start_round, intercept, describe)")
        self.interceptors = list(interceptors)
        self.framework = framework
        self.log = log or EventLog(log_path, meta={"framework": framework})
        self.block_text = block_text
        self.components = dict(components or {})
        self.graph: nx.DiGraph = nx.DiGraph()
        self.round = 0
        self._step: Hashable = object()
        self._counter = itertools.count(1)
        self._decisions: dict[tuple[Hashable, str], Delivery] = {}
        self._round_counts = [0, 0]  # sent, delivered in the current round
        self._started = False
        self._finished = False
        self._runner = _LoopThread()
        self._lock: asyncio.Lock | None = None  # made on the runner's loop
        self.agents: list[str] = []
        self._view: SystemView | None = None
        self._view_shape: tuple[int, int, int] = (-1, -1, -1)

    # -- the graph -------------------------------------------------------------------------

    def declare(self, agents: Iterable[str] = (), edges: Iterable[tuple[str, str]] = ()) -> None:
        """Agents and edges the framework declares (before the first message)."""
        for agent in agents:
            self._add_agent(agent)
        for sender, receiver in edges:
            self._add_agent(sender)
            self._add_agent(receiver)
            self.graph.add_edge(sender, receiver, source="declared")

    def _add_agent(self, agent: str) -> None:
        if agent not in self.graph:
            self.graph.add_node(agent)
            self.agents.append(agent)

    def _observe_edge(self, sender: str, receiver: str) -> None:
        if self.graph.has_edge(sender, receiver):
            return
        self._add_agent(sender)
        self._add_agent(receiver)
        self.graph.add_edge(sender, receiver, source="runtime")
        if self._started:
            self.log.add("edge_discovered", round=self.round, sender=sender, receiver=receiver)

    def view(self) -> SystemView:
        """What interceptors see; one copy of the graph per round and graph shape, as the
        native runtime shares one view among the messages of a round."""
        shape = (self.round, self.graph.number_of_nodes(), self.graph.number_of_edges())
        if self._view is None or self._view_shape != shape:
            self._view = SystemView(self.graph.copy(), self.round, EventLogView(self.log), tuple(self.agents))
            self._view_shape = shape
        return self._view

    # -- rounds ----------------------------------------------------------------------------

    async def _enter(self, step: Hashable) -> None:
        """Make `step` (the framework's step key) the current round: a new key closes the
        current round and starts the next one (interceptors' `start_round` runs once)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if step == self._step:
                return
            if not self._started:
                self._start()
            if self.round:
                self._close_round()
            self._step = step
            self.round += 1
            view = self.view()
            for interceptor in self.interceptors:
                report = await interceptor.start_round(view)
                if report:
                    self.log.add("interceptor_round", round=self.round, interceptor=interceptor.name, **report)

    def _start(self) -> None:
        self._started = True
        self.log.add(
            "start", task_id=self.log.meta.get("task_id", ""), agents=list(self.agents),
            edges=[list(e) for e in self.graph.edges()], compromised={}, seed=0,
            components={"framework": self.framework, "interceptors": [i.describe() for i in self.interceptors],
                        **self.components},
        )

    def _close_round(self) -> None:
        sent, delivered = self._round_counts
        self.log.add("round_end", round=self.round, sent=sent, delivered=delivered)
        self._round_counts = [0, 0]

    # -- messages --------------------------------------------------------------------------

    async def screen(
        self, sender: str, receiver: str, text: str, *, step: Hashable = None, key: Hashable = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Delivery:
        """What `receiver` reads of `text` from `sender`, from any event loop.

        Args:
            step: the framework's step key (a new key starts a new round); None: the current.
            key: identifies the message for this receiver: a message screened once is not
                screened (or logged) again, the same decision is returned.
            metadata: logged with the message.
        """
        self._check_open()
        return await asyncio.wrap_future(self._runner.submit(self._screen(sender, receiver, text, step, key, metadata)))

    def screen_sync(
        self, sender: str, receiver: str, text: str, *, step: Hashable = None, key: Hashable = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Delivery:
        """`screen` for synchronous callers (any thread but the protection's own)."""
        self._check_open()
        return self._runner.run(self._screen(sender, receiver, text, step, key, metadata))

    async def screen_many(self, messages: Sequence[Message], *, step: Hashable = None) -> list[Delivery]:
        """`screen` for several messages of one step in one hop to the protection's loop
        (in order: each sees the log as the previous left it)."""
        self._check_open()
        known = self._known(messages)
        if known is not None:
            return known
        return await asyncio.wrap_future(self._runner.submit(self._screen_all(messages, step)))

    def screen_many_sync(self, messages: Sequence[Message], *, step: Hashable = None) -> list[Delivery]:
        """`screen_many` for synchronous callers."""
        self._check_open()
        known = self._known(messages)
        if known is not None:
            return known
        return self._runner.run(self._screen_all(messages, step))

    def _known(self, messages: Sequence[Message]) -> list[Delivery] | None:
        """The decisions when every message was screened for its receiver before (no hop)."""
        found = [self._decisions.get((m.key, m.receiver)) if m.key is not None else None for m in messages]
        return found if all(d is not None for d in found) else None  # type: ignore[return-value]

    async def begin(self, step: Hashable) -> None:
        """Start the round of framework step `step` now (interceptors' `start_round`), even
        if no message crosses an edge in it, as the native runtime starts every round."""
        self._check_open()
        await asyncio.wrap_future(self._runner.submit(self._enter(step)))

    def begin_sync(self, step: Hashable) -> None:
        """`begin` for synchronous callers."""
        self._check_open()
        self._runner.run(self._enter(step))

    def _check_open(self) -> None:
        if self._finished:
            raise MisguardError("this protection was finished; protect the app again for a new run")

    def cached(self, key: Hashable, receiver: str) -> Delivery | None:
        """The decision already taken on message `key` for `receiver`, if any."""
        return self._decisions.get((key, receiver))

    async def _screen(
        self, sender: str, receiver: str, text: str, step: Hashable, key: Hashable,
        metadata: Mapping[str, Any] | None,
    ) -> Delivery:
        (delivery,) = await self._screen_all([Message(sender, receiver, text, key, metadata)], step)
        return delivery

    async def _screen_all(self, messages: Sequence[Message], step: Hashable) -> list[Delivery]:
        """The native runtime's round: a step's messages are intercepted concurrently (a
        decision must not depend on which finished first) and logged in the order sent."""
        out: list[Delivery | None] = [self._decisions.get((m.key, m.receiver)) if m.key is not None else None
                                      for m in messages]
        todo = [i for i, d in enumerate(out) if d is None]
        if not todo:
            return out  # type: ignore[return-value]
        if step is not None or not self.round:
            await self._enter(step if step is not None else ("default",))
        edges = []
        for i in todo:
            m = messages[i]
            self._observe_edge(m.sender, m.receiver)
            edges.append(EdgeMessage(
                sender=m.sender, receiver=m.receiver, round=self.round, text=m.text, metadata=dict(m.metadata or {}),
                id=f"r{self.round}-{m.sender}-{m.receiver}-{next(self._counter):06d}",
            ))
        decisions = await asyncio.gather(*(self._intercept(e) for e in edges))
        for i, message, (current, action, reason) in zip(todo, edges, decisions):
            ok = action is not InterceptorAction.BLOCK
            self.log.add(
                "message", round=message.round, id=message.id, sender=message.sender, receiver=message.receiver,
                original=message.text, text=current if ok else None, delivered=ok, action=action.value,
                metadata=message.metadata,
            )
            self._round_counts[0] += 1
            self._round_counts[1] += int(ok)
            shown = current if ok else self.block_text.format(reason=reason or "blocked")
            delivery = Delivery(action, shown, message.text, message.id, reason)
            if messages[i].key is not None:
                self._decisions[(messages[i].key, message.receiver)] = delivery
            out[i] = delivery
        return out  # type: ignore[return-value]

    async def _intercept(self, message: EdgeMessage) -> tuple[str, InterceptorAction, str]:
        """The native runtime's rule (`run_interceptors`), on this app's view and log."""
        return await run_interceptors(self.interceptors, message, self.view(), self.log)

    def record(self, type: str, **data: Any) -> None:
        """Add an event of the adapter's own (e.g. a memory action) to the log, in order."""
        if self._finished:
            self.log.add(type, round=self.round, **data)  # memory repaired after the run
            return
        self._runner.run(self._record(type, data))

    async def _record(self, type: str, data: dict[str, Any]) -> None:
        self.log.add(type, round=self.round, **data)

    # -- the end ---------------------------------------------------------------------------

    def finish(self, answer: str | None = None) -> EventLog:
        """Close the last round, log the final answer (if given) and usage; returns the log.
        The protection screens nothing after this."""
        if self._finished:
            return self.log
        self._runner.run(self._finish(answer))
        self._finished = True
        self._runner.close()
        self.log.close()
        return self.log

    async def _finish(self, answer: str | None) -> None:
        if not self._started:
            self._start()
        if self.round:
            self._close_round()
        if answer is not None:
            self.log.add("final", round=self.round, answer=answer)
        total = Usage()
        by_interceptor = self.log.usage_by("interceptor")
        for usage in by_interceptor.values():
            total.add(usage)
        self.log.add(
            "end", wall_s=0.0, usage=Usage().model_dump(), usage_by_agent={},
            usage_by_interceptor={k: v.model_dump() for k, v in sorted(by_interceptor.items())},
            edges=[[a, b, d.get("source", "")] for a, b, d in self.graph.edges(data=True)],
        )

    def save(self, path: str | Path) -> Path:
        """Write the event log so far to `path` (atomic)."""
        return self.log.dump(path)

    def describe(self) -> dict[str, Any]:
        return {"framework": self.framework, "interceptors": [i.describe() for i in self.interceptors]}


def build_interceptors(
    defense: str | Sequence[str] | None = None,
    *,
    interceptors: Sequence[Interceptor] = (),
    settings: Settings | None = None,
    llm: LLM | str | None = None,
    rectifier: LLM | str | None = None,
    embedder: Embedder | str | None = None,
    claim_store: Any = None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Interceptor]:
    """The interceptors of the named defenses (registered in `misguard.mas.DEFENSES`),
    followed by `interceptors`. A defense that needs a component not given (an LLM, a claim
    store) is a `ConfigError` naming the argument to pass: never an unprotected app.

    Args:
        defense: one name or several (e.g. `["claim-guard", "argus"]`).
        llm: the LLM of the defense's `worker` role (a spec such as `local/qwen2.5-0.5b`,
            or an `LLM`); `rectifier`: ARGUS's rectifier (default: `llm`).
        embedder: an `Embedder` or a spec (default: `settings.embed.model`, built only if a
            defense needs one).
        params: per defense, overrides of its `settings.defense` section.
    """
    names = [defense] if isinstance(defense, str) else list(defense or ())
    if not names and not interceptors:
        raise ConfigError("nothing to protect with: name a defense (e.g. defense='argus') or pass interceptors")
    settings = settings or load_settings()
    built: list[Interceptor] = []
    if names:
        from ..embed import get_embedder
        from ..llm import get_llm

        def as_llm(value: LLM | str | None) -> LLM | None:
            return get_llm(value, settings.llm) if isinstance(value, str) else value

        llms = {k: v for k, v in (("worker", as_llm(llm)), ("rectifier", as_llm(rectifier))) if v is not None}
        emb = get_embedder(embedder, settings.embed) if isinstance(embedder, str) else embedder
        for name in names:
            context = DefenseContext(settings, llms, emb, claim_store=claim_store, seed=settings.seed)
            try:
                made = build_defense(name, context, (params or {}).get(name))
            except ConfigError as exc:
                text = str(exc)
                if "needs an embedder" in text and emb is None:
                    emb = get_embedder(None, settings.embed)
                    context = DefenseContext(settings, llms, emb, claim_store=claim_store, seed=settings.seed)
                    made = build_defense(name, context, (params or {}).get(name))
                elif "needs an LLM" in text:
                    raise ConfigError(
                        f"{text}: pass llm= (a spec such as 'local/qwen2.5-0.5b', 'openai/<model>' with "
                        "MISGUARD_LLM__BASE_URL, or an LLM object) when protecting the app") from None
                else:
                    raise
            built.extend(made)
    built.extend(interceptors)
    return built
