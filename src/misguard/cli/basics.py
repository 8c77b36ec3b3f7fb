"""`doctor`, `chat`, `embed` and `demo`."""

from __future__ import annotations

import importlib
import time
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ..embed import get_embedder
from ..errors import MisguardError
from ..llm import get_llm
from ._common import SETUP, console, friendly_errors, settings_from
from .demo import section_names


def register(app: typer.Typer) -> None:
    for command in (doctor, demo, chat, embed):
        app.command(rich_help_panel=SETUP)(command)


def _probe(label: str, build) -> tuple[str, str, str]:
    started = time.perf_counter()
    try:
        component = build()
    except MisguardError as exc:
        return label, "[red]unavailable[/]", escape(str(exc))
    except Exception as exc:  # doctor reports anything, it never crashes
        return label, "[red]broken[/]", escape(f"{type(exc).__name__}: {exc}")
    spent = time.perf_counter() - started
    desc = component.describe()
    detail = ", ".join(f"{k}={v}" for k, v in desc.items() if k not in ("backend", "spec") and v)
    return label, "[green]ok[/]", escape(f"{detail} ({spent:.2f} s to load)")


#: Subpackages whose import registers plug-ins; each is optional (its extra may be missing).
PLUGIN_PACKAGES = (
    "misguard.llm", "misguard.embed", "misguard.mas", "misguard.attacks", "misguard.defenses",
    "misguard.claims", "misguard.memory", "misguard.data", "misguard.attacks.transforms",
    "misguard.bench.crash",
)


def registered_plugins() -> dict[str, list[str]]:
    """Every registry's kind and names, after importing the packages that fill them."""
    from ..registry import ALL_REGISTRIES

    for package in PLUGIN_PACKAGES:
        try:
            importlib.import_module(package)
        except ImportError:  # MissingExtraError included: doctor lists what is importable
            pass
    out = {}
    for kind, registry in sorted(ALL_REGISTRIES.items()):
        registry.discover()
        out[kind] = registry.names()
    return out


def _e5_runtime_row(settings) -> tuple[str, str, str]:
    """Which engine runs `e5` and why: loads it, so a runtime that fails to start shows."""
    from ..embed import e5_runtime_choice

    try:
        chosen, why = e5_runtime_choice(settings.embed)
        built = get_embedder("e5", settings.embed)
    except MisguardError as exc:
        return "e5 runtime", "[red]unavailable[/]", escape(str(exc))
    runtime = getattr(built, "runtime", chosen)
    why = getattr(built, "runtime_reason", why) or why
    state = "[green]onnx[/]" if runtime == "onnx" else f"[yellow]{escape(runtime)}[/]"
    return "e5 runtime", state, escape(why)


@friendly_errors
def doctor(
    ctx: typer.Context,
    load: Annotated[bool, typer.Option("--load", help="Also load the configured LLM (seconds, and its memory).")] = False,
) -> None:
    """Which backends, models and optional parts are usable here, and why not."""
    from .models import pack_rows

    settings = settings_from(ctx)
    table = Table(title="misguard doctor")
    table.add_column("component")
    table.add_column("status")
    table.add_column("detail", overflow="fold")
    for spec, state, detail in pack_rows(settings.llm.models_dir):
        table.add_row(f"model pack {spec}", state, detail)
    if load:
        table.add_row(*_probe(f"llm {settings.llm.model}", lambda: get_llm(None, settings.llm)))
    if settings.llm.base_url or settings.llm.model.startswith("openai/"):
        table.add_row(*_probe(f"llm {settings.llm.model}", lambda: get_llm(None, settings.llm)))
    else:
        table.add_row("llm openai/*", "[yellow]not configured[/]", "set llm.base_url (MISGUARD_LLM__BASE_URL) to use an endpoint")
    table.add_row(*_probe("embedder e5", lambda: get_embedder("e5", settings.embed)))
    configured = settings.embed.model.strip()
    if configured and configured != "e5":
        # the encoder every command runs (e.g. e5 with a fine-tuned adapter): its adapter file
        # and sha256 are part of what it describes
        table.add_row(*_probe(f"embedder {configured} (configured)", lambda: get_embedder(None, settings.embed)))
    table.add_row(*_e5_runtime_row(settings))
    for module, extra, purpose in [
        ("openai", "openai", "OpenAI-compatible endpoints"),
        ("xllamacpp", "local", "in-process GGUF models"),
        ("onnxruntime", "onnx", "the fast e5 runtime (the default when installed)"),
        ("torch", "torch", "the memory guard's contrastive detector"),
        ("peft", "train", "claims fit-encoder (fine-tuning e5 with a LoRA adapter)"),
        ("sentence_transformers", "st", "sentence-transformers embedders and the claim guard's --reader st/minilm"),
        ("ray", "ray", "--executor ray"),
        ("fastapi", "service", "the HTTP service"),
        ("qdrant_client", "qdrant", "claim stores in Qdrant (--db qdrant:DIR or qdrant+http://HOST:6333/COLLECTION)"),
    ]:
        try:
            mod = importlib.import_module(module)
            table.add_row(escape(f"extra [{extra}]"), "[green]ok[/]", f"{module} {getattr(mod, '__version__', '')} for {purpose}")
        except ImportError:
            table.add_row(escape(f"extra [{extra}]"), "[yellow]missing[/]", escape(f"pip install 'misguard[{extra}]' for {purpose}"))
    console.print(table)
    for kind, names in registered_plugins().items():
        console.print(f"{escape(kind)}: {escape(', '.join(names)) or 'none'}", highlight=False)
    console.print(f"configured LLM: {escape(settings.llm.model)} (misguard doctor --load to load it)")


@friendly_errors
def chat(
    ctx: typer.Context,
    prompt: Annotated[str, typer.Argument(help="What to ask.")],
    system: Annotated[str, typer.Option(help="System prompt.")] = "You are a helpful assistant.",
    max_tokens: Annotated[int, typer.Option(help="Answer length limit.")] = 128,
) -> None:
    """Ask the configured LLM one question and show the answer with its cost."""
    settings = settings_from(ctx)
    llm = get_llm(None, settings.llm)
    out = llm.generate_sync([{"role": "system", "content": system}, {"role": "user", "content": prompt}], max_tokens=max_tokens)
    console.print(out.text, highlight=False)
    console.print(
        f"[dim]{llm.spec}: {out.prompt_tokens}+{out.completion_tokens} tokens, "
        f"{out.latency_s:.2f} s, {out.completion_tokens / max(out.latency_s, 1e-9):.1f} tok/s[/]"
    )


@friendly_errors
def embed(
    ctx: typer.Context,
    texts: Annotated[list[str], typer.Argument(help="Two or more texts; the first is the query.")],
) -> None:
    """Embed texts and show each one's cosine similarity to the first."""
    settings = settings_from(ctx)
    embedder = get_embedder(None, settings.embed)
    query = embedder.embed(texts[0], "query")
    passages = embedder.embed(texts[1:], "passage") if len(texts) > 1 else query[None, :]
    table = Table(title=f"cosine to {texts[0]!r} ({embedder.spec})")
    table.add_column("text")
    table.add_column("cosine", justify="right")
    for text, vec in zip(texts[1:], passages):
        table.add_row(text, f"{float(vec @ query):.3f}")
    console.print(table)


@friendly_errors
def demo(
    ctx: typer.Context,
    only: Annotated[Optional[list[str]], typer.Option(help=f"Run only this section (repeatable): {', '.join(section_names())}.")] = None,
) -> None:
    """The main job on the embedded default: no server, no key, no network."""
    from .demo import run_demo

    run_demo(settings_from(ctx), console, only)
