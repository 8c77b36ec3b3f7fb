"""A real HTTP server on loopback serving fixed pages (and redirects), for the page
fetcher's tests and the browser extension's test page."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Page:
    body: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/html; charset=utf-8"})
    delay_s: float = 0.0
    """Seconds the server waits before it answers (a slow site)."""


@dataclass
class PageServer:
    url: str
    port: int
    pages: dict[str, Page]
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)


@contextmanager
def page_server(pages: dict[str, Page]) -> Iterator[PageServer]:
    """Serve `pages` (path -> Page) at http://127.0.0.1:<port>; unknown paths are 404."""
    state = PageServer(url="", port=0, pages=pages)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            state.requests.append((self.path, dict(self.headers)))
            page = state.pages.get(self.path, Page("not found", 404))
            if page.delay_s:
                time.sleep(page.delay_s)
            data = page.body.encode()
            self.send_response(page.status)
            for key, value in page.headers.items():
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
