"""The ARGUS demo section's code path on the mock backend (the demo itself runs the local model)."""

from __future__ import annotations

from rich.console import Console

from misguard.cli import demo, demo_argus
from misguard.config import LLMSettings, Settings


def test_demo_section_runs_and_is_listed():
    assert ("ARGUS defense: localization and rectification, with and without", "misguard.cli.demo_argus") in demo.SECTIONS
    console = Console(record=True, width=200)
    demo_argus.run(Settings(llm=LLMSettings(model="mock"), embed={"model": "hashing/64"}), console)
    text = console.export_text()
    assert "round 1 monitored (topology)" in text and "round 2 monitored (adaptive)" in text
    assert "attack only" in text and "ARGUS" in text and "MT proxy" in text
