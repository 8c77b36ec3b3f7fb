"""The seam for defenses: every message passes through the interceptors on its edge
before the receiver sees it. An interceptor passes, rewrites or blocks, and says what it
did; the runtime records that in the event log. The runtime never imports a defense:
defenses register a factory in `DEFENSES` by name.

A defense factory gets a `DefenseContext` (settings, an LLM per role, the embedder, an
optional claim store, the task's ground truths when an experiment allows them) and its
typed parameters: the registry entry names the `settings.defense` section (metadata
`settings_key`) whose pydantic model validates them. `build_defense` merges overrides into
that section, so a run log records exactly which parameters were in force.
Interceptors see the event log only through a read-only `EventLogView`.

The concluder reads every round's delivered messages. An interceptor that also implements
`ConclusionReviewer` reviews that reading once, after the last round, with everything it
learned during the run (e.g. which sender turned out to be hijacked): it may block or
rewrite a message for the concluder only; what receivers saw stays as logged."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ValidationError

from ..config import Settings
from ..errors import ConfigError
from ..registry import Registry
from ..types import EdgeMessage, Usage

if TYPE_CHECKING:
    import networkx as nx
    from ..embed import Embedder
    from ..llm import LLM
    from ._events import Event, EventLog


class InterceptorAction(str, Enum):
    PASS = "pass"
    REWRITE = "rewrite"
    BLOCK = "block"


@dataclass(frozen=True)
class Interception:
    """What an interceptor did to one message.

    Attributes:
        action: pass, rewrite or block.
        text: the new text for `rewrite` (ignored otherwise).
        reason: a short human-readable explanation for the log.
        usage: tokens and latency the interceptor spent on this message.
        details: anything else worth logging (scores, inferred goals...), JSON-serialisable.
    """

    action: InterceptorAction
    text: str | None = None
    reason: str = ""
    usage: Usage = field(default_factory=Usage)
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def passed(cls, reason: str = "") -> Interception:
        return cls(InterceptorAction.PASS, reason=reason)

    @classmethod
    def rewritten(cls, text: str, reason: str = "", usage: Usage | None = None) -> Interception:
        return cls(InterceptorAction.REWRITE, text=text, reason=reason, usage=usage or Usage())

    @classmethod
    def blocked(cls, reason: str = "", usage: Usage | None = None) -> Interception:
        return cls(InterceptorAction.BLOCK, reason=reason, usage=usage or Usage())


class EventLogView:
    """Read-only access to a run's event log: every query returns copies."""

    def __init__(self, log: EventLog) -> None:
        self._log = log

    def messages(self, round: int | None = None, *, delivered_only: bool = True) -> list[dict[str, Any]]:
        """Messages as receivers saw them (`text`) with the sender's `original`."""
        return copy.deepcopy(self._log.messages(round, delivered_only=delivered_only))

    def edge_history(self) -> dict[tuple[str, str], list[dict[str, Any]]]:
        return copy.deepcopy(self._log.edge_history())

    def of_type(self, type: str) -> Iterator[Event]:
        return (e.model_copy(deep=True) for e in self._log.of_type(type))

    def rounds(self) -> list[int]:
        return self._log.rounds()

    def __len__(self) -> int:
        return len(self._log.events)


@dataclass(frozen=True)
class SystemView:
    """What an interceptor may look at: the graph and everything delivered so far.

    Attributes:
        graph: the directed communication graph (a copy; changing it changes nothing).
        round: the round about to run (1-based).
        log: a read-only view of the event log.
        agents: worker ids in order.
    """

    graph: nx.DiGraph
    round: int
    log: EventLogView
    agents: tuple[str, ...] = ()


@runtime_checkable
class Interceptor(Protocol):
    """A defense (or a probe) on the message path."""

    name: str

    async def start_round(self, view: SystemView) -> dict[str, Any] | None:
        """Called before each round; e.g. to choose which edges to watch. A returned dict
        (JSON-able) is logged as an `interceptor_round` event."""

    async def intercept(self, message: EdgeMessage, view: SystemView) -> Interception:
        """Decide what happens to `message`; its `text` is what earlier interceptors left."""

    def describe(self) -> dict[str, Any]:
        """How this interceptor was built, for run headers."""


@runtime_checkable
class ConclusionReviewer(Protocol):
    """An interceptor that also reviews what the concluder reads (optional)."""

    name: str

    async def review_conclusion(self, messages: Sequence[Mapping[str, Any]], view: SystemView) -> Mapping[str, Interception]:
        """Decisions by message id for the delivered `messages` (as `EventLogView.messages`
        returns them) the concluder is about to read; ids left out pass unchanged."""


