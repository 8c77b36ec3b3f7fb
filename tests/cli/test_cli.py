from __future__ import annotations

import pytest
from typer.testing import CliRunner

from misguard.cli.main import app

runner = CliRunner()


def _all_command_paths(group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            paths += _all_command_paths(cmd, prefix + (name,))
        else:
            paths.append(prefix + (name,))
    return paths


def test_every_command_has_help():
    import typer.main

    root = typer.main.get_command(app)
    paths = _all_command_paths(root)
    assert ("doctor",) in paths and ("bench", "backends") in paths
    for path in paths:
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage" in result.output


def test_chat_with_mock_backend():
    result = runner.invoke(app, ["--llm", "mock", "chat", "hello"])
    assert result.exit_code == 0, result.output
    assert "{}" in result.output and "tokens" in result.output


def test_bad_settings_give_one_clear_line(tmp_path):
    result = runner.invoke(app, ["--config", str(tmp_path / "nope.toml"), "doctor"])
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_unknown_backend_is_a_clear_error():
    result = runner.invoke(app, ["--llm", "nope/x", "chat", "hi"])
    assert result.exit_code == 2 and "Unknown LLM backend" in result.output


@pytest.mark.slow
def test_doctor_reports_components():
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    assert "embedder e5" in result.output and "extra [torch]" in result.output


def test_error_messages_keep_their_brackets(tmp_path):
    """`misguard[extra]` in an error must not be eaten as rich markup."""
    missing = tmp_path / "missing.gguf"
    result = runner.invoke(app, ["--llm", f"local/{missing}", "chat", "hi"])
    assert result.exit_code == 2 and "No GGUF file" in result.output
    from misguard.cli._common import error_line
    from misguard.errors import MissingExtraError

    line = error_line(MissingExtraError("matplotlib", "mas", "plots"))
    from rich.console import Console

    console = Console(record=True, width=200)
    console.print(line)
    assert "pip install 'misguard[mas]'" in console.export_text()


def test_models_list_and_doctor_show_the_packs():
    result = runner.invoke(app, ["models", "list"])
    assert result.exit_code == 0, result.output
    assert "local/qwen2.5-1.5b" in result.output and "local/qwen2.5-0.5b" in result.output
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 0, result.output
    assert "model pack" in result.output and "qwen2.5-0.5b" in result.output


def test_models_verify_unknown_pack_is_a_clear_error():
    result = runner.invoke(app, ["models", "verify", "no-such-pack"])
    assert result.exit_code == 2 and "Unknown model pack" in result.output


def test_doctor_lists_a_plugin_registered_by_name():
    from misguard.memory import DETECTORS

    @DETECTORS.register("doctor-test-detector")
    def _factory(**kwargs):  # pragma: no cover - only listed, never built
        raise AssertionError

    try:
        result = runner.invoke(app, ["doctor"])
        assert result.exit_code == 0, result.output
        assert "doctor-test-detector" in result.output and "memory poisoning detector" in result.output
    finally:
        DETECTORS._entries.pop("doctor-test-detector")


def test_run_defends_one_task_and_writes_its_event_log(tmp_path):
    from misguard.mas import read_events

    out = CliRunner().invoke(app, ["--llm", "mock", "run", "--data", "sample", "--task", "0", "--attack", "inject",
                                   "--rounds", "2", "--events", str(tmp_path / "events.jsonl")])
    assert out.exit_code == 0, out.output
    assert "defense argus; attack inject" in out.output and "what argus did" in out.output
    assert "final answer" in out.output and "hijacked by the attack: agent_" in out.output
    log = read_events(tmp_path / "events.jsonl")
    assert len(list(log.of_type("interception"))) >= 3  # every message checked, on every channel
    bad = CliRunner().invoke(app, ["--llm", "mock", "run", "--data", "sample", "--task", "9"])
    assert bad.exit_code == 2 and "not in the data" in bad.output
