"""The docs quote the code: every generated block matches what its command prints today,
and every relative link resolves."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from misguard.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
from misguard.cli._reference import GENERATED as BLOCK


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_generated_blocks_match_their_commands(page):
    for command, block in BLOCK.findall(page.read_text(encoding="utf-8")):
        out = CliRunner(env={"COLUMNS": "10000"}).invoke(app, shlex.split(command))
        assert out.exit_code == 0, out.output
        assert block == out.output, f"{page.name}: run `make docs` (the block of `misguard {command}` is stale)"


@pytest.mark.parametrize("page", [*DOCS, *sorted((ROOT / "docs" / "experiments").glob("*.md"))], ids=lambda p: p.name)
def test_relative_links_resolve(page):
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
        if "://" in target or target.startswith("mailto:"):
            continue
        assert (page.parent / target).exists(), f"{page.name}: broken link {target}"


#: Pages whose Python examples run as they are (the others need an LLM).
RUNNABLE = ["docs/memory.md"]


@pytest.mark.parametrize("page", RUNNABLE)
def test_python_examples_run(page, tmp_path, monkeypatch):
    pytest.importorskip("sqlalchemy", reason="needs the 'memory' extra")
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(encoding="utf-8"), re.DOTALL)
    assert blocks
    for code in blocks:
        exec(compile(code, page, "exec"), {})  # noqa: S102 - our own documentation


@pytest.mark.parametrize("page", ["README.md", "docs/argus.md"])
def test_the_multi_agent_example_runs_with_a_mock_model(page, tmp_path, monkeypatch):
    """The example that puts ARGUS on one's own system, with the local pack swapped for the
    mock backend (the example itself loads the 1.5B model)."""
    monkeypatch.chdir(tmp_path)
    blocks = [b for b in re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(encoding="utf-8"), re.DOTALL)
              if "build_defense(" in b]
    assert len(blocks) == 1
    code = blocks[0].replace('get_llm("local/qwen2.5-1.5b")', 'get_llm("mock")')
    assert 'get_llm("mock")' in code
    exec(compile(code, page, "exec"), {})  # noqa: S102 - our own documentation
