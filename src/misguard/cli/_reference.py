"""Parameter references generated from the settings models, so that the CLI (`misguard
defenses show`, `misguard config`) and the tables in docs/ cannot drift from the code."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str
    default: str
    description: str


def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    text = text or str(annotation)
    text = re.sub(r"\b(?:typing|pathlib|pydantic\.types)\.", "", text)
    return text.replace("NoneType", "None").replace("PosixPath", "Path")


def _default(model: type[BaseModel], name: str, preset: Mapping[str, Any]) -> str:
    if name in preset:
        value = preset[name]
    else:
        field = model.model_fields[name]
        value = field.default_factory() if field.default_factory is not None else field.default  # type: ignore[call-arg]
        if value is PydanticUndefined:
            return "(required)"
    if isinstance(value, BaseModel):
        return "(section)"
    return json.dumps(value.value if hasattr(value, "value") else value, default=str)


def parameters(model: type[BaseModel], preset: Mapping[str, Any] | None = None) -> list[Parameter]:
    """Every field of `model` with its type, default (under `preset`) and description."""
    preset = preset or {}
    out = []
    for name, field in model.model_fields.items():
        description = " ".join((field.description or "").split())
        out.append(Parameter(name, _type_name(field.annotation), _default(model, name, preset), description))
    return out


def markdown_table(params: list[Parameter]) -> str:
    """A Markdown table: parameter, type, default, what it does."""
    rows = ["| parameter | type | default | what it does |", "| --- | --- | --- | --- |"]
    for p in params:
        text = p.description.replace("|", "\\|")
        rows.append(f"| `{p.name}` | `{p.type}` | `{p.default}` | {text} |")
    return "\n".join(rows) + "\n"
