"""The seam for defenses: every message passes through the interceptors on its edge
before the receiver sees it. An interceptor passes, rewrites or blocks, and says what it
did; the runtime records that in the event log. The runtime never imports a defense:
defenses register a factory in `DEFENSES` by name."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import networkx as nx

from ..config import Settings
from ..registry import Registry
from ..types import EdgeMessage, Usage

if TYPE_CHECKING:
    from ._events import EventLog


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


@dataclass(frozen=True)
class SystemView:
    """What an interceptor may look at: the graph and everything delivered so far.

    Attributes:
        graph: the directed communication graph (do not mutate).
        round: the round about to run (1-based).
        log: the event log; `log.edge_history()` gives delivered messages per edge.
    """

    graph: nx.DiGraph
    round: int
    log: EventLog


@runtime_checkable
class Interceptor(Protocol):
    """A defense (or a probe) on the message path."""

    name: str

    async def start_round(self, view: SystemView) -> None:
        """Called before each round; e.g. to choose which edges to watch."""

    async def intercept(self, message: EdgeMessage, view: SystemView) -> Interception:
        """Decide what happens to `message`; its `text` is what earlier interceptors left."""

    def describe(self) -> dict[str, Any]:
        """How this interceptor was built, for run headers."""


DefenseFactory = Callable[[Settings], Sequence[Interceptor]]

#: Defenses by name: a factory from settings to the interceptors to install (none for `none`).
DEFENSES: Registry[Sequence[Interceptor]] = Registry("defense")


@DEFENSES.register("none", description="no defense: every message passes unchanged")
def _no_defense(settings: Settings) -> Sequence[Interceptor]:
    return ()
