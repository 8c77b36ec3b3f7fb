"""Walk every registry: each entry builds (or says which extra it needs) and describes itself."""

from __future__ import annotations

import pytest

from misguard.errors import ConfigError, MissingExtraError
from misguard.llm import LLM_BACKENDS, get_llm
from misguard.registry import Registry


def test_llm_registry_contract():
    assert set(LLM_BACKENDS.names()) >= {"openai", "local", "mock"}
    for entry in LLM_BACKENDS:
        assert "extra" in entry.metadata and "network" in entry.metadata


def test_unknown_backend_names_known_ones():
    with pytest.raises(ConfigError, match="known: local, mock, openai"):
        get_llm("nope/x")


def test_registry_rejects_double_registration():
    reg: Registry[int] = Registry("thing")
    reg.register("a")(lambda: 1)
    with pytest.raises(ConfigError):
        reg.register("a")(lambda: 2)


def test_local_backend_bad_path_is_clear(tmp_path):
    try:
        get_llm(f"local/{tmp_path}/missing.gguf")
    except MissingExtraError:
        pytest.skip("local extra not installed")
    except ConfigError as exc:
        assert "No GGUF file" in str(exc)
    else:
        pytest.fail("expected an error")
