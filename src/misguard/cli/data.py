"""`misguard data list|fetch|verify|add|path`: the benchmarks' datasets, pinned by sha256."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ..errors import ConfigError
from ._common import console, err_console, friendly_errors, settings_from
from ._net import AllowPrivateOption, RetriesOption, TimeoutOption, make_fetcher

data_app = typer.Typer(help="Benchmark datasets: pinned URLs and sha256, a user cache, copies added by hand.",
                       no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(data_app, name="data")


def _cache(ctx: typer.Context):
    from ..data import DataCache

    return DataCache.from_settings(settings_from(ctx))


def _summary(states) -> str:
    """"ok", "missing", or "3/12 ok, 1 mismatch" for one root's files."""
    ok = sum(s.state == "ok" for s in states)
    bad = sum(s.state == "mismatch" for s in states)
    if ok == len(states):
        return "ok"
    if ok == 0 and bad == 0:
        return "missing"
    return f"{ok}/{len(states)} ok" + (f", {bad} mismatch" if bad else "")


def _colour(summary: str) -> str:
    colour = "green" if summary == "ok" else "dim" if summary == "missing" else "red" if "mismatch" in summary else "yellow"
    return f"[{colour}]{summary}[/]"


@data_app.command("list")
@friendly_errors
def list_datasets(ctx: typer.Context, json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Every named dataset: size, where a verified copy is, where it downloads from, licence."""
    from ..data import dataset_names, get_dataset

    cache = _cache(ctx)
    rows = []
    for name in dataset_names():
        dataset = get_dataset(name)
        states = cache.status(name)
        rows.append({
            "name": name, "title": dataset.title, "files": len(dataset.files), "bytes": dataset.size,
            "roots": {str(root): _summary([s for s in states if s.root == root]) for root, _ in cache.roots()},
            "download": [d.url for d in dataset.downloads], "license": dataset.license,
            "source": dataset.source, "verified": dataset.verified,
        })
    if json_out:
        console.print_json(json.dumps(rows))
        return
    table = Table(title="datasets (misguard data fetch NAME; --data NAME in the benchmarks)", show_lines=True)
    table.add_column("name")
    table.add_column("what", overflow="fold")
    table.add_column("size", justify="right")
    for root, kind in cache.roots():
        table.add_column(f"{kind}\n{escape(str(root))}", overflow="fold")
    table.add_column("download / licence", overflow="fold")
    for row in rows:
        where = "; ".join(row["download"][:1]) + (f" (+{len(row['download']) - 1} more)" if len(row["download"]) > 1 else "")
        table.add_row(row["name"], escape(row["title"]), f"{row['bytes'] / 1e6:.1f} MB",
                      *map(_colour, row["roots"].values()), escape(f"{where or 'not published for download'}; {row['license']}"))
    console.print(table)


@data_app.command("fetch")
@friendly_errors
def fetch(
    ctx: typer.Context,
    names: Annotated[Optional[list[str]], typer.Argument(help="Datasets to download (see `misguard data list`).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every dataset published for download.")] = False,
    allow_private: AllowPrivateOption = False,
    timeout: TimeoutOption = 60.0,
    retries: RetriesOption = 3,
) -> None:
    """Download datasets into the cache; every file is checked against its pinned sha256
    before it is placed (a mismatch is refused and nothing is written)."""
    from ..data import MAX_DOWNLOAD_BYTES, dataset_names, get_dataset

    if all_:
        names = [n for n in dataset_names() if get_dataset(n).downloads]
    if not names:
        raise ConfigError("name the datasets to fetch (see `misguard data list`), or pass --all")
    cache = _cache(ctx)
    fetcher = make_fetcher(allow_private=allow_private, timeout_s=timeout, retries=retries, max_bytes=MAX_DOWNLOAD_BYTES)
    for name in names:
        report = cache.fetch(name, fetcher)
        if not report.downloaded and not report.placed:
            console.print(f"{name}: already in the cache, verified ({report.directory})", highlight=False)
        else:
            console.print(f"{name}: {len(report.downloaded)} download(s), {len(report.placed)} file(s) verified and "
                          f"placed in {report.directory}", highlight=False)


@data_app.command("verify")
@friendly_errors
def verify(
    ctx: typer.Context,
    names: Annotated[Optional[list[str]], typer.Argument(help="Datasets to check (default: every one).")] = None,
) -> None:
    """Re-hash every copy in the cache and the mirrors; exit 1 when a file does not match
    its pin, or when a dataset named here has no complete verified copy."""
    from ..data import dataset_names

    cache = _cache(ctx)
    table = Table(title="datasets against their pinned sha256")
    for column in ("dataset", "where", "state", "problems"):
        table.add_column(column, overflow="fold")
    failed = False
    lines = []
    for name in names or dataset_names():
        states = cache.status(name)
        complete = False
        for root, kind in cache.roots():
            mine = [s for s in states if s.root == root]
            bad = [s for s in mine if s.state == "mismatch"]
            failed |= bool(bad)
            complete |= all(s.state == "ok" for s in mine)
            problems = "; ".join(f"{s.file.path}: sha256 {s.sha256}" for s in bad)
            table.add_row(name, escape(f"{kind} {root}"), _colour(_summary(mine)), escape(problems))
            lines += [f"{s.path} has sha256 {s.sha256}, not the pinned {s.file.sha256}" for s in bad]
        if names and not complete:
            failed = True
            err_console.print(f"{escape(name)}: no complete verified copy; misguard data fetch {escape(name)} "
                              f"(or misguard data add {escape(name)} FILE...)", highlight=False)
    console.print(table)
    for line in lines:
        err_console.print(f"[red]mismatch[/] {escape(line)}", highlight=False)
    if failed:
        raise typer.Exit(1)


@data_app.command("add")
@friendly_errors
def add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The dataset the files belong to.")],
    files: Annotated[list[Path], typer.Argument(help="Files obtained by hand (or zip archives holding them).")],
) -> None:
    """Place files obtained by hand into the cache after checking each against the
    dataset's pinned sha256 (a file that matches none is refused)."""
    cache = _cache(ctx)
    placed = cache.add(name, files)
    console.print(f"{name}: {len(placed)} file(s) verified and placed: {', '.join(placed)}", highlight=False)
    states = [s for s in cache.status(name) if s.kind == "cache"]
    missing = [s.file.path for s in states if s.state != "ok"]
    if missing:
        console.print(f"{name} still lacks {', '.join(missing)} in the cache", highlight=False)


@data_app.command("path")
@friendly_errors
def path(ctx: typer.Context, name: Annotated[str, typer.Argument(help="A dataset (`liar`) or one of its files (`liar/train.tsv`).")]) -> None:
    """Print where a verified copy is (for scripts: --texts "$(misguard data path liar/train.tsv)")."""
    console.print(str(_cache(ctx).resolve(name)), highlight=False, soft_wrap=True)