@dataclass(frozen=True)
class DefenseContext:
    """The components a defense may use; built once per run by whoever runs the system.

    Attributes:
        settings: all settings (a defense's own section is passed to it as `params`).
        llms: backends by role: `worker` (the agents' model) and `rectifier` at least.
        embedder: the configured embedder, if the defense needs one.
        claim_store: a `misguard.claims.ClaimStore` to ground corrections in, or None.
        ground_truths: true statements about the task, only when the experiment allows
            the defense to see them (the paper's "w/ Ground Truth" setting).
        seed: the run's seed.
    """

    settings: Settings
    llms: Mapping[str, LLM] = field(default_factory=dict)
    embedder: Embedder | None = None
    claim_store: Any = None
    ground_truths: tuple[str, ...] = ()
    seed: int = 0

    def llm(self, role: str) -> LLM:
        """The backend for `role`; `rectifier` falls back to `worker`."""
        chosen = self.llms.get(role) or (self.llms.get("worker") if role != "worker" else None)
        if chosen is None:
            raise ConfigError(f"this defense needs an LLM for the {role!r} role; none was given")
        return chosen

    def need_embedder(self, defense: str) -> Embedder:
        if self.embedder is None:
            raise ConfigError(f"defense {defense!r} needs an embedder; none was given")
        return self.embedder


DefenseFactory = Callable[[DefenseContext, Any], Sequence[Interceptor]]
"""(context, typed parameters or None) -> the interceptors to install."""

#: Defenses by name. Plug-in packages register here when the registry first looks up a
#: name: `misguard.defenses` ships ARGUS and the baselines; others declare an entry point
#: in the `misguard.defenses` group.
DEFENSES: Registry[Sequence[Interceptor]] = Registry(
    "defense", plugins=("misguard.defenses",), entry_point_group="misguard.defenses"
)


@DEFENSES.register("none", description="no defense: every message passes unchanged", settings_key=None, needs_llm=False)
def _no_defense(context: DefenseContext, params: Any) -> Sequence[Interceptor]:
    return ()


def defense_params(name: str, settings: Settings, overrides: Mapping[str, Any] | None = None) -> BaseModel | None:
    """The typed parameters of defense `name`: its `settings.defense` section, under the
    defense's preset if it has one, with `overrides` applied and validated (an unknown key
    or a bad value is a ConfigError)."""
    metadata = DEFENSES.get(name).metadata
    key = metadata.get("settings_key")
    if key is None:
        if overrides:
            raise ConfigError(f"defense {name!r} takes no parameters; got {sorted(overrides)}")
        return None
    base: BaseModel = getattr(settings.defense, key)
    # defaults < the preset < what the settings file or environment set < overrides
    preset = dict(metadata.get("preset") or {})
    try:
        return type(base).model_validate(
            {**base.model_dump(), **preset, **base.model_dump(exclude_unset=True), **dict(overrides or {})}
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(
            f"bad parameter for defense {name!r}: {where}: {first['msg']} "
            f"(known: {', '.join(type(base).model_fields)})"
        ) from None


def build_defense(
    name: str, context: DefenseContext, overrides: Mapping[str, Any] | None = None
) -> Sequence[Interceptor]:
    """The interceptors of defense `name` with its validated parameters."""
    params = defense_params(name, context.settings, overrides)
    return DEFENSES.build(name, context, params)


async def run_interceptors(
    interceptors: Sequence[Interceptor], message: EdgeMessage, view: SystemView, log: EventLog
) -> tuple[str, InterceptorAction, str]:
    """The rule on every edge, in the native runtime and in the framework adapters alike:
    interceptors in order, each sees the text the previous one left, a block stops the
    chain; every decision goes to `log` as an `interception` event. Returns the text the
    receiver sees, the action taken and the reason of the decision that set it."""
    text, action, reason = message.text, InterceptorAction.PASS, ""
    for interceptor in interceptors:
        current = message.model_copy(update={"text": text})
        started = time.perf_counter()
        decision: Interception = await interceptor.intercept(current, view)
        usage = decision.usage.model_copy()
        if usage.latency_s == 0.0:
            usage.latency_s = time.perf_counter() - started
        log.add(
            "interception", round=message.round, message_id=message.id, interceptor=interceptor.name,
            sender=message.sender, receiver=message.receiver, action=decision.action.value,
            reason=decision.reason, text_before=text,
            text_after=decision.text if decision.action is InterceptorAction.REWRITE else None,
            usage=usage.model_dump(), details=decision.details,
        )
        if decision.action is InterceptorAction.BLOCK:
            return text, InterceptorAction.BLOCK, decision.reason
        if decision.action is InterceptorAction.REWRITE and decision.text is not None:
            text, action, reason = decision.text, InterceptorAction.REWRITE, decision.reason
    return text, action, reason
