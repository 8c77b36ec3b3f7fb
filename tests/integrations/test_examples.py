"""Each example app runs offline (its framework's own scripted model) and is protected."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # LangGraph resolves the state's type hints through it
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _args(tmp_path) -> list[str]:
    # the hashing embedder keeps the test fast; the examples default to e5 and its fitted decision
    return ["--fake", "--workdir", str(tmp_path), "--embedder", "hashing/256", "--threshold", "0.6"]


def test_langgraph_example(tmp_path):
    pytest.importorskip("langgraph")
    out = _example("langgraph_research").main(_args(tmp_path))
    (message,) = out["messages"]
    assert (message["sender"], message["receiver"], message["action"]) == ("researcher", "writer", "rewrite")
    assert out["writer_read"].startswith("[Fact-check:") and len(out["quarantined"]) == 1
    assert out["note_in_store"] is None  # the poisoned note is not read back
    assert (tmp_path / "langgraph-events.jsonl").exists()


def test_openai_agents_example(tmp_path):
    pytest.importorskip("agents")
    out = _example("openai_agents_handoff").main(_args(tmp_path))
    assert [m["action"] for m in out["messages"]] == ["rewrite"]
    assert not any("naked eye from the Moon." in (t or "") for t in out["writer_input"])
    assert not any("Finding:" in (t or "") for t in out["read_back"])  # quarantined in the session


def test_autogen_example(tmp_path):
    pytest.importorskip("autogen_core")
    out = _example("autogen_team").main(_args(tmp_path))
    assert [m["action"] for m in out["messages"]] == ["rewrite", "pass"]
    assert any(t.startswith("[Fact-check:") for t in out["writer_read"])
    assert not any(t.startswith("Note:") for t in out["writer_read"])
