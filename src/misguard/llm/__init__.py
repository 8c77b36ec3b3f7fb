"""LLM backends behind one interface, selected by a spec string.

    get_llm("openai/gpt-4o-mini")      # any OpenAI-compatible endpoint (llm.base_url)
    get_llm("local/qwen2.5-1.5b")      # in-process llama.cpp, a model pack (see `misguard models`)
    get_llm("local//models/x.gguf")    # any GGUF file
    get_llm("mock")                    # scripted, for tests
"""

from __future__ import annotations

from typing import Any

from ..config import LLMSettings
from ..errors import ConfigError
from ..registry import Registry
from ._base import LLM, Completion, GenerateOptions, RawCompletion, to_messages
from ._json import extract_json, salvage_text
from ._metered import MeteredLLM

LLM_BACKENDS: Registry[LLM] = Registry("LLM backend")


@LLM_BACKENDS.register("openai", extra="openai", network=True)
def _openai(model: str, settings: LLMSettings, **kwargs: Any) -> LLM:
    from ._openai import OpenAICompatibleLLM

    return OpenAICompatibleLLM(model, settings, **kwargs)


@LLM_BACKENDS.register("local", extra="local", network=False)
def _local(model: str, settings: LLMSettings, **kwargs: Any) -> LLM:
    from ._local import LocalLLM

    return LocalLLM(model, settings, **kwargs)


@LLM_BACKENDS.register("mock", extra=None, network=False)
def _mock(model: str, settings: LLMSettings, **kwargs: Any) -> LLM:
    from ._mock import MockLLM

    return MockLLM(model, settings, **kwargs)


def parse_spec(spec: str) -> tuple[str, str]:
    """`backend/model` -> (backend, model). The model part may itself contain slashes."""
    spec = spec.strip()
    if not spec:
        raise ConfigError("Empty model spec; use e.g. 'local/qwen2.5-1.5b' or 'openai/gpt-4o-mini'")
    backend, _, model = spec.partition("/")
    return backend, model


def get_llm(spec: str | None = None, settings: LLMSettings | None = None, **kwargs: Any) -> LLM:
    """Build an LLM from a spec string; `spec` defaults to `settings.model`."""
    settings = settings or LLMSettings()
    backend, model = parse_spec(spec or settings.model)
    return LLM_BACKENDS.build(backend, model, settings, **kwargs)


__all__ = [
    "LLM",
    "LLM_BACKENDS",
    "Completion",
    "GenerateOptions",
    "MeteredLLM",
    "RawCompletion",
    "extract_json",
    "get_llm",
    "parse_spec",
    "salvage_text",
    "to_messages",
]
