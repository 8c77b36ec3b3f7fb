"""The LLM interface. Subclasses implement only `_call_model`; the public `generate`
owns timeouts, retries with backoff, the concurrency limit, token and latency accounting
and the optional on-disk response cache."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tenacity import (
    AsyncRetrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from ..config import LLMSettings
from ..errors import LLMError, LLMOutputError, LLMTimeoutError
from ..types import ChatMessage, Usage
from ._json import extract_json

M = TypeVar("M", bound=BaseModel)

MessagesLike = str | Sequence[ChatMessage | dict[str, str]]


class GenerateOptions(BaseModel):
    """Per-call sampling options; defaults come from `LLMSettings`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(0.0, ge=0.0, le=2.0)
    seed: int = 0
    max_tokens: int = Field(512, ge=1)
    stop: tuple[str, ...] = ()
    json_mode: bool = False
    """Ask the backend for a JSON object when it supports it (OpenAI, llama.cpp)."""
    json_schema: dict[str, Any] | None = None
    """Constrain the answer to this JSON schema (llama.cpp grammar, OpenAI structured output)."""


class Completion(BaseModel):
    """One answer of a model, with what it cost."""

    model_config = ConfigDict(extra="forbid")

    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    attempts: int = 1


@dataclass
class RawCompletion:
    """What a backend's `_call_model` returns."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


def chat_request(messages: list[ChatMessage], options: GenerateOptions) -> dict[str, Any]:
    """The OpenAI-style chat request both the openai and local backends send."""
    request: dict[str, Any] = {
        "messages": [m.model_dump() for m in messages],
        "temperature": options.temperature,
        "seed": options.seed,
        "max_tokens": options.max_tokens,
    }
    if options.stop:
        request["stop"] = list(options.stop)
    if options.json_schema is not None:
        # OpenAI structured output; llama.cpp compiles the schema into a decoding grammar.
        request["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": options.json_schema},
        }
    elif options.json_mode:
        # OpenAI's JSON mode; llama.cpp turns it into grammar-constrained decoding.
        request["response_format"] = {"type": "json_object"}
    return request


def to_messages(messages: MessagesLike) -> list[ChatMessage]:
    """Accept a plain prompt, dicts or ChatMessages."""
    if isinstance(messages, str):
        return [ChatMessage.user(messages)]
    return [m if isinstance(m, ChatMessage) else ChatMessage(**m) for m in messages]


class LLM(ABC):
    """A chat model behind one interface.

    Args:
        model: the backend-specific model name (the part after `backend/` in a spec).
        settings: timeouts, retries, concurrency, cache and default sampling options.
    """

    backend: ClassVar[str]

    def __init__(self, model: str, settings: LLMSettings | None = None) -> None:
        self.model = model
        self.settings = settings or LLMSettings()
        self.usage = Usage()
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._semaphores = weakref.WeakKeyDictionary()
        self._cache = None
        if self.settings.cache_dir is not None:
            import diskcache

            self._cache = diskcache.Cache(str(self.settings.cache_dir))

    # -- what subclasses implement -------------------------------------------------------

    @abstractmethod
    async def _call_model(self, messages: list[ChatMessage], options: GenerateOptions) -> RawCompletion:
        """One attempt. Raise an `LLMError` subclass; `transient` ones are retried."""

    def describe(self) -> dict[str, Any]:
        """How this backend was built, for run logs."""
        return {"backend": self.backend, "model": self.model, "spec": self.spec}

    # -- public API ----------------------------------------------------------------------

    async def aclose(self) -> None:
        """Release what the backend holds on the running event loop (an HTTP client's
        connections); call it before the loop ends. Nothing to release by default."""

    @property
    def spec(self) -> str:
        return f"{self.backend}/{self.model}" if self.model else self.backend

    def default_options(self, **overrides: Any) -> GenerateOptions:
        s = self.settings
        base = {"temperature": s.temperature, "seed": s.seed, "max_tokens": s.max_tokens}
        base.update({k: v for k, v in overrides.items() if v is not None})
        if "stop" in base:
            base["stop"] = tuple(base["stop"])
        return GenerateOptions(**base)

    async def generate(self, messages: MessagesLike, **options: Any) -> Completion:
        """Generate one answer.

        Raises:
            LLMError: after the configured retries (the subclass says why).
        """
        msgs = to_messages(messages)
        opts = self.default_options(**options)
        key = self._cache_key(msgs, opts)
        if self._cache is not None and (hit := self._cache.get(key)) is not None:
            completion = Completion.model_validate_json(hit)
            completion.cached = True
            self.usage.calls += 1
            self.usage.cached_calls += 1
            return completion

        attempts = 0
        started = time.perf_counter()
        try:
            async with self._semaphore():
                retrying = AsyncRetrying(
                    retry=retry_if_exception(lambda e: isinstance(e, LLMError) and e.transient),
                    stop=stop_after_attempt(self.settings.retries + 1),
                    wait=wait_exponential_jitter(
                        multiplier=self.settings.backoff_s, max=max(self.settings.backoff_s * 16, 1)
                    ),
                    reraise=True,
                )
                async for attempt in retrying:
                    with attempt:
                        attempts += 1
                        raw = await self._attempt(msgs, opts)
        except LLMError as exc:
            self.usage.failed_calls += 1
            exc.attempts = attempts  # type: ignore[attr-defined]
            if attempts > 1:
                exc.args = (f"{exc.args[0] if exc.args else exc} (after {attempts} attempts)",)
            raise
        latency = time.perf_counter() - started
        completion = Completion(
            text=raw.text,
            model=self.spec,
            prompt_tokens=raw.prompt_tokens,
            completion_tokens=raw.completion_tokens,
            latency_s=latency,
            attempts=attempts,
        )
        self.usage.add(
            Usage(
                calls=1,
                prompt_tokens=raw.prompt_tokens,
                completion_tokens=raw.completion_tokens,
                latency_s=latency,
            )
        )
        if self._cache is not None:
            self._cache.set(key, completion.model_dump_json())
        return completion

    async def generate_json(
        self, messages: MessagesLike, *, schema: type[M] | None = None, reasks: int = 1, **options: Any
    ) -> Any:
        """Generate and parse a JSON answer, validated against `schema` when given.

        With a `schema`, backends that support it constrain decoding to the schema's JSON
        (pass `json_schema=None` to ask for plain JSON mode instead). When the answer cannot be
        parsed, the model is asked again (`reasks` times) with its answer and the parse error.
        Raises `LLMOutputError` when that fails too.
        """
        msgs = to_messages(messages)
        options.setdefault("json_mode", True)
        if schema is not None and "json_schema" not in options:
            options["json_schema"] = schema.model_json_schema()
        last_error: LLMOutputError | None = None
        limit = self.default_options(**options).max_tokens
        for _ in range(reasks + 1):
            completion = await self.generate(msgs, **options)
            try:
                # A JSON answer that hit the token limit is cut off: whatever parses out of it
                # (an inner object, a repaired prefix) is not the answer the model meant.
                if limit and completion.completion_tokens >= limit:
                    raise LLMOutputError(f"the answer was cut off at max_tokens={limit}; keep it shorter", text=completion.text)
                value = extract_json(completion.text)
                return schema.model_validate(value) if schema is not None else value
            except ValidationError as exc:
                last_error = LLMOutputError(f"JSON did not match {schema.__name__}: {exc.errors()[:3]}", text=completion.text)  # type: ignore[union-attr]
            except LLMOutputError as exc:
                last_error = exc
            msgs = [
                *msgs,
                ChatMessage.assistant(completion.text),
                ChatMessage.user(
                    "Your answer could not be parsed: "
                    f"{str(last_error).split('. Model output')[0]}. Reply again with only the JSON."
                ),
            ]
        assert last_error is not None
        raise last_error

    def generate_sync(self, messages: MessagesLike, **options: Any) -> Completion:
        """Blocking `generate` for scripts; not for use inside a running event loop."""
        return _run_sync(self.generate(messages, **options))

    def generate_json_sync(self, messages: MessagesLike, **kwargs: Any) -> Any:
        return _run_sync(self.generate_json(messages, **kwargs))

    # -- internals -----------------------------------------------------------------------

    async def _attempt(self, msgs: list[ChatMessage], opts: GenerateOptions) -> RawCompletion:
        try:
            return await asyncio.wait_for(self._call_model(msgs, opts), self.settings.timeout_s)
        except TimeoutError:
            raise LLMTimeoutError(
                f"{self.spec}: no answer within {self.settings.timeout_s:g} s; "
                "raise llm.timeout_s or check the endpoint"
            ) from None

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._semaphores.get(loop)
        if sem is None:
            sem = self._semaphores[loop] = asyncio.Semaphore(self.settings.concurrency)
        return sem

    def _cache_key(self, msgs: list[ChatMessage], opts: GenerateOptions) -> str:
        payload = json.dumps(
            {
                "spec": self.spec,
                "messages": [m.model_dump() for m in msgs],
                "options": opts.model_dump(mode="json"),
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()


def _run_sync(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise RuntimeError("generate_sync was called inside a running event loop; await generate()")
