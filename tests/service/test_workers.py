"""`misguard serve --workers N`: the settings each worker gets, the checks made before any
starts, N real processes on one port whose metrics add up, and a supervisor that does not
leave a worker behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from misguard.cli.main import app
from misguard.service import ServiceSettings
from misguard.service._process import cpu_s, process_tree, rss_mb
from misguard.service._workers import export_settings, split_limit, worker_settings

runner = CliRunner()
LINUX_PROC = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the process tree from Linux /proc")


def test_limits_counted_in_memory_are_split_between_workers():
    assert split_limit("20/second;1200/minute", 2) == "10/1 second;600/1 minute"
    assert split_limit("20/second;1200/minute", 3) == "7/1 second;400/1 minute"  # rounded up
    assert split_limit("1/minute", 4) == "1/1 minute"  # never 0
    settings = ServiceSettings(db="db", api_keys=[SecretStr("k")], rate_limit="100/minute", auth_failure_limit="10/minute")
    split = worker_settings(settings, 2)
    assert (split.rate_limit, split.auth_failure_limit, split.admin_rate_limit) == ("50/1 minute", "5/1 minute", "30/1 minute")
    # one worker, or counters shared in redis: the limits as given
    assert worker_settings(settings, 1) == settings
    shared = settings.model_copy(update={"rate_limit_storage": "redis://localhost:6379"})
    assert worker_settings(shared, 4) == shared


def test_a_worker_reads_back_every_setting_and_key():
    settings = ServiceSettings(db=Path("db"), api_keys=[SecretStr("check-1"), SecretStr("check-2")],
                               admin_keys=[SecretStr("admin-1")], cors_origins=["https://news.example"],
                               threshold=0.6, max_batch=16)
    again = ServiceSettings.model_validate(json.loads(export_settings(settings)))
    assert again == settings
    assert [k.get_secret_value() for k in again.api_keys] == ["check-1", "check-2"]
    assert again.admin_keys[0].get_secret_value() == "admin-1"


def test_serve_refuses_a_worker_count_it_cannot_use(db):
    for bad in ("0", "two", "-1"):
        result = runner.invoke(app, ["--embedder", "hashing/256", "serve", "--db", str(db), "--api-key", "k",
                                     "--threshold", "0.6", "--workers", bad])
        assert result.exit_code == 2 and "--workers" in result.output


def test_workers_refuse_bad_settings_before_any_starts(db):
    """The workers' own checks run once in the parent: a clear error, no process started."""
    base = ["--embedder", "hashing/256", "serve", "--db", str(db), "--api-key", "k", "--workers", "2"]
    result = runner.invoke(app, base)
    assert result.exit_code == 2 and "--decision" in result.output
    result = runner.invoke(app, [*base, "--threshold", "0.6", "--port", "0"])
    assert result.exit_code == 2 and "--workers 1" in result.output


@LINUX_PROC
def test_memory_and_cpu_of_a_process_count_its_children():
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    parent = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 30
        while len(process_tree(parent.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        tree = process_tree(parent.pid)
        assert len(tree) == 2 and tree[0] == parent.pid
        alone = int(next(line.split()[1] for line in Path(f"/proc/{parent.pid}/status").read_text().splitlines()
                         if line.startswith("VmRSS:"))) / 1024
        assert rss_mb(parent.pid) > alone + 1  # the child's interpreter counts too
        assert cpu_s(parent.pid) >= 0
    finally:
        for pid in reversed(process_tree(parent.pid)):
            subprocess.run(["kill", "-9", str(pid)], check=False)
        parent.wait()


def _workers_of(pid: int) -> list[int]:
    """The uvicorn workers under a supervisor (not multiprocessing's resource tracker)."""
    return [p for p in process_tree(pid)[1:] if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]


@pytest.mark.slow
@LINUX_PROC
def test_two_workers_answer_on_one_port_and_their_metrics_add_up(db, tmp_path):
    import httpx

    from misguard.service import ServiceProcess

    args = ["--threshold", "0.6", "--workers", "2", "--rate-limit", "100000/minute"]
    with ServiceProcess(db, tmp_path / "server.log", embedder="hashing/256", extra_args=args) as server:
        assert len(_workers_of(server.pid)) == 2
        texts = [f"Goldfish can only remember things for three seconds ({i})" for i in range(40)]
        with ThreadPoolExecutor(8) as pool:  # 8 connections: the kernel spreads them over both workers
            results = list(pool.map(lambda t: server.check_texts([t])[0], texts))
        assert all(r["flagged"] and r["matched_claim_id"] == "S03" for r in results)
        metrics = httpx.get(f"{server.url}/metrics", timeout=10).text
        checked = sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                      if line.startswith("misguard_texts_checked_total{"))
        # each worker counts its own texts; /metrics, answered by either, shows all 40
        assert checked == len(texts)
        assert "misguard_store_claims 32.0" in metrics
    assert server.proc is not None and server.proc.returncode is not None
    assert server.key not in (tmp_path / "server.log").read_text()


@pytest.fixture
def two_workers(db, tmp_path):
    """A real `misguard serve --workers 2` and its two worker pids."""
    from misguard.service import ServiceProcess

    args = ["--threshold", "0.6", "--workers", "2"]
    server = ServiceProcess(db, tmp_path / "server.log", embedder="hashing/256", extra_args=args).start()
    try:
        workers = _workers_of(server.pid)
        assert len(workers) == 2
        yield server, workers
    finally:
        server.stop()


def _gone(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return b"zombie" in status.read_bytes().lower()
    except OSError:
        return True


@pytest.mark.slow
@LINUX_PROC
def test_when_a_worker_dies_the_service_stops_instead_of_running_short(two_workers, tmp_path):
    server, workers = two_workers
    os.kill(workers[0], signal.SIGKILL)
    assert server.proc is not None
    server.proc.wait(timeout=60)
    assert server.proc.returncode not in (0, None)
    assert all(_gone(pid) for pid in workers)
    assert "exited with code" in (tmp_path / "server.log").read_text()


@pytest.mark.slow
@LINUX_PROC
def test_a_supervisor_killed_by_sigkill_takes_its_workers_with_it(two_workers):
    """As one process would die: no worker is left serving (or holding the port) alone."""
    server, workers = two_workers
    os.kill(server.pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while not all(_gone(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(pid) for pid in workers)
