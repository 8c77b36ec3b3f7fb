"""Entry point: `misguard [global options] COMMAND ...`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..config import load_settings
from ..errors import MisguardError
from ._common import err_console, error_line

app = typer.Typer(
    name="misguard",
    help="Find and correct misinformation in LLM multi-agent systems and on the web.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _global(
    ctx: typer.Context,
    config: Annotated[Optional[Path], typer.Option(help="Settings file (default ./misguard.toml or $MISGUARD_CONFIG).")] = None,
    llm: Annotated[Optional[str], typer.Option("--llm", help="LLM spec, e.g. local/qwen2.5-1.5b, local//path/model.gguf, openai/gpt-4o-mini, mock.")] = None,
    base_url: Annotated[Optional[str], typer.Option(help="OpenAI-compatible base URL for the LLM.")] = None,
    embedder: Annotated[Optional[str], typer.Option(help="Embedder spec, e.g. e5, openai/<model>, hashing/256.")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Seed for the LLM and everything random.")] = None,
) -> None:
    """Global options apply to every command (precedence: defaults < file < env < flags)."""
    overrides = {
        "llm": {"model": llm, "base_url": base_url, "seed": seed},
        "embed": {"model": embedder},
        "seed": seed,
    }
    try:
        ctx.obj = load_settings(config, **overrides)
    except MisguardError as exc:
        err_console.print(error_line(exc), highlight=False)
        raise typer.Exit(2) from None


#: Modules with a `register(app)` function; each concern adds its commands in its own module.
#: `--help` lists them in this order: the user's jobs first, then measuring.
COMMAND_MODULES = ["claims", "claims_pull", "serve", "mas", "defenses", "memory", "models", "integrations", "basics", "config", "data",
                   "bench", "redteam", "runs", "crash"]


def _register() -> None:
    import importlib

    for name in COMMAND_MODULES:
        importlib.import_module(f"{__package__}.{name}").register(app)


_register()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
