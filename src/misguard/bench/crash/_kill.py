"""Run a command and kill -9 it at a chosen moment, keeping what it printed and when."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Killed:
    """How one killed (or finished) run went."""

    killed: bool
    """SIGKILL was sent while the process still ran (False: it finished first)."""
    returncode: int
    seconds: float
    """Start to end of the process."""
    kill_at_s: float | None
    """When SIGKILL was sent, from the start (None: not sent)."""
    lines: list[tuple[float, str]] = field(default_factory=list)
    """Each line the process printed, with the time it was read."""

    def printed(self, text: str) -> bool:
        return any(text in line for _, line in self.lines)

    def output(self) -> str:
        return "\n".join(line for _, line in self.lines)


def python_command(*args: str) -> list[str]:
    """`misguard ARGS` as run by this interpreter (the same install)."""
    return [sys.executable, "-m", "misguard.cli.main", *args]


def run_and_kill(cmd: list[str], delay_s: float | None, *, after: str | None = None, env: dict[str, str] | None = None,
                 cwd: Path | None = None, timeout_s: float = 1800.0) -> Killed:
    """Run `cmd`; `delay_s` seconds after it started (after it printed a line containing
    `after`, when given) send it SIGKILL. `delay_s=None` lets it finish.

    Output is read unbuffered (PYTHONUNBUFFERED): a line counts as printed when a user
    watching the terminal would have seen it, which is what acknowledges a write.
    """
    environ = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=environ, cwd=cwd,
                            text=True, errors="replace")
    lines: list[tuple[float, str]] = []
    armed = threading.Event()
    armed_at = [0.0]

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            now = time.perf_counter() - started
            lines.append((now, line.rstrip("\n")))
            if after is not None and not armed.is_set() and after in line:
                armed_at[0] = now
                armed.set()
        armed.set()  # the process ended: nothing more to wait for

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    kill_at = None
    try:
        if delay_s is not None:
            if after is not None:
                armed.wait(timeout_s)
            base = armed_at[0] if after is not None else 0.0
            remaining = base + delay_s - (time.perf_counter() - started)
            try:
                proc.wait(timeout=max(0.0, remaining))
            except subprocess.TimeoutExpired:
                kill_at = time.perf_counter() - started
                os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    seconds = time.perf_counter() - started
    reader.join(timeout=30)
    killed = kill_at is not None and proc.returncode == -signal.SIGKILL
    return Killed(killed, proc.returncode, seconds, kill_at if killed else None, lines)
