"""The run's event log: versioned JSONL, one event per line, from which every metric and
report is computed. The first line is a header naming the schema and its version.

Event types (field `type`):
    start        agents, roles, subtasks, graph edges, seeds, components
    plan         the planner's subtasks and what was repaired
    message      one message on an edge: original text, delivered text, final action
    interception one interceptor's decision on one message, with its tokens and latency
    interceptor_round  what an interceptor decided before a round (e.g. monitored channels)
    conclusion_review  an interceptor blocked or rewrote a message for the concluder only
    tool_call    a simulated tool call
    llm_call     one model call of one agent (role, tokens, latency)
    fallback     the runtime repaired something (parse_fallback, target_fallback, ...)
    round_end    end of a round
    final        the concluder's answer
    end          usage per agent and per interceptor, wall time
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..errors import DataError
from ..runlog import read_jsonl_log
from ..types import Usage

EVENTS_SCHEMA = "misguard.mas.events"
EVENTS_VERSION = 1


class Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str
    round: int = 0
    time: float = Field(default_factory=time.time)
    data: dict[str, Any] = Field(default_factory=dict)


class EventLog:
    """Events of one run, in order; optionally streamed to a JSONL file as they happen."""

    def __init__(self, path: str | Path | None = None, *, meta: dict[str, Any] | None = None) -> None:
        self.events: list[Event] = []
        self.meta = dict(meta or {})
        self.path = Path(path) if path is not None else None
        self._fh = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("w", encoding="utf-8")
            header = {"type": "header", "schema": EVENTS_SCHEMA, "version": EVENTS_VERSION, **self.meta}
            self._fh.write(json.dumps(header) + "\n")

    def add(self, type: str, round: int = 0, **data: Any) -> Event:
        event = Event(type=type, round=round, data=data)
        self.events.append(event)
        if self._fh is not None:
            self._fh.write(event.model_dump_json() + "\n")
            self._fh.flush()
        return event

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def dump(self, path: str | Path) -> Path:
        """Write the whole log to `path` (for logs kept in memory while running)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            header = {"type": "header", "schema": EVENTS_SCHEMA, "version": EVENTS_VERSION, **self.meta}
            fh.write(json.dumps(header) + "\n")
            for event in self.events:
                fh.write(event.model_dump_json() + "\n")
        tmp.replace(path)  # atomic: a reader never sees half a log
        return path

    # -- queries used by metrics, judges and defenses ------------------------------------

    def of_type(self, type: str) -> Iterator[Event]:
        return (e for e in self.events if e.type == type)

    def messages(self, round: int | None = None, *, delivered_only: bool = True) -> list[dict[str, Any]]:
        """Messages as receivers saw them (`text` is the delivered, possibly rewritten text)."""
        out = []
        for e in self.of_type("message"):
            if round is not None and e.round != round:
                continue
            if delivered_only and not e.data["delivered"]:
                continue
            out.append({"round": e.round, **e.data})
        return out

    def edge_history(self) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """Delivered messages per directed edge, in order."""
        history: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for m in self.messages():
            history[(m["sender"], m["receiver"])].append(m)
        return dict(history)

    def rounds(self) -> list[int]:
        return sorted({e.round for e in self.of_type("round_end")})

    def final_answer(self) -> str | None:
        finals = list(self.of_type("final"))
        return finals[-1].data["answer"] if finals else None

    def usage_by(self, field: str) -> dict[str, Usage]:
        """Summed usage of `llm_call` events grouped by `agent`, or of `interception` and
        `conclusion_review` events grouped by `interceptor`."""
        kinds = ("llm_call",) if field == "agent" else ("interception", "conclusion_review")
        totals: dict[str, Usage] = defaultdict(Usage)
        for kind in kinds:
            for e in self.of_type(kind):
                totals[e.data[field]].add(Usage.model_validate(e.data["usage"]))
        return dict(totals)


def read_events(path: str | Path) -> EventLog:
    """Read an event log written by `EventLog`; a torn last line is dropped."""

    def header(line: str) -> dict[str, Any]:
        parsed = json.loads(line)
        if not isinstance(parsed, dict) or parsed.get("schema") != EVENTS_SCHEMA:
            raise DataError(f"not a {EVENTS_SCHEMA} log", source=str(path), line=1)
        if int(parsed.get("version", 0)) > EVENTS_VERSION:
            raise DataError(
                f"event log version {parsed['version']} is newer than this misguard ({EVENTS_VERSION})",
                source=str(path),
            )
        return parsed

    head, events = read_jsonl_log(path, header, Event.model_validate_json, what="event log")
    log = EventLog(meta={k: v for k, v in head.items() if k not in {"type", "schema", "version"}})
    log.events.extend(events)
    return log
