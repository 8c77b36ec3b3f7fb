"""A real HTTP server on loopback that speaks just enough of the OpenAI chat API to test
how backends handle success, 5xx, slowness and junk, without patching any SDK."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    content: str = "ok"
    delay_s: float = 0.0
    body: str | None = None  # raw body overrides `content`


@dataclass
class StubServer:
    url: str
    requests: list[dict] = field(default_factory=list)


def chat_body(content: str) -> str:
    return json.dumps(
        {
            "id": "stub",
            "object": "chat.completion",
            "created": 0,
            "model": "stub",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
        }
    )


@contextmanager
def openai_stub(script: Callable[[int, dict], Reply]) -> Iterator[StubServer]:
    """Serve `script(request_index, request_json)` at http://127.0.0.1:<port>/v1."""
    state = StubServer(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length", 0))
            payload = json.loads(self.rfile.read(length) or b"{}")
            index = len(state.requests)
            state.requests.append(payload)
            reply = script(index, payload)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            body = reply.body if reply.body is not None else (
                chat_body(reply.content) if reply.status == 200 else json.dumps({"error": {"message": f"stub {reply.status}"}})
            )
            data = body.encode()
            try:
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
