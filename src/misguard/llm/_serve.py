"""A local GGUF model as an OpenAI-compatible endpoint (`misguard models serve`), so apps
built on any framework (LangGraph, the Agents SDK, AutoGen) can use the packs misguard runs.

    GET  /v1/models             the one model served
    POST /v1/chat/completions   llama.cpp's own chat completion: the model's chat template,
                                `response_format` (JSON schema -> decoding grammar), tools,
                                `stream` (server-sent events)
    GET  /healthz

A small FastAPI app (extra `service`) over the in-process engine of `LocalLLM`: the request
goes to llama.cpp unchanged, so what it honours is what llama.cpp honours; FastAPI only
adds validation, errors as OpenAI-style JSON, and the port handling of uvicorn.
"""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations.
import asyncio
import json
import socket
import threading
import time
from typing import Any

from ..errors import ConfigError, MissingExtraError


def check_port(host: str, port: int) -> None:
    """A clear error now if `port` is taken (instead of a server that dies at startup)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); "
                              "choose another --port or stop what is using it") from None


def create_model_app(llm: Any, *, model_id: str) -> Any:
    """The FastAPI app serving `llm` (a `LocalLLM`) as `model_id`."""
    try:
        from fastapi import FastAPI, Request
        from fastapi.responses import JSONResponse, StreamingResponse
    except ImportError:
        raise MissingExtraError("fastapi", "service", "misguard models serve") from None
    server = getattr(llm, "_server", None)
    if server is None:
        raise ConfigError(f"{llm.spec} is not a local model: serve a local/<pack> or local//path/model.gguf")
    created = int(time.time())
    app = FastAPI(title="misguard model server", version="1")

    def error(status: int, message: str, kind: str = "invalid_request_error") -> Any:
        return JSONResponse({"error": {"message": message, "type": kind}}, status_code=status)

    @app.get("/healthz")
    async def healthz() -> dict:
        return {"status": "ok", "model": model_id}

    @app.get("/v1/models")
    async def models() -> dict:
        return {"object": "list", "data": [{"id": model_id, "object": "model", "created": created, "owned_by": "misguard"}]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        try:
            body = await request.json()
        except ValueError:
            return error(400, "the body is not JSON")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
            return error(400, "'messages' must be a non-empty list of chat messages")
        # llm.prompt_cache decides, as for in-process calls, unless the client says otherwise
        body = {"cache_prompt": llm.settings.prompt_cache, **body, "model": model_id}
        if body.get("stream"):
            return StreamingResponse(_stream(server, body), media_type="text/event-stream")
        result = await asyncio.to_thread(server.handle_chat_completions, body)
        if isinstance(result, dict) and "error" in result:
            err = result["error"]
            message = err.get("message", str(err)) if isinstance(err, dict) else str(err)
            return error(int(err.get("code", 400)) if isinstance(err, dict) else 400, message)
        if isinstance(result, dict):
            result["model"] = model_id  # llama.cpp names the file; clients asked for the id
        return JSONResponse(result)

    return app


async def _stream(server: Any, body: dict) -> Any:
    """llama.cpp's chunks as server-sent events, produced on a thread."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    done = object()
    cancelled = threading.Event()

    def produce() -> None:
        def on_chunk(chunk: Any) -> bool:
            loop.call_soon_threadsafe(queue.put_nowait, chunk)
            return cancelled.is_set()

        try:
            result = server.handle_chat_completions(body, on_chunk)
            if isinstance(result, dict) and "error" in result:
                loop.call_soon_threadsafe(queue.put_nowait, result)
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, done)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        while True:
            chunk = await queue.get()
            if chunk is done:
                break
            yield f"data: {json.dumps(chunk)}\n\n"
        yield "data: [DONE]\n\n"
    finally:
        cancelled.set()  # the client went away: stop generating at the next token
