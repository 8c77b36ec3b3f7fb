"""The ARGUS demo section's code path on the mock backend (the demo itself runs the local
model): the recommended configuration with the shipped risk model on the real e5 embedder."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from misguard.cli import demo, demo_argus
from misguard.config import LLMSettings, Settings
from tests.helpers.mas_script import scripted

TASK = json.loads(demo_argus.sample_tasks_path().read_text())[demo_argus.TASK_ID]


def _worker(agent, neighbours, prompt):
    """The hijacked agent (its prompt carries the injection) repeats the first argument."""
    text = TASK["misinfo_argument"][0] if TASK["misinfo_goal"][:40] in prompt else f"{agent}: boil the pasta longer."
    return json.dumps({"type": "send_message", "reply_prompt": text, "sending_target": neighbours[0]})


def test_demo_section_says_what_the_recommended_argus_did():
    assert ("ARGUS: a multi-agent system under prompt injection, with and without the defense",
            "misguard.cli.demo_argus") in demo.SECTIONS
    console = Console(record=True, width=200)
    settings = Settings(llm=LLMSettings(model="mock"))
    demo_argus._compare(_task(), _mock(), settings, console)
    text = console.export_text()
    assert "attack only" in text and "with ARGUS" in text and "MT proxy" in text
    assert "removed (risk" in text and "quarantined" in text and "(the hijacked agent)" in text
    assert "an honest agent" not in text


def _task():
    from misguard.mas import MisinfoTask

    return MisinfoTask.model_validate(TASK)


def _mock():
    from misguard.llm import get_llm

    return get_llm("mock", LLMSettings(retries=0), respond=scripted(worker=_worker))


def test_demo_runs_only_the_named_sections():
    console = Console(record=True, width=200)
    with pytest.raises(Exception, match="unknown demo section nope; known: backends, argus"):
        demo.run_demo(Settings(), console, ["nope"])
