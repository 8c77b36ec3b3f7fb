"""Versioned JSONL run logs. Every benchmark writes one first; tables, plots and reports
are rendered from it. The first line is a `RunHeader`; every other line a `RunEvent`.

A log can be reopened to resume: `RunLog.open(path, header, resume=True)` keeps the
events already written, and `done_keys(...)` tells which items are finished.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from .errors import DataError

SCHEMA_VERSION = 1

H = TypeVar("H")
E = TypeVar("E")


def _version() -> str:
    from . import __version__

    return __version__


class RunHeader(BaseModel):
    """How a run was made: enough to reproduce it."""

    model_config = ConfigDict(extra="allow")

    type: str = "header"
    schema_version: int = SCHEMA_VERSION
    run_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    kind: str
    """What ran, e.g. `bench.claims`, `bench.misinfotask`."""
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    command: list[str] = Field(default_factory=lambda: list(sys.argv))
    misguard_version: str = Field(default_factory=_version)
    python: str = Field(default_factory=lambda: platform.python_version())
    platform: str = Field(default_factory=lambda: platform.platform())
    settings: dict[str, Any] = Field(default_factory=dict)
    """Settings in force (secrets removed)."""
    components: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """How each component was built: `describe()` of every backend, defense, attack."""
    seeds: dict[str, int] = Field(default_factory=dict)
    params: dict[str, Any] = Field(default_factory=dict)


class RunEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str
    time: float = Field(default_factory=time.time)
    key: str | None = None
    """Identifies the finished item (e.g. a task id) so a resumed run skips it."""
    data: dict[str, Any] = Field(default_factory=dict)


class RunLog:
    """Append-only JSONL log; each line is flushed so a crash loses at most one event."""

    def __init__(self, path: Path, header: RunHeader, events: list[RunEvent]) -> None:
        self.path = path
        self.header = header
        self.events = events
        self._fh = path.open("a", encoding="utf-8")

    @classmethod
    def open(cls, path: str | Path, header: RunHeader, *, resume: bool = True) -> RunLog:
        """Create a log, or reopen it when `resume` and it exists (keeping its header)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if resume and path.exists() and _mend_torn_tail(path):
            old_header, events = read_runlog(path)
            return cls(path, old_header, events)
        # Whole or not at all: a crash while the header is written leaves no torn header.
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(header.model_dump_json() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        return cls(path, header, [])

    def write(self, type: str, *, key: str | None = None, **data: Any) -> RunEvent:
        event = RunEvent(type=type, key=key, data=data)
        self._fh.write(event.model_dump_json() + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self.events.append(event)
        return event

    def done_keys(self, type: str) -> set[str]:
        return {e.key for e in self.events if e.type == type and e.key is not None}

    def of_type(self, type: str) -> Iterator[RunEvent]:
        return (e for e in self.events if e.type == type)

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _mend_torn_tail(path: Path) -> bool:
    """Make a log that a crash cut mid-line safe to append to: a torn last line is cut off
    (a complete one missing only its newline gets it), or appended events would be glued
    to it and lost. Returns False when not even the header is whole (start the log again)."""
    data = path.read_bytes()
    if data.endswith(b"\n") or not data:
        return bool(data)
    start = data.rfind(b"\n") + 1
    try:
        json.loads(data[start:])
    except ValueError:
        if start == 0:
            return False  # a torn header: nothing of the run was written yet
        with path.open("r+b") as fh:
            fh.truncate(start)
    else:
        with path.open("ab") as fh:
            fh.write(b"\n")
    return True


def read_jsonl_log(
    path: str | Path,
    parse_header: Callable[[str], H],
    parse_event: Callable[[str], E],
    what: str = "run log",
) -> tuple[H, list[E]]:
    """Read a header line and event lines. A torn last line (a crash mid-write) is dropped;
    any other bad line is a `DataError` naming the line. Parsers raise ValueError (or a
    DataError of their own) on bad input."""
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        raise DataError(f"empty {what}", source=str(path))
    try:
        header = parse_header(lines[0])
    except DataError:
        raise
    except ValueError as exc:
        raise DataError(f"first line is not a {what} header: {exc}", source=str(path), line=1) from None
    events: list[E] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            events.append(parse_event(line))
        except ValueError:
            if number == len(lines):
                break  # torn final write
            raise DataError(f"malformed {what} event", source=str(path), line=number) from None
    return header, events


def read_runlog(path: str | Path) -> tuple[RunHeader, list[RunEvent]]:
    """Read a run log (see `read_jsonl_log` for how damage is handled)."""

    def header(line: str) -> RunHeader:
        parsed = RunHeader.model_validate_json(line)
        if parsed.schema_version > SCHEMA_VERSION:
            raise DataError(
                f"run log schema {parsed.schema_version} is newer than this misguard "
                f"({SCHEMA_VERSION}); upgrade misguard",
                source=str(path),
            )
        return parsed

    return read_jsonl_log(path, header, RunEvent.model_validate_json)


def public_settings(settings: BaseModel) -> dict[str, Any]:
    """Settings as JSON with secrets removed, for run-log headers."""
    data = json.loads(settings.model_dump_json())

    def scrub(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: ("***" if "key" in k and v else scrub(v)) for k, v in node.items()}
        return node

    return scrub(data)
