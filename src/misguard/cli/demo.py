"""`make demo`: the main job on the embedded default (no server, no key, no network).

Each concern contributes one section: a `run(settings, console)` function in its own
`cli/demo_<concern>.py`, listed in `SECTIONS` in the order they run.
"""

from __future__ import annotations

import importlib
import time

from rich.console import Console
from rich.rule import Rule

from ..config import Settings
from ..errors import ConfigError

#: (title, module) in run order; `misguard demo --only NAME` runs one (NAME: the module's
#: `demo_<name>` suffix).
SECTIONS: list[tuple[str, str]] = [
    ("Backends: multilingual embeddings and a local LLM", "misguard.cli.demo_backends"),
    ("ARGUS: a multi-agent system under prompt injection, with and without the defense", "misguard.cli.demo_argus"),
    ("Shared memory: poisoning detection and repair", "misguard.cli.demo_memory"),
    ("Claim guard: multilingual retrieval-augmented misinformation detection", "misguard.cli.demo_claims"),
    ("Fact-checks pulled from a ClaimReview feed and a fact-check page, then a page checked", "misguard.cli.demo_pull"),
    ("Web service: the claim guard over HTTP (what the browser extension calls)", "misguard.cli.demo_service"),
]


def section_names() -> list[str]:
    return [module.rsplit(".", 1)[1].removeprefix("demo_") for _, module in SECTIONS]


def run_demo(settings: Settings, console: Console, only: list[str] | None = None) -> None:
    unknown = sorted(set(only or ()) - set(section_names()))
    if unknown:
        raise ConfigError(f"unknown demo section {', '.join(unknown)}; known: {', '.join(section_names())}")
    started = time.perf_counter()
    for (title, module), name in zip(SECTIONS, section_names()):
        if only and name not in only:
            continue
        console.print(Rule(title))
        section_started = time.perf_counter()
        importlib.import_module(module).run(settings, console)
        console.print(f"[dim]section took {time.perf_counter() - section_started:.1f} s[/]")
    console.print(Rule(f"demo finished in {time.perf_counter() - started:.1f} s"))
