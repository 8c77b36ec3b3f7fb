"""`misguard config`: the settings in force (defaults < misguard.toml < MISGUARD_* environment
< CLI flags), or the reference of every setting."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from pydantic import BaseModel, SecretStr

from ..config import Settings
from ._common import SETUP, console, friendly_errors, settings_from
from ._reference import markdown_table, parameters


def register(app: typer.Typer) -> None:
    app.command("config", rich_help_panel=SETUP)(config)


def _toml_value(value: Any) -> str:
    if isinstance(value, SecretStr):
        return '"********"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value if isinstance(value, (bool, int, float, str)) else str(value))


def _toml(model: BaseModel, prefix: str = "") -> list[str]:
    """The model as TOML: scalars first, then one table per nested section; unset (None)
    values are shown as comments."""
    lines, tables = [], []
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            tables.append((f"{prefix}{name}", value))
        elif value is None:
            lines.append(f"# {name} is unset")
        else:
            lines.append(f"{name} = {_toml_value(value)}")
    for title, section in tables:
        lines += ["", f"[{title}]", *_toml(section, f"{title}.")]
    return lines


def _reference(model: type[BaseModel], title: str) -> list[str]:
    out = [f"### `{title}`" if title else "### top level", "", markdown_table(parameters(model))]
    for name, field in model.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            out += _reference(field.annotation, f"[{title + '.' if title else ''}{name}]")
    return out


@friendly_errors
def config(
    ctx: typer.Context,
    reference: Annotated[bool, typer.Option("--reference", help="Print every setting with its type, default and meaning (Markdown).")] = False,
) -> None:
    """The settings in force, as a misguard.toml would write them (keys masked), or with
    --reference every setting there is. Environment: MISGUARD_<SECTION>__<FIELD>."""
    if reference:
        console.print("\n".join(_reference(Settings, "")), markup=False, highlight=False, soft_wrap=True)
        return
    console.print("\n".join(_toml(settings_from(ctx))), markup=False, highlight=False, soft_wrap=True)
