"""A real HTTP server on loopback whose answers are computed per request (query strings,
counters, failures on demand, binary bodies), for pull, download and API-double tests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass
class Answer:
    body: bytes | str = b""
    status: int = 200
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


#: (path, query parameters) -> Answer
Route = Callable[[str, dict[str, str]], Answer]


@dataclass
class RouteServer:
    url: str
    port: int
    routes: dict[str, Route | Answer]
    requests: list[tuple[str, dict[str, str], dict[str, str]]] = field(default_factory=list)
    """(path, query parameters, headers) of every request, in order."""

    def hits(self, path: str) -> int:
        return sum(1 for p, _, _ in self.requests if p == path)


@contextmanager
def route_server(routes: dict[str, Route | Answer]) -> Iterator[RouteServer]:
    """Serve `routes` (path without query -> Answer, or a function of path and query) at
    http://127.0.0.1:<port>; unknown paths are 404. Routes may be changed while it runs."""
    state = RouteServer(url="", port=0, routes=routes)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            parts = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
            state.requests.append((parts.path, query, dict(self.headers)))
            route = state.routes.get(parts.path)
            if route is None:
                answer = Answer("not found", 404, "text/plain")
            elif isinstance(route, Answer):
                answer = route
            else:
                answer = route(parts.path, query)
            data = answer.body.encode() if isinstance(answer.body, str) else answer.body
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            for key, value in answer.headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    state.url = f"http://127.0.0.1:{state.port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
