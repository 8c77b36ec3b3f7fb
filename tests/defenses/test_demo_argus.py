"""The ARGUS demo section's code path on the mock backend (the demo itself runs the local model)."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from misguard.cli import demo, demo_argus
from misguard.config import LLMSettings, Settings


def test_demo_section_runs_and_is_listed():
    assert ("ARGUS defense: localization and rectification, with and without", "misguard.cli.demo_argus") in demo.SECTIONS
    console = Console(record=True, width=200)
    demo_argus.run(Settings(llm=LLMSettings(model="mock"), embed={"model": "hashing/64"}), console)
    text = console.export_text()
    assert "round 1 monitored (topology)" in text
    # The defended run replays the first run's identical requests (the plan, the round's messages).
    cached = re.search(r"(\d+) requests identical to the first run's were answered from the cache", text)
    assert cached and int(cached.group(1)) >= 4
    assert "attack only" in text and "ARGUS" in text and "MT proxy" in text
    assert "messages per edge" in text and "final answer" in text


def test_demo_runs_only_the_named_sections():
    console = Console(record=True, width=200)
    with pytest.raises(Exception, match="unknown demo section nope; known: backends, argus"):
        demo.run_demo(Settings(), console, ["nope"])
    demo.run_demo(Settings(llm=LLMSettings(model="mock"), embed={"model": "hashing/64"}), console, ["argus"])
    text = console.export_text()
    assert "ARGUS defense" in text and "Backends" not in text and "Shared memory" not in text


def test_the_rewrite_is_shown_by_the_sentences_it_changed():
    from misguard.cli.demo_argus import _changed_sentences

    before = "Thanks for the plan. Water boils hotter up high. So use a big flame."
    after = "Thanks for the plan. Water boils cooler up high, near 90 C. So use a big flame. A lid saves fuel."
    assert _changed_sentences(before, after) == [
        ("Water boils hotter up high.", "Water boils cooler up high, near 90 C."),
        ("", "A lid saves fuel."),
    ]
