"""`misguard serve --workers N`: several service processes on one port.

Why processes: a check is the embedder's work and then the guard's own (ranking, word
overlaps, the decision) and the HTTP handling around it, which is Python on one core while
the embedder's other threads wait. One process per core, each embedding on its own core,
keeps every core busy (docs/experiments/2026-11-27-service-workers.md).

Why one listening socket per worker (`SO_REUSEPORT`): on one shared socket, the worker that
wakes first accepts every connection waiting, and clients keep their connections, so one
worker ended up serving nearly all of them on one core while the other idled. With a socket
each, the kernel spreads new connections over the workers by a hash of the client's address
and port, from the first connection on (a worker still starting keeps its share queued).

Each worker is a whole service (its own guard, store handle and verdict cache; replicas of
one store stay consistent, see `_runner`). They share the metrics through prometheus-client's
multiprocess mode; each gets the settings as an argument of its process (never argv).
Rate limits with `memory://` counters are per process: each worker counts its own requests
against the limit divided by the workers (rounded up), so the whole service lets through at
most the limit, and one connection's client, served by one worker, gets that worker's
share; `redis://` storage shares exact counters instead.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import sys
import time
from typing import Any

from pydantic import SecretStr

from .. import _processes
from .._processes import threads_per_worker
from ..errors import ConfigError, MisguardError
from ._settings import ServiceSettings

__all__ = ["auto_workers", "serve_workers", "split_limit", "threads_per_worker", "worker_settings"]

def auto_workers() -> int:
    """One worker per core, at most 4 (`misguard._processes`), on Linux, whose kernel spreads
    connections over a `SO_REUSEPORT` group; one elsewhere (the BSDs' and macOS's
    `SO_REUSEPORT` is not known to spread them, and Windows has none)."""
    return _processes.auto_workers() if sys.platform.startswith("linux") else 1


def split_limit(limit: str, workers: int) -> str:
    """A `limits` expression with every count divided among `workers` (rounded up, at
    least 1), e.g. '20/second;1200/minute' over 2 -> '10/1 second;600/1 minute'."""
    from limits import parse_many

    return ";".join(f"{max(1, math.ceil(item.amount / workers))}/{item.multiples} {item.GRANULARITY.name}"
                    for item in parse_many(limit))


def worker_settings(settings: ServiceSettings, workers: int) -> ServiceSettings:
    """The settings each of `workers` processes runs with."""
    if workers <= 1 or not settings.rate_limit_storage.startswith("memory://"):
        return settings
    return settings.model_copy(update={
        "rate_limit": split_limit(settings.rate_limit, workers),
        "admin_rate_limit": split_limit(settings.admin_rate_limit, workers),
        "auth_failure_limit": split_limit(settings.auth_failure_limit, workers),
    })


def export_settings(settings: ServiceSettings) -> str:
    """The settings as JSON a worker reads back, secrets in clear (they go to the workers
    through a pipe)."""
    def reveal(value: Any) -> Any:
        if isinstance(value, SecretStr):
            return value.get_secret_value()
        if isinstance(value, dict):
            return {k: reveal(v) for k, v in value.items()}
        if isinstance(value, list):
            return [reveal(v) for v in value]
        return value

    return json.dumps(reveal(settings.model_dump(mode="python", round_trip=True)), default=str)


def _app(raw_settings: str) -> Any:
    from ._app import create_app

    return create_app(ServiceSettings.model_validate(json.loads(raw_settings)))


def listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket on (host, port) that other workers' sockets may share.

    Created with the TCP protocol number: asyncio sets TCP_NODELAY only on connections
    accepted from a socket marked TCP, and without it every keep-alive request after the
    first waited about 40 ms for a delayed ACK (uvicorn's own shared socket has protocol 0)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise MisguardError(f"cannot listen on {host}:{port}: {exc.strerror}; pick another --port or stop what uses it") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _check_settings(spawn: Any, raw_settings: str) -> None:
    """Every check a worker makes of its settings (keys, store, decision, embedder), made once
    in a short-lived process: a bad setting is one clear error before any worker starts, and
    the supervisor does not keep a model in memory it never uses."""
    receive, send = spawn.Pipe(duplex=False)
    checker = spawn.Process(target=_settings_error, args=(raw_settings, send), name="misguard-settings-check")
    checker.start()
    send.close()
    try:
        error = receive.recv()
    except EOFError:
        checker.join()
        error = f"the check of the service's settings exited with code {checker.exitcode}"
    checker.join()
    if error is not None:
        raise ConfigError(error)


def _settings_error(raw_settings: str, send: Any) -> None:
    """In the checking process: None when a worker's app can be built, else the error."""
    try:
        _app(raw_settings)
    except MisguardError as exc:
        send.send(str(exc))
    else:
        send.send(None)


def _run_worker(sock: socket.socket, raw_settings: str, threads: int, metrics_dir: str, options: dict[str, Any],
                supervisor: int) -> None:
    """One worker process: uvicorn on its own socket (it handles SIGTERM and SIGINT)."""
    _processes.die_with_parent(supervisor)  # a killed supervisor takes its workers with it
    # Set before the embedder and prometheus-client are first imported in this process.
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))  # an explicit OMP_NUM_THREADS wins
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    import uvicorn

    uvicorn.Server(uvicorn.Config(_app(raw_settings), **options)).run(sockets=[sock])


def serve_workers(settings: ServiceSettings, workers: int, host: str, port: int, **uvicorn_options: Any) -> None:
    """Run `workers` service processes on (host, port) until stopped; if one exits, the
    others are stopped too and the error is raised (a process manager restarts the service)."""
    import multiprocessing
    import tempfile

    if not hasattr(socket, "SO_REUSEPORT"):
        raise ConfigError("--workers above 1 needs SO_REUSEPORT, which this system lacks; use --workers 1")
    if port == 0:
        raise ConfigError("--port 0 (any free port) works with --workers 1 only: the workers must share one port")
    # Handed to the workers as arguments (through a pipe), never in argv or the environment.
    raw_settings = export_settings(worker_settings(settings, workers))
    spawn = multiprocessing.get_context("spawn")
    _check_settings(spawn, raw_settings)
    sockets = [listener(host, port) for _ in range(workers)]  # all bound before any worker runs
    with tempfile.TemporaryDirectory(prefix="misguard-metrics-") as metrics_dir:
        args = (raw_settings, threads_per_worker(workers), metrics_dir, uvicorn_options, os.getpid())
        processes = [spawn.Process(target=_run_worker, args=(sock, *args), name=f"misguard-worker-{i}")
                     for i, sock in enumerate(sockets)]
        stopping = False

        def stop(signum: int, _frame: object) -> None:
            nonlocal stopping
            stopping = True

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        failed = []
        try:
            for process in processes:
                process.start()
            for sock in sockets:
                sock.close()  # the workers hold them now
            while not stopping and all(p.is_alive() for p in processes):
                time.sleep(0.2)
            failed = [p for p in processes if not p.is_alive() and p.exitcode not in (0, None)]
        finally:
            for process in processes:
                if process.is_alive():
                    process.terminate()
            for process in processes:
                process.join(timeout=20)
                if process.is_alive():
                    process.kill()
                    process.join()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if failed and not stopping:
            raise MisguardError(f"service worker {failed[0].name} exited with code {failed[0].exitcode}; "
                                "the other workers were stopped (see the log above)")
