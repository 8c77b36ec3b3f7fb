from __future__ import annotations

import pytest

from misguard.config import load_settings
from misguard.errors import ConfigError


def test_precedence_defaults_file_env_cli(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_settings().llm.model == "local/smollm2"
    (tmp_path / "misguard.toml").write_text('[llm]\nmodel = "mock"\ntemperature = 0.5\n')
    s = load_settings()
    assert (s.llm.model, s.llm.temperature) == ("mock", 0.5)
    monkeypatch.setenv("MISGUARD_LLM__MODEL", "openai/gpt-4o-mini")
    s = load_settings()
    assert (s.llm.model, s.llm.temperature) == ("openai/gpt-4o-mini", 0.5)
    s = load_settings(llm={"model": "local/smollm2", "seed": None})
    assert (s.llm.model, s.llm.temperature, s.llm.seed) == ("local/smollm2", 0.5, 0)


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


def test_api_keys_come_comma_separated_from_the_environment(monkeypatch):
    monkeypatch.setenv("MISGUARD_API_KEYS", "alpha, beta,,gamma")
    monkeypatch.setenv("MISGUARD_ADMIN_KEYS", "root")
    s = load_settings()
    assert [k.get_secret_value() for k in s.api_keys] == ["alpha", "beta", "gamma"]
    assert [k.get_secret_value() for k in s.admin_keys] == ["root"]
    assert "alpha" not in repr(s)
    assert load_settings(api_keys=["cli"]).api_keys[0].get_secret_value() == "cli"
