"""A scripted backend for unit tests: a real registered backend, so tests exercise the same
`generate` path (retries, accounting, JSON parsing) as production."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from ..config import LLMSettings
from ..types import ChatMessage
from ._base import LLM, GenerateOptions, RawCompletion

Script = Callable[[list[ChatMessage]], "str | Exception"]


class MockLLM(LLM):
    """Answers from a queue of outputs or a function of the messages.

    An item that is an Exception is raised instead of answered (to test retries).
    With nothing scripted it answers `default`.
    """

    backend = "mock"

    def __init__(
        self,
        model: str = "",
        settings: LLMSettings | None = None,
        *,
        outputs: Iterable[str | Exception] = (),
        respond: Script | None = None,
        default: str = "{}",
    ) -> None:
        super().__init__(model, settings)
        self._queue: deque[str | Exception] = deque(outputs)
        self._respond = respond
        self.default = default
        self.calls: list[list[ChatMessage]] = []

    def enqueue(self, *outputs: str | Exception) -> MockLLM:
        self._queue.extend(outputs)
        return self

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "scripted": len(self._queue)}

    async def _call_model(self, messages: list[ChatMessage], options: GenerateOptions) -> RawCompletion:
        self.calls.append(messages)
        if self._queue:
            out: str | Exception = self._queue.popleft()
        elif self._respond is not None:
            out = self._respond(messages)
        else:
            out = self.default
        if isinstance(out, Exception):
            raise out
        prompt_tokens = sum(len(m.content.split()) for m in messages)
        return RawCompletion(text=out, prompt_tokens=prompt_tokens, completion_tokens=len(out.split()))
