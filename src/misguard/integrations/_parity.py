"""Decision parity with the native runtime: the messages of a recorded native run, sent
round by round through a `Protection` (the layer every adapter uses), must get the same
decisions from a defense built the same way: same actions, same delivered texts, same
interceptions (reasons, details) and the same per-round reports (e.g. ARGUS's monitored
channels and goals). A difference is a bug of the adapter layer, not of the defense.

    native = read_events("run/events/task-0.jsonl")
    replayed = replay(native, Protection(build_defense("argus", context)))
    report = compare_decisions(native, replayed)     # report.same, report.differences
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..mas import EventLog
from ._core import Message, Protection


def replay(native: EventLog, protection: Protection) -> EventLog:
    """Send every message the native run's agents wrote (the senders' originals, in the
    logged order) through `protection`, one native round per step; returns its log."""
    start = next(native.of_type("start"), None)
    if start is not None:
        protection.declare(start.data["agents"], [tuple(e) for e in start.data["edges"]])
    for r in native.rounds():
        messages = native.messages(r, delivered_only=False)
        protection.begin_sync(("round", r))
        protection.screen_many_sync(
            [Message(m["sender"], m["receiver"], m["original"], metadata=m.get("metadata")) for m in messages],
            step=("round", r))
    return protection.finish()


def _interceptions(log: EventLog) -> list[dict[str, Any]]:
    """Interceptions in message order (the native runtime logs a round's interceptions as
    they finish, concurrently; the order of the messages they decide is what matters)."""
    position = {m["id"]: i for i, m in enumerate(log.messages(delivered_only=False))}
    events = [{"round": e.round, **e.data} for e in log.of_type("interception")]
    return sorted(events, key=lambda e: (position.get(e["message_id"], len(position)),))


@dataclass
class ParityReport:
    """What differs between a native run's decisions and the replayed ones."""

    messages: int = 0
    interceptions: int = 0
    rounds: int = 0
    differences: list[dict[str, Any]] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return not self.differences


_MESSAGE_FIELDS = ("round", "sender", "receiver", "original", "text", "delivered", "action")
_INTERCEPTION_FIELDS = ("round", "interceptor", "sender", "receiver", "action", "reason", "text_before", "text_after", "details")


def compare_decisions(native: EventLog, replayed: EventLog) -> ParityReport:
    """Compare messages, interceptions (in order) and interceptor round reports."""
    report = ParityReport()

    def compare(kind: str, ours: list[dict[str, Any]], theirs: list[dict[str, Any]], fields: tuple[str, ...]) -> int:
        if len(ours) != len(theirs):
            report.differences.append({"kind": kind, "what": "count", "native": len(ours), "replayed": len(theirs)})
        for i, (a, b) in enumerate(zip(ours, theirs)):
            for f in fields:
                if a.get(f) != b.get(f):
                    report.differences.append({"kind": kind, "index": i, "field": f, "native": a.get(f), "replayed": b.get(f)})
        return min(len(ours), len(theirs))

    report.messages = compare("message", native.messages(delivered_only=False), replayed.messages(delivered_only=False),
                              _MESSAGE_FIELDS)
    report.interceptions = compare("interception", _interceptions(native), _interceptions(replayed),
                                   _INTERCEPTION_FIELDS)
    reports = lambda log: [{"round": e.round, **e.data} for e in log.of_type("interceptor_round")]  # noqa: E731
    native_rounds, replayed_rounds = reports(native), reports(replayed)
    keys = tuple(sorted({k for r in native_rounds for k in r} | {k for r in replayed_rounds for k in r}))
    report.rounds = compare("interceptor_round", native_rounds, replayed_rounds, keys)
    return report
