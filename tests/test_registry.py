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


def test_build_records_its_arguments_for_run_logs():
    from pydantic import BaseModel

    from misguard.registry import build_record

    class Params(BaseModel):
        alpha: float = 0.2

    class Thing:
        def __init__(self, size: int, params: Params) -> None:
            self.size, self.params = size, params

    reg: Registry[Thing] = Registry("thing")
    reg.register("t")(Thing)
    built = reg.build("t", 3, params=Params(alpha=0.5))
    record = build_record(built)
    assert record is not None and record.as_dict() == {"kind": "thing", "name": "t", "args": [3], "kwargs": {"params": {"alpha": 0.5}}}
    rebuilt = reg.build(record.name, *record.args, params=Params(**record.kwargs["params"]))
    assert rebuilt.size == 3 and rebuilt.params.alpha == 0.5
    assert reg.record_of("t", 3).as_dict() == {"kind": "thing", "name": "t", "args": [3], "kwargs": {}}


def test_registry_discovers_plugins_on_first_lookup(tmp_path, monkeypatch):
    module = tmp_path / "misguard_test_plugin.py"
    module.write_text("from tests.test_registry import PLUGIN_REG\nPLUGIN_REG.register('from-plugin')(lambda: 1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    # `doctor` (tests/cli) may have looked every registry up before the plug-in was on the path.
    monkeypatch.setattr(PLUGIN_REG, "_discovered", False)
    assert "from-plugin" not in PLUGIN_REG._entries  # not imported yet
    assert PLUGIN_REG.names() == ["from-plugin"] and PLUGIN_REG.build("from-plugin") == 1


PLUGIN_REG: Registry[int] = Registry("plug-in thing", plugins=("misguard_test_plugin", "misguard_not_installed"))
