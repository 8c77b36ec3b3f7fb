"""Processes and threads on this machine: the cores this process may use (the embedder's
threads), and worker processes (`misguard serve --workers`): how many, how many threads
each, tied to their parent."""

from __future__ import annotations

import os
import signal

#: The most workers `auto` starts: each holds its own model and index in memory.
MAX_AUTO_WORKERS = 4


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def auto_workers() -> int:
    """One worker per core, at most `MAX_AUTO_WORKERS`."""
    return min(usable_cores(), MAX_AUTO_WORKERS)


def threads_per_worker(workers: int) -> int:
    """Embedding threads of each of `workers` processes: the cores shared out evenly."""
    return max(1, usable_cores() // max(1, workers))


def parse_workers(value: str, auto: int) -> int:
    """A `--workers` value: a number of processes, or `auto` (then `auto`)."""
    from .errors import ConfigError

    if value.strip().lower() == "auto":
        return auto
    if not value.strip().isdigit() or int(value) < 1:
        raise ConfigError(f"--workers takes a number of processes (1 or more) or auto, not {value!r}")
    return int(value)


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when `parent` dies, also by SIGKILL (Linux
    `PR_SET_PDEATHSIG`), so a killed supervisor leaves no worker behind; exit at once if it
    is already gone. Elsewhere a no-op."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(1)
