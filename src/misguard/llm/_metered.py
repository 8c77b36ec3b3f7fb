"""A caller's own view of a shared backend: its tokens and latency, the backend's limits."""

from __future__ import annotations

from typing import Any

from ..types import ChatMessage
from ._base import LLM, GenerateOptions, RawCompletion


class MeteredLLM(LLM):
    """Forwards to a shared backend and keeps this caller's own `usage`, so each agent (or
    judge) accounts its own tokens and latency while `generate_json` keeps its re-ask logic.
    Retries, timeouts, caching and the concurrency limit stay with the shared backend."""

    def __init__(self, inner: LLM) -> None:
        # The inner backend owns retries, timeouts, caching and its concurrency limit.
        settings = inner.settings.model_copy(
            update={"retries": 0, "cache_dir": None, "concurrency": 1024, "timeout_s": 1e9}
        )
        super().__init__(inner.model, settings)
        self.inner = inner
        self.backend = inner.backend  # type: ignore[misc]
        self.last_text = ""

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def default_options(self, **overrides: Any) -> GenerateOptions:
        return self.inner.default_options(**overrides)

    async def _call_model(self, messages: list[ChatMessage], options: GenerateOptions) -> RawCompletion:
        out = await self.inner.generate(messages, **options.model_dump())
        self.last_text = out.text
        return RawCompletion(out.text, out.prompt_tokens, out.completion_tokens)
