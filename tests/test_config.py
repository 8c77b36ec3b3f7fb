from __future__ import annotations

import pytest

from misguard.config import load_settings
from misguard.errors import ConfigError


def test_precedence_defaults_file_env_cli(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_settings().llm.model == "local/qwen2.5-1.5b"
    (tmp_path / "misguard.toml").write_text('[llm]\nmodel = "mock"\ntemperature = 0.5\n')
    s = load_settings()
    assert (s.llm.model, s.llm.temperature) == ("mock", 0.5)
    monkeypatch.setenv("MISGUARD_LLM__MODEL", "openai/gpt-4o-mini")
    s = load_settings()
    assert (s.llm.model, s.llm.temperature) == ("openai/gpt-4o-mini", 0.5)
    s = load_settings(llm={"model": "local/qwen2.5-0.5b", "seed": None})
    assert (s.llm.model, s.llm.temperature, s.llm.seed) == ("local/qwen2.5-0.5b", 0.5, 0)


def test_an_empty_environment_variable_is_not_set(tmp_path, monkeypatch):
    # an empty path once meant "the current directory": a cache file wherever a command ran
    monkeypatch.chdir(tmp_path)
    (tmp_path / "misguard.toml").write_text('[embed]\ncache_dir = "/var/cache/misguard"\n')
    monkeypatch.setenv("MISGUARD_EMBED__CACHE_DIR", "")
    assert str(load_settings().embed.cache_dir) == "/var/cache/misguard"
    (tmp_path / "misguard.toml").unlink()
    assert load_settings().embed.cache_dir is None


def test_unknown_keys_are_errors(tmp_path, monkeypatch):
    bad = tmp_path / "bad.toml"
    bad.write_text("[llm]\nmodle = 'mock'\n")
    with pytest.raises(ConfigError, match="modle"):
        load_settings(bad)
    monkeypatch.setenv("MISGUARD_LLM__TEMPRATURE", "1")
    with pytest.raises(ConfigError, match="MISGUARD_LLM__TEMPRATURE"):
        load_settings()


def test_bad_values_and_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[llm\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(broken)
    with pytest.raises(ConfigError, match="temperature"):
        load_settings(llm={"temperature": 9})


def test_secrets_are_not_logged():
    from misguard.runlog import public_settings

    s = load_settings(llm={"api_key": "sk-secret"})
    assert "sk-secret" not in str(public_settings(s))


def _documented_env_names() -> set[str]:
    """Every MISGUARD_* name the repo mentions: docs, README, source, Makefile, CI."""
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    files = [repo / "README.md", repo / "Makefile", repo / ".ci" / "run"]
    files += list((repo / "docs").rglob("*.md")) + list((repo / "src").rglob("*.py"))
    names: set[str] = set()
    for path in files:
        if path.is_file():
            names |= set(re.findall(r"\bMISGUARD_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8")))
    # The prefix alone and generic placeholders are prose, not variables.
    return {n for n in names if n not in {"MISGUARD_"} and "<" not in n}


def test_every_documented_environment_variable_is_accepted(monkeypatch):
    from misguard.config import CONFIG_ENV, ENV_PREFIX, Settings, _check_env, _known_env_names

    known = _known_env_names(Settings, ENV_PREFIX) | {CONFIG_ENV}
    documented = _documented_env_names()
    assert "MISGUARD_MEMORY__POSTGRES_URL" in documented  # the scan sees source files
    assert documented <= known, f"not settings fields: {sorted(documented - known)}"
    for name in sorted(documented - {CONFIG_ENV}):
        monkeypatch.setenv(name, "1" if "SEED" in name or "RETRIES" in name else "x")
        _check_env()  # the name alone must not be rejected
        monkeypatch.delenv(name)


def test_cli_envvars_are_settings_fields():
    """A CLI option that reads the environment uses the name of a settings field."""
    import click
    import typer.main

    from misguard.cli.main import app
    from misguard.config import CONFIG_ENV, ENV_PREFIX, Settings, _known_env_names

    known = _known_env_names(Settings, ENV_PREFIX) | {CONFIG_ENV}
    seen = []

    def walk(cmd: click.Command) -> None:
        for param in cmd.params:
            for name in [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or ()):
                seen.append(name)
                assert name in known, f"{cmd.name} --{param.name}: {name} is not a settings field"
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(app))
    assert "MISGUARD_MEMORY__POSTGRES_URL" in seen


def test_api_keys_come_comma_separated_from_the_environment(monkeypatch):
    monkeypatch.setenv("MISGUARD_API_KEYS", "key-a1, key-b2,,key-c3")
    monkeypatch.setenv("MISGUARD_ADMIN_KEYS", "key-root")
    s = load_settings()
    assert [k.get_secret_value() for k in s.api_keys] == ["key-a1", "key-b2", "key-c3"]
    assert [k.get_secret_value() for k in s.admin_keys] == ["key-root"]
    assert "key-a1" not in repr(s) and "key-root" not in repr(s)
    assert load_settings(api_keys=["cli"]).api_keys[0].get_secret_value() == "cli"
