"""Task files: the MisInfoTask format, loading, validation and selection.

A task file is a JSON list of records (the format of the MisInfoTask dataset): what the
multi-agent system works on (`user_input`, `agent_num`, `tools`), and what attacks and
evaluation use (`misinfo_goal`, `misinfo_argument`, `ground_truth`, `reference_solution`).
The system itself only ever sees `runtime_task()`. Three tasks written for misguard ship
in `data/sample_tasks.json`; datasets are loaded by path."""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import DataError
from ._task import Task, ToolSpec

class MisinfoTask(BaseModel):
    """One task record (the 10 fields of the MisInfoTask file format)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int = Field(ge=0)
    category: str
    name: str
    user_input: str = Field(min_length=1)
    agent_num: int = Field(ge=1, le=64)
    tools: tuple[ToolSpec, ...]
    misinfo_goal: str = Field(min_length=1)
    misinfo_argument: tuple[str, ...] = Field(min_length=1)
    ground_truth: tuple[str, ...] = Field(min_length=1)
    reference_solution: str = Field(min_length=1)

    def runtime_task(self) -> Task:
        """The part the multi-agent system may see (no goal, arguments or answers)."""
        return Task(
            id=str(self.id), user_input=self.user_input, agent_num=self.agent_num,
            tools=self.tools, name=self.name,
        )


def sample_tasks_path() -> Path:
    """The three tasks written for misguard that ship with it (`--data sample`)."""
    return Path(str(resources.files("misguard.mas").joinpath("data", "sample_tasks.json")))


def load_tasks(path: str | Path) -> list[MisinfoTask]:
    """Load and validate a MisInfoTask JSON file (a list of records with unique ids).

    Raises:
        DataError: the file is missing, not JSON, or a record is malformed (names which).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(
            "no such task file; pass --data PATH (`--data sample` runs the tasks that ship with misguard)",
            source=str(path),
        )
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"not valid JSON: {exc.msg}", source=str(path), line=exc.lineno) from None
    if not isinstance(raw, list) or not raw:
        raise DataError("expected a non-empty JSON list of task records", source=str(path))
    tasks: list[MisinfoTask] = []
    seen: set[int] = set()
    for index, record in enumerate(raw):
        try:
            task = MisinfoTask.model_validate(record)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise DataError(f"record {index}: {where}: {first['msg']}", source=str(path)) from None
        if task.id in seen:
            raise DataError(f"record {index}: duplicate id {task.id}", source=str(path))
        seen.add(task.id)
        tasks.append(task)
    return tasks


def _parse_ranges(text: str) -> list[int]:
    chosen: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part[1:]:
            lo, hi = (int(x) for x in part.split("-", 1))
            if hi < lo:
                raise ValueError(part)
            chosen.extend(range(lo, hi + 1))
        else:
            chosen.append(int(part))
    return list(dict.fromkeys(chosen))


def parse_task_selection(selection: str | None, available: Sequence[int]) -> list[int]:
    """`0-9,12` -> [0..9, 12]; None or `all` -> every id. Unknown ids are an error."""
    if selection is None or selection.strip().lower() in {"", "all"}:
        return list(available)
    try:
        chosen = _parse_ranges(selection)
    except ValueError:
        raise DataError(f"bad task selection {selection!r}; use e.g. 0-9,12") from None
    missing = sorted(set(chosen) - set(available))
    if missing:
        raise DataError(f"task ids not in the data: {missing[:10]}")
    return chosen


def parse_seeds(seeds: str) -> list[int]:
    """`0,1,2` or `0-2` -> [0, 1, 2]."""
    try:
        chosen = _parse_ranges(seeds)
    except ValueError:
        chosen = []
    if not chosen or any(s < 0 for s in chosen):
        raise DataError(f"bad --seeds {seeds!r}; use e.g. 0 or 0,1,2 or 0-4")
    return chosen
