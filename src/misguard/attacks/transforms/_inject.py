"""Prompt injection addressed to the guard that checks the text (OWASP LLM01; AgentDojo's
injection tasks): a note, an "ignore previous instructions", a role-play, a fake JSON
verdict, a message to a channel monitor, a notice to a memory guard, in the text's
language (en, fr, es, ar, hi, zh; other languages get the English one)."""

from __future__ import annotations

import random
import tomllib
from functools import cache
from importlib import resources
from typing import Any

from ...errors import ConfigError
from ._base import Context, transform

INJECTION_LANGUAGES = ("en", "fr", "es", "ar", "hi", "zh")
STYLES = ("note", "ignore", "roleplay", "json", "rectifier", "memory")


@cache
def injections() -> dict[str, Any]:
    return tomllib.loads(resources.files(__package__).joinpath("data", "injection.toml").read_text(encoding="utf-8"))


def injection_text(style: str, language: str) -> str:
    """The injected text of `style` in `language` (English when there is none)."""
    if style not in STYLES:
        raise ConfigError(f"unknown injection style {style!r}; use one of {', '.join(STYLES)}")
    table = injections()
    return table.get(language, table["en"])[style]


@transform("inject", family="injection", style="note", position="end",
           description="text addressed to the checker, in the text's language; style note | ignore | roleplay | json | "
                       "rectifier | memory, position end | start")
def inject(text: str, rng: random.Random, context: Context, *, style: str, position: str) -> str:
    note = injection_text(style, context.language)
    if position == "start":
        return f"{note}\n{text}"
    if position != "end":
        raise ConfigError(f"injection position is start or end, not {position!r}")
    return f"{text}\n{note}"
