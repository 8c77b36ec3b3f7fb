"""The OpenAI-compatible backend against a real HTTP server on loopback."""

from __future__ import annotations

import socket

import pytest

from misguard.config import LLMSettings
from misguard.errors import (
    LLMConnectionError,
    LLMOutputError,
    LLMRequestError,
    LLMServerError,
    LLMTimeoutError,
)
from misguard.llm import get_llm
from tests.helpers.http_stub import Reply, openai_stub

pytest.importorskip("openai", reason="needs the [openai] extra")


def settings(url: str, **kw) -> LLMSettings:
    base = {"base_url": url, "retries": 2, "backoff_s": 0.01, "timeout_s": 5}
    return LLMSettings(**{**base, **kw})


def test_works_without_any_key_on_a_local_url(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with openai_stub(lambda i, req: Reply(content="hi")) as server:
        llm = get_llm("openai/stub-model", settings(server.url))
        out = llm.generate_sync("hello", temperature=0.3, seed=7, max_tokens=5)
    assert out.text == "hi" and (out.prompt_tokens, out.completion_tokens) == (7, 3)
    sent = server.requests[0]
    assert (sent["model"], sent["temperature"], sent["seed"], sent["max_tokens"]) == ("stub-model", 0.3, 7, 5)


def test_500_is_retried_then_reported():
    with openai_stub(lambda i, req: Reply(status=500)) as server:
        llm = get_llm("openai/m", settings(server.url))
        with pytest.raises(LLMServerError, match=r"server error 500.*after 3 attempts"):
            llm.generate_sync("x")
    assert len(server.requests) == 3


def test_500_then_success_recovers():
    with openai_stub(lambda i, req: Reply(status=503) if i == 0 else Reply(content="ok")) as server:
        assert get_llm("openai/m", settings(server.url)).generate_sync("x").attempts == 2


def test_400_is_not_retried():
    with openai_stub(lambda i, req: Reply(status=400)) as server:
        with pytest.raises(LLMRequestError, match="rejected 400"):
            get_llm("openai/m", settings(server.url)).generate_sync("x")
    assert len(server.requests) == 1


def test_timeout_is_retried_then_reported():
    with openai_stub(lambda i, req: Reply(delay_s=1.0)) as server:
        llm = get_llm("openai/m", settings(server.url, timeout_s=0.2, retries=1))
        with pytest.raises(LLMTimeoutError, match="after 2 attempts"):
            llm.generate_sync("x")


def test_unreachable_endpoint_is_a_connection_error():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = get_llm("openai/m", settings(f"http://127.0.0.1:{port}/v1", retries=1))
    with pytest.raises(LLMConnectionError, match="cannot connect.*after 2 attempts"):
        llm.generate_sync("x")


def test_unparsable_json_is_an_output_error():
    with openai_stub(lambda i, req: Reply(content="I refuse to answer in JSON")) as server:
        llm = get_llm("openai/m", settings(server.url))
        with pytest.raises(LLMOutputError, match="Expected a JSON object"):
            llm.generate_json_sync("give json")
    assert server.requests[0]["response_format"] == {"type": "json_object"}
    assert len(server.requests) == 2  # one re-ask


def test_garbage_body_is_a_clear_error():
    with openai_stub(lambda i, req: Reply(body="<html>proxy error</html>")) as server:
        with pytest.raises((LLMServerError, LLMOutputError)):
            get_llm("openai/m", settings(server.url, retries=0)).generate_sync("x")
