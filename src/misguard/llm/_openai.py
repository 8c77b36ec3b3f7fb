"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp server, LM Studio)."""

from __future__ import annotations

import os
from typing import Any

from ..config import LLMSettings
from ..errors import (
    LLMConnectionError,
    LLMRequestError,
    LLMServerError,
    LLMTimeoutError,
    MissingExtraError,
)
from ..types import ChatMessage
from ._base import LLM, GenerateOptions, RawCompletion, chat_request

# Local servers ignore the key, but the SDK insists on one being set.
PLACEHOLDER_KEY = "not-needed"


class OpenAICompatibleLLM(LLM):
    backend = "openai"

    def __init__(self, model: str, settings: LLMSettings | None = None) -> None:
        super().__init__(model, settings)
        try:
            import openai
        except ImportError:
            raise MissingExtraError("openai", "openai", "OpenAI-compatible endpoints") from None
        self._openai = openai
        s = self.settings
        key = s.api_key.get_secret_value() if s.api_key else os.environ.get("OPENAI_API_KEY")
        # Retries and timeouts are ours (LLM.generate), so the SDK's are switched off.
        self._client = openai.AsyncOpenAI(
            base_url=s.base_url,
            api_key=key or PLACEHOLDER_KEY,
            timeout=s.timeout_s,
            max_retries=0,
        )

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "base_url": str(self._client.base_url)}

    async def aclose(self) -> None:
        await self._client.close()

    async def _call_model(self, messages: list[ChatMessage], options: GenerateOptions) -> RawCompletion:
        openai = self._openai
        kwargs = {"model": self.model, **chat_request(messages, options)}
        where = f"{self.spec} at {self._client.base_url}"
        try:
            response = await self._client.chat.completions.create(**kwargs)
        except openai.APITimeoutError:
            raise LLMTimeoutError(f"{where}: request timed out") from None
        except openai.APIConnectionError as exc:
            raise LLMConnectionError(
                f"{where}: cannot connect ({exc.__cause__ or exc}); is the server running "
                "and llm.base_url right?"
            ) from None
        except openai.RateLimitError as exc:
            raise LLMServerError(f"{where}: rate limited (429): {_message(exc)}") from None
        except openai.APIStatusError as exc:
            if exc.status_code >= 500:
                raise LLMServerError(f"{where}: server error {exc.status_code}: {_message(exc)}") from None
            hint = " (check llm.api_key)" if exc.status_code in (401, 403) else ""
            raise LLMRequestError(
                f"{where}: request rejected {exc.status_code}{hint}: {_message(exc)}"
            ) from None
        except openai.APIError as exc:
            raise LLMServerError(f"{where}: {_message(exc)}") from None
        except ValueError as exc:  # the body was not the JSON the SDK expected
            raise LLMServerError(f"{where}: malformed response ({exc})") from None
        if not getattr(response, "choices", None):
            raise LLMServerError(f"{where}: malformed response with no choices: {str(response)[:200]!r}")
        text = response.choices[0].message.content or ""
        usage = response.usage
        return RawCompletion(
            text=text,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
        )


def _message(exc: Exception) -> str:
    msg = getattr(exc, "message", None) or str(exc)
    return msg if len(msg) < 300 else msg[:300] + "..."
