"""Shared CLI plumbing: settings from the global options, error display."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from ..config import Settings, load_settings
from ..errors import ConfigError, MisguardError

console = Console()

#: `misguard --help` groups the commands by the job they serve.
CLAIM_GUARD = "Claim guard: texts, pages and the web service"
MULTI_AGENT = "Multi-agent systems: ARGUS and the baselines"
MEMORY = "Shared agent memory"
SETUP = "Setup and models"
MEASURE = "Measure: benchmarks and their runs"
err_console = Console(stderr=True, soft_wrap=True)

F = TypeVar("F", bound=Callable[..., Any])


def settings_from(ctx: typer.Context) -> Settings:
    """Settings built by the top-level callback (defaults < file < env < CLI flags)."""
    root = ctx.find_root()
    if not isinstance(root.obj, Settings):
        root.obj = load_settings()
    return root.obj


def error_line(exc: BaseException) -> str:
    """One red line; the message is escaped so `misguard[mas]` is not read as markup."""
    return f"[bold red]error:[/] {escape(f'{type(exc).__name__}: {exc}')}"


def friendly_errors(fn: F) -> F:
    """Show a MisguardError as one red line and exit 2, instead of a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except MisguardError as exc:
            err_console.print(error_line(exc), highlight=False)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


def task_file(settings: Settings, data: str | None) -> tuple[Path, list[Any]]:
    """The task file `--data` names (a path, a dataset name such as `misinfotask`, or `sample`:
    the tasks that ship with misguard; no `--data`: `<data_dir>/misinfotask/MisinfoTask.json`
    when `data_dir` is set) and its tasks."""
    from ..data import resolve
    from ..mas import load_tasks, sample_tasks_path

    if data == "sample":
        path = sample_tasks_path()
    elif data:
        path = resolve(data, settings)
    elif settings.data_dir is not None:
        path = settings.data_dir / "misinfotask" / "MisinfoTask.json"
    else:
        raise ConfigError("which tasks? pass --data PATH (a task file) or --data sample")
    return path, load_tasks(path)


def select_tasks(records: list[Any], selection: str | None) -> list[Any]:
    """The tasks a `--tasks`-style selection ("0-29", "1,2,5", None: all) names, in file order."""
    from ..mas import parse_task_selection

    chosen = set(parse_task_selection(selection, [t.id for t in records]))
    return [t for t in records if t.id in chosen]


def print_checks(report: Any, json_out: bool) -> None:
    """A verify report (`claims verify`, `memory verify`): JSON, or one line per check."""
    import json

    if json_out:
        console.print_json(json.dumps(report.to_dict()))
        return
    for c in report.checks:
        mark = "[green]ok[/]  " if c.ok else "[bold red]FAIL[/]"
        console.print(f"{mark} {c.name:<10} {c.detail}", highlight=False)
