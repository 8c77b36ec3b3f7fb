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
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            continue  # a nested section: it has a table of its own
        description = " ".join((field.description or "").split())
        out.append(Parameter(name, _type_name(field.annotation), _default(model, name, preset), description))
    return out


def markdown_table(params: list[Parameter]) -> str:
    """A Markdown table: parameter, type, default, what it does."""
    rows = ["| parameter | type | default | what it does |", "| --- | --- | --- | --- |"]
    for p in params:
        text = p.description.replace("|", "\\|")
        kind = p.type.replace("|", "\\|")
        rows.append(f"| `{p.name}` | `{kind}` | `{p.default}` | {text} |")
    return "\n".join(rows) + "\n"


#: A generated block in a Markdown page: the command that prints it, then its output.
GENERATED = re.compile(r"<!-- generated: misguard (.+?) -->\n(.*?)<!-- end generated -->", re.DOTALL)


def regenerate(page: str) -> bool:
    """Rewrite every generated block of the Markdown file `page` with what its command prints
    now (`make docs`); True when the file changed."""
    import shlex
    from pathlib import Path

    from typer.testing import CliRunner

    from .main import app

    path = Path(page)
    text = path.read_text(encoding="utf-8")

    def run(match: re.Match[str]) -> str:
        out = CliRunner(env={"COLUMNS": "10000"}).invoke(app, shlex.split(match.group(1)))
        if out.exit_code != 0:
            raise RuntimeError(f"misguard {match.group(1)} failed: {out.output}")
        return f"<!-- generated: misguard {match.group(1)} -->\n{out.output}<!-- end generated -->"

    new = GENERATED.sub(run, text)
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":
    import sys

    for changed in [p for p in sys.argv[1:] if regenerate(p)]:
        print(f"regenerated {changed}")
