"""In-process llama.cpp through the prebuilt `xllamacpp` wheel (no compile step).

`local/<pack>` loads a model pack (`qwen2.5-1.5b`, `qwen2.5-0.5b`; see `_packs.py`),
`local//path/model.gguf` any GGUF file. The runtime is llama.cpp's own server engine, run in
this process: it applies the model's chat template, constrains JSON output with the request's
schema, and batches concurrent requests over `llm.parallel` slots (continuous batching), so
the workers of one round share the model instead of queueing behind a lock.

A generation is streamed token by token so that it can be abandoned: when `generate`'s
timeout fires, the stream callback tells llama.cpp to stop, which frees the slot for the next
call instead of leaving it busy until the abandoned answer is complete.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..config import LLMSettings
from ..errors import LLMOutputError, LLMRequestError, LLMTimeoutError, MissingExtraError
from ..types import ChatMessage
from ._base import LLM, GenerateOptions, RawCompletion, chat_request
from ._packs import ModelPack, resolve_local_model, sha256_file

#: The pack `local` resolves to when no model is named.
DEFAULT_LOCAL_MODEL = "qwen2.5-1.5b"


def _import_xllamacpp() -> Any:
    try:
        import xllamacpp
    except ImportError:
        raise MissingExtraError("xllamacpp", "local", "the local LLM backend") from None
    return xllamacpp


@lru_cache(maxsize=4)
def _load_server(path: str, n_ctx: int, n_threads: int, parallel: int) -> Any:
    """One llama.cpp server per model file and shape, shared by every LocalLLM in the process."""
    xlc = _import_xllamacpp()
    params = xlc.CommonParams()
    params.model.path = path
    params.n_parallel = parallel
    # llama.cpp splits the context between the slots: give every slot the full window.
    params.n_ctx = n_ctx * parallel
    params.cpuparams.n_threads = n_threads
    params.cpuparams_batch.n_threads = n_threads
    params.verbosity = 1  # errors only; the server's per-request timing lines are noise here
    params.warmup = False
    # The engine also listens on a loopback port; a random key keeps other local users out.
    params.api_keys = [secrets.token_hex(16)]
    return xlc.Server(params)


class LocalLLM(LLM):
    """A GGUF model run in this process by llama.cpp.

    Args:
        model: a pack name (`qwen2.5-1.5b`, `qwen2.5-0.5b`) or a path to a `.gguf` file.
        settings: `n_ctx` (per request), `n_threads`, `parallel` slots, `models_dir`, timeouts.
    """

    backend = "local"

    def __init__(self, model: str = DEFAULT_LOCAL_MODEL, settings: LLMSettings | None = None) -> None:
        super().__init__(model or DEFAULT_LOCAL_MODEL, settings)
        _import_xllamacpp()  # fail with the extra's name before assembling a gigabyte
        self.path, self.pack = resolve_local_model(self.model, self.settings.models_dir)
        self.n_threads = self.settings.n_threads or os.cpu_count() or 1
        self._server = _load_server(
            str(self.path), self.settings.n_ctx, self.n_threads, self.settings.parallel
        )

    def describe(self) -> dict[str, Any]:
        xlc = _import_xllamacpp()
        info: dict[str, Any] = {
            **super().describe(),
            "path": str(self.path),
            "runtime": f"xllamacpp {xlc.__version__}",
            "n_ctx": self.settings.n_ctx,
            "n_threads": self.n_threads,
            "parallel": self.settings.parallel,
            "prompt_cache": self.settings.prompt_cache,
        }
        info["pack"] = _pack_record(self.pack) if self.pack else None
        if self.pack is None:
            info["sha256"] = _file_sha256(str(self.path))
        else:
            info["sha256"] = self.pack.sha256  # verified against the pin when assembled
        return info

    async def _attempt(self, msgs: list[ChatMessage], opts: GenerateOptions) -> RawCompletion:
        try:
            return await super()._attempt(msgs, opts)
        except LLMTimeoutError as exc:
            # The generation was stopped and its slot freed, but the same prompt on the same
            # machine would time out again: report at once instead of retrying.
            exc.transient = False
            exc.args = (f"{exc.args[0]} (the local model is slower than llm.timeout_s on this machine)",)
            raise

    async def _call_model(self, messages: list[ChatMessage], options: GenerateOptions) -> RawCompletion:
        stop = threading.Event()
        try:
            return await asyncio.to_thread(self._complete, messages, options, stop)
        except asyncio.CancelledError:
            stop.set()  # timeout or caller cancelled: end the stream at the next token
            raise

    def _complete(self, messages: list[ChatMessage], options: GenerateOptions, stop: threading.Event) -> RawCompletion:
        request = chat_request(messages, options)
        request["stream"] = True
        request["cache_prompt"] = self.settings.prompt_cache
        request["stream_options"] = {"include_usage": True}
        pieces: list[str] = []
        usage: dict[str, Any] = {}
        errors: list[Any] = []

        def on_chunk(chunk: Any) -> bool:
            if isinstance(chunk, dict):
                if "error" in chunk:
                    errors.append(chunk["error"])
                for choice in chunk.get("choices") or ():
                    content = (choice.get("delta") or {}).get("content")
                    if content:
                        pieces.append(content)
                if chunk.get("usage"):
                    usage.update(chunk["usage"])
            return stop.is_set()

        result = self._server.handle_chat_completions(request, on_chunk)
        if isinstance(result, dict) and "error" in result:
            errors.append(result["error"])
        if errors:
            raise _request_error(self.spec, errors[0])
        if stop.is_set():
            raise LLMTimeoutError(f"{self.spec}: generation abandoned")
        return RawCompletion(
            text="".join(pieces),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
        )


def _request_error(spec: str, error: Any) -> Exception:
    message = error.get("message", str(error)) if isinstance(error, dict) else str(error)
    if "context" in message.lower() or "exceed" in message.lower():
        return LLMRequestError(f"{spec}: {message}; shorten the prompt or raise llm.n_ctx")
    if "grammar" in message.lower() or "schema" in message.lower():
        return LLMOutputError(f"{spec}: the JSON schema was rejected: {message}")
    return LLMRequestError(f"{spec}: {message}")


def _pack_record(pack: ModelPack) -> dict[str, Any]:
    return {"name": pack.name, "title": pack.title, "sha256": pack.sha256, "size": pack.size}


_digests: dict[str, str] = {}
_digest_lock = threading.Lock()


def _file_sha256(path: str) -> str:
    """sha256 of a user's GGUF, once per process (it is recorded in every run log)."""
    with _digest_lock:
        if path not in _digests:
            _digests[path] = sha256_file(Path(path))
        return _digests[path]

