"""`misguard serve` as a child process on a free loopback port (the demo and the load test
use the real command, not an in-process app)."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import MisguardError, MissingExtraError


def process_tree(pid: int) -> list[int]:
    """`pid` and every process below it (the workers of `serve --workers`), from Linux /proc;
    just `pid` elsewhere."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo += [int(child) for child in task.read_text().split()]
            except (OSError, ValueError):
                continue
    return found


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (Linux /proc), in MB; NaN elsewhere."""
    total, seen = 0, False
    for member in process_tree(pid):
        try:
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total, seen = total + int(line.split()[1]), True
        except OSError:
            continue
    return total / 1024 if seen else float("nan")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds so far of a process and its live children (Linux /proc);
    NaN elsewhere."""
    total, seen = 0, False
    for member in process_tree(pid):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
            total, seen = total + int(fields[11]) + int(fields[12]), True
        except (OSError, ValueError, IndexError):
            continue
    return total / os.sysconf("SC_CLK_TCK") if seen else float("nan")


class ServiceProcess:
    """Start `misguard serve --db DB` on 127.0.0.1 with a fresh API key; stop it on exit.

    Args:
        db: the claim store directory.
        log_file: where the server's output goes.
        embedder: the store's embedder spec (the global `--embedder`).
        extra_args: more `misguard serve` options.
        admin: the key may also manage the store (`/v1/claims`).
    """

    def __init__(self, db: Path, log_file: Path, *, embedder: str = "e5", extra_args: list[str] | None = None,
                 admin: bool = False) -> None:
        self.key = secrets.token_urlsafe(24)
        self.admin = admin
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_file = log_file
        self.command = [
            sys.executable, "-m", "misguard.cli.main", "--embedder", embedder, "serve", "--db", str(db),
            "--host", "127.0.0.1", "--port", str(self.port), *(extra_args or []),
        ]
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout_s: float = 120.0) -> ServiceProcess:
        """Start the server and wait until /readyz answers 200."""
        try:
            import httpx
        except ImportError:
            raise MissingExtraError("httpx", "service", "starting the service") from None
        env = {k: v for k, v in os.environ.items() if not k.startswith("MISGUARD_")}
        env["MISGUARD_API_KEYS"] = self.key  # in the environment, not argv: `ps` would show it
        if self.admin:
            env["MISGUARD_ADMIN_KEYS"] = self.key
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("wb") as log:
            self.proc = subprocess.Popen(self.command, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise MisguardError(f"misguard serve exited with code {self.proc.returncode}; see {self.log_file}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        self.stop()
        raise MisguardError(f"misguard serve was not ready after {timeout_s:.0f} s; see {self.log_file}")

    def post(self, path: str, body: Any, timeout_s: float = 300.0) -> dict[str, Any]:
        """POST JSON with the key; raise on any status but 200."""
        import httpx

        response = httpx.post(f"{self.url}{path}", json=body, timeout=timeout_s,
                              headers={"Authorization": f"Bearer {self.key}"})
        if response.status_code != 200:
            raise MisguardError(f"{path} answered HTTP {response.status_code}: {response.text[:300]}")
        return response.json()

    def check_texts(self, texts: list[str]) -> list[dict[str, Any]]:
        return self.post("/v1/check", {"texts": texts})["results"]

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()  # with workers, their supervisor stops them first
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            for pid in reversed(process_tree(self.proc.pid)):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            self.proc.wait()

    def __enter__(self) -> ServiceProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
