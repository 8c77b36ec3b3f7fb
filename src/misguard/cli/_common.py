"""Shared CLI plumbing: settings from the global options, error display."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from ..config import Settings, load_settings
from ..errors import MisguardError

console = Console()
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
