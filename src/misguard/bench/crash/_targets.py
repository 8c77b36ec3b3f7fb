"""What the crash benchmark kills, one class per target, registered by name.

Each target prepares its fixtures once (and times an uninterrupted run, which sets the
window the kill times are drawn from), then runs trials: start the real command, send it
SIGKILL at a uniform random moment of that window, and check what is left:

    opened       the store opens (a rebuild of its index on open is reported)
    verified     `verify` passes (claims: `verify_store`, memory: `MemoryStore.verify`)
    outcome      the old state, the new state, or (claims add, several files) how many of
                 the files are in; anything else is `mixed`
    lost         writes acknowledged (the command printed success, the API answered 2xx)
                 that the store no longer holds, in this trial or any earlier one
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import threading
import time
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ...config import Settings
from ...registry import Registry
from ._kill import Killed, python_command, run_and_kill

Log = Callable[[str], None]


class CrashTarget(ABC):
    """One kind of process to kill. `workdir` is the target's own directory (wiped)."""

    name = ""

    def __init__(self, workdir: Path, settings: Settings, seed: int) -> None:
        self.workdir = workdir
        self.settings = settings
        self.seed = seed
        self.window = (0.0, 1.0)

    @abstractmethod
    def prepare(self, log: Log) -> dict[str, Any]:
        """Build the fixtures and time an uninterrupted run; returns what the run log keeps."""

    @abstractmethod
    def trial(self, i: int, rng: np.random.Generator) -> dict[str, Any]:
        """Kill the command once and check the store."""

    def delay(self, rng: np.random.Generator) -> float:
        return float(rng.uniform(*self.window))

    def fresh_workdir(self) -> None:
        if self.workdir.exists():
            shutil.rmtree(self.workdir)
        self.workdir.mkdir(parents=True)


CRASH_TARGETS: Registry[CrashTarget] = Registry("crash target")


def _killed_fields(k: Killed) -> dict[str, Any]:
    return {"killed": k.killed, "kill_at_s": k.kill_at_s, "seconds": round(k.seconds, 3), "returncode": k.returncode}


@CRASH_TARGETS.register("claims-add", what="misguard claims add of three files into one store")
class ClaimsAddTarget(CrashTarget):
    """`misguard claims add --db store f0 f1 f2`: each file is one ingest (all or nothing)
    and prints its line when committed. The store grows over the trials; every claim a
    trial left in it must still be there at the end of every later trial."""

    name = "claims-add"
    files = 3
    per_file = 300

    def prepare(self, log: Log) -> dict[str, Any]:
        from ...claims import ClaimStore

        self.fresh_workdir()
        self.db = self.workdir / "store"
        calib = self._write_files("calibration")
        run = run_and_kill(self._command(calib), None, cwd=self.workdir)
        if run.returncode != 0:
            raise RuntimeError(f"claims add failed: {run.output()[-2000:]}")
        first = next(t for t, line in run.lines if "added" in line)
        # From late start-up (imports done, the first file being parsed and embedded) to the
        # end: before that no store is touched.
        self.window = (0.5 * first, 1.05 * run.seconds)
        with ClaimStore.open(self.db, self._embedder()) as store:
            self.expected = {c.id for c in store.iter_claims()}
        log(f"claims-add: an uninterrupted add of {self.files} x {self.per_file} claims took {run.seconds:.2f} s "
            f"(first file committed at {first:.2f} s); kills drawn from {self.window[0]:.2f}..{self.window[1]:.2f} s")
        return {"calibration_s": run.seconds, "first_commit_s": first, "window_s": list(self.window),
                "files": self.files, "claims_per_file": self.per_file, "embedder": self.settings.embed.model}

    def _embedder(self):
        from ...embed import get_embedder

        return get_embedder(None, self.settings.embed)

    def _command(self, files: list[str]) -> list[str]:
        return python_command("--embedder", self.settings.embed.model, "claims", "add", "--db", "store", *files)

    def _write_files(self, tag: str) -> list[str]:
        rng = np.random.default_rng([self.seed, zlib.crc32(tag.encode())])
        words = ("river", "vaccine", "senator", "harbour", "comet", "wheat", "bridge", "tariff", "glacier", "virus",
                 "election", "satellite", "pension", "forest", "court", "factory", "ocean", "school", "rocket", "bank")
        names = []
        for j in range(self.files):
            name = f"{tag}-{j}.jsonl"
            with (self.workdir / name).open("w", encoding="utf-8") as fh:
                for n in range(self.per_file):
                    text = " ".join(rng.choice(words, 8)) + f" ({tag} {j} {n})"
                    fh.write(json.dumps({"id": f"{tag}-{j}-{n}", "text": f"Claim that the {text}", "verdict": "false"}) + "\n")
            names.append(name)
        return names

    def trial(self, i: int, rng: np.random.Generator) -> dict[str, Any]:
        from ...claims import ClaimStore, verify_store
        from ...claims._storage import index_files

        tag = f"trial{i}"
        files = self._write_files(tag)
        k = run_and_kill(self._command(files), self.delay(rng), cwd=self.workdir)
        acknowledged = [j for j, f in enumerate(files) if k.printed(f"{f}: {self.per_file} added")]
        # What an unfinished write left (the next write sweeps it), before anything opens the store.
        leftovers = len(list(self.db.glob("*.tmp"))) + max(0, len(index_files(self.db)) - 1)
        result: dict[str, Any] = {**_killed_fields(k), "acknowledged": len(acknowledged), "leftovers": leftovers}
        rebuilt = _Captured("misguard.claims")
        try:
            with rebuilt, ClaimStore.open(self.db, self._embedder()) as store:
                ids = {c.id for c in store.iter_claims()}
        except Exception as exc:  # noqa: BLE001 - reported as a corrupted store
            return {**result, "opened": False, "verified": False, "error": f"{type(exc).__name__}: {exc}",
                    "mixed": False, "lost": len(self.expected), "outcome": "unreadable"}
        report = verify_store(self.db, self._embedder(), sample=16)
        present = [sum(f"{tag}-{j}-{n}" in ids for n in range(self.per_file)) for j in range(self.files)]
        complete = [j for j, p in enumerate(present) if p == self.per_file]
        mixed = any(0 < p < self.per_file for p in present) or complete != list(range(len(complete)))
        lost = len(self.expected - ids) + sum(present[j] != self.per_file for j in acknowledged)
        phantoms = len(ids - self.expected - {f"{tag}-{j}-{n}" for j in range(self.files) for n in range(self.per_file)})
        self.expected |= {f"{tag}-{j}-{n}" for j in complete for n in range(self.per_file)}
        return {**result, "opened": True, "rebuilt_on_open": rebuilt.seen, "verified": report.ok,
                "problems": [c.name for c in report.problems], "outcome": f"{len(complete)} of {self.files} files",
                "mixed": mixed or phantoms > 0, "lost": lost, "claims": len(ids)}


@CRASH_TARGETS.register("memory-repair", what="MemoryGuard repair plan applied through store.batch()")
class MemoryRepairTarget(CrashTarget):
    """A memory guard repair of a poisoned SQLite memory store (several hundred audited
    actions in one `store.batch()`), killed while it applies the plan; every trial starts
    from a copy of the same poisoned store, so the old and the new state are known."""

    name = "memory-repair"

    def prepare(self, log: Log) -> dict[str, Any]:
        from ._memory import fingerprint, write_poisoned_memory

        self.fresh_workdir()
        self.template = self.workdir / "poisoned.db"
        counts = write_poisoned_memory(self.template, seed=self.seed)
        self.old = fingerprint(self.template)
        calib = self._copy("calibration.db")
        run = run_and_kill(self._command(calib), None)
        if run.returncode != 0:
            raise RuntimeError(f"the repair failed: {run.output()[-2000:]}")
        planned = next(t for t, line in run.lines if line.startswith("planned"))
        done = next(t for t, line in run.lines if line.startswith("repaired:"))
        self.new = fingerprint(calib)
        # From the plan being ready (printed just before `store.batch()` opens) to a little
        # past the commit: the part of the repair that writes.
        self.window = (0.0, 1.3 * (done - planned))
        log(f"memory-repair: {counts}; the repair applied its plan in {done - planned:.2f} s "
            f"({run.lines[-1][1]}); kills drawn from 0..{self.window[1]:.2f} s after 'planned'")
        return {"memory": counts, "apply_s": done - planned, "window_s": list(self.window),
                "old": self.old, "new": self.new}

    def _copy(self, name: str) -> Path:
        target = self.workdir / name
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{target}{suffix}").unlink(missing_ok=True)
        shutil.copy(self.template, target)
        return target

    @staticmethod
    def _command(db: Path) -> list[str]:
        import sys

        return [sys.executable, "-m", "misguard.bench.crash._memory", str(db)]

    def trial(self, i: int, rng: np.random.Generator) -> dict[str, Any]:
        from ...memory import open_store
        from ._memory import fingerprint

        db = self._copy("trial.db")
        k = run_and_kill(self._command(db), self.delay(rng), after="planned")
        acknowledged = k.printed("repaired:")
        result: dict[str, Any] = {**_killed_fields(k), "acknowledged": int(acknowledged)}
        try:
            with open_store(db) as store:
                report = store.verify()
        except Exception as exc:  # noqa: BLE001 - reported as a corrupted store
            return {**result, "opened": False, "verified": False, "error": f"{type(exc).__name__}: {exc}",
                    "mixed": False, "lost": int(acknowledged), "outcome": "unreadable"}
        state = fingerprint(db)
        outcome = "old" if state == self.old else "new" if state == self.new else "mixed"
        return {**result, "opened": True, "verified": report.ok, "problems": [c.name for c in report.problems],
                "outcome": outcome, "mixed": outcome == "mixed", "lost": int(acknowledged and outcome != "new")}


@CRASH_TARGETS.register("bench-memory", what="misguard bench memory (tiny), killed, then resumed")
class BenchMemoryTarget(CrashTarget):
    """`misguard bench memory` on a tiny configuration, killed, then run again to finish:
    the resumed run must skip every seed the killed one reported done, hold one event per
    seed, and end with the summary of an uninterrupted run."""

    name = "bench-memory"
    seeds = 2
    args = ("--records", "1000", "--scenarios", "5", "--encoder-steps", "10", "--eval-steps", "3",
            "--methods", "credibility")

    def _command(self, output: Path) -> list[str]:
        return python_command("--embedder", self.settings.embed.model, "bench", "memory", "--seeds", str(self.seeds),
                              *self.args, "--output", str(output))

    def prepare(self, log: Log) -> dict[str, Any]:
        self.fresh_workdir()
        run = run_and_kill(self._command(self.workdir / "reference"), None)
        if run.returncode != 0:
            raise RuntimeError(f"bench memory failed: {run.output()[-2000:]}")
        self.reference = _comparable(self.workdir / "reference" / "summary.json")
        self.window = (0.0, run.seconds)
        log(f"bench-memory: an uninterrupted run took {run.seconds:.1f} s; kills drawn from 0..{run.seconds:.1f} s")
        return {"reference_s": run.seconds, "window_s": list(self.window), "seeds": self.seeds, "args": list(self.args)}

    def trial(self, i: int, rng: np.random.Generator) -> dict[str, Any]:
        from ...runlog import read_runlog

        output = self.workdir / f"trial{i}"
        k = run_and_kill(self._command(output), self.delay(rng))
        acknowledged = {line.split(":")[0] for _, line in k.lines if line.startswith("seed ") and ": AUC " in line}
        result: dict[str, Any] = {**_killed_fields(k), "acknowledged": len(acknowledged)}
        resumed = run_and_kill(self._command(output), None)
        skipped = {line.split(":")[0] for _, line in resumed.lines if "done in an earlier run, skipped" in line}
        try:
            _, events = read_runlog(output / "runlog.jsonl")
            keys = [e.key for e in events if e.type == "seed"]
            summary = _comparable(output / "summary.json")
        except Exception as exc:  # noqa: BLE001 - reported as a corrupted run
            return {**result, "opened": False, "verified": False, "error": f"{type(exc).__name__}: {exc}",
                    "mixed": False, "lost": len(acknowledged), "outcome": "unreadable"}
        problems = []
        if resumed.returncode != 0:
            problems.append(f"the resumed run failed ({resumed.returncode})")
        if len(keys) != len(set(keys)) or len(keys) != self.seeds:
            problems.append(f"seed events {keys}")
        if summary != self.reference:
            problems.append("the summary differs from an uninterrupted run's")
        shutil.rmtree(output, ignore_errors=True)
        return {**result, "opened": True, "verified": not problems, "problems": problems,
                "outcome": f"{len(acknowledged)} of {self.seeds} seeds done before the kill",
                "mixed": False, "lost": len(acknowledged - skipped)}


@CRASH_TARGETS.register("serve-ingest", what="misguard serve killed while clients ingest through POST /v1/claims")
class ServeIngestTarget(CrashTarget):
    """`misguard serve` on the store while a client ingests batches of claims through
    `POST /v1/claims`, one request after the other; the server is killed at a random moment.
    A batch answered 2xx is acknowledged; each batch is all or nothing."""

    name = "serve-ingest"
    per_request = 5

    def prepare(self, log: Log) -> dict[str, Any]:
        from importlib import resources

        from ...claims import ClaimStore, read_claims

        self.fresh_workdir()
        self.db = self.workdir / "store"
        sample = resources.files("misguard.claims").joinpath("data", "sample_claims.jsonl")
        with ClaimStore.open(self.db, self._embedder(), create=True) as store, resources.as_file(sample) as path:
            store.add(read_claims(path))
            self.expected = {c.id for c in store.iter_claims()}
        server = self._server("calibration")
        server.start()
        try:
            started = time.perf_counter()
            posted = self._post_until(server, "calibration", threading.Event(), limit=20)
            per_post = (time.perf_counter() - started) / max(1, len(posted))
        finally:
            server.stop()
        with ClaimStore.open(self.db, self._embedder()) as store:
            self.expected = {c.id for c in store.iter_claims()}
        # Long enough for tens of ingests: the kill lands before, between or inside them.
        self.window = (0.0, 40 * per_post)
        log(f"serve-ingest: one POST /v1/claims of {self.per_request} claims takes {per_post * 1000:.0f} ms; "
            f"kills drawn from 0..{self.window[1]:.2f} s after the server is ready")
        return {"post_s": per_post, "window_s": list(self.window), "claims_per_request": self.per_request}

    def _embedder(self):
        from ...embed import get_embedder

        return get_embedder(None, self.settings.embed)

    def _server(self, tag: str):
        from ...service import ServiceProcess

        return ServiceProcess(self.db, self.workdir / f"{tag}.log", embedder=self.settings.embed.model, admin=True,
                              extra_args=["--threshold", "0.6", "--rate-limit", "1000000/minute"])

    def _batch(self, tag: str, n: int) -> list[dict[str, Any]]:
        return [{"@type": "ClaimReview", "claimReviewed": f"Claim {tag} {n} {k}: the {tag} harbour moved {n * 7 + k} miles",
                 "url": f"https://example.org/{tag}/{n}/{k}", "reviewRating": {"alternateName": "False"}}
                for k in range(self.per_request)]

    def _post_until(self, server: Any, tag: str, stop: threading.Event, limit: int = 10_000) -> list[int]:
        """POST batches one after the other until the server stops answering; the batches
        answered 2xx."""
        import httpx

        acknowledged = []
        with httpx.Client(timeout=60, headers={"Authorization": f"Bearer {server.key}"}) as client:
            for n in range(limit):
                if stop.is_set():
                    break
                try:
                    response = client.post(f"{server.url}/v1/claims", json=self._batch(tag, n))
                except httpx.HTTPError:
                    break
                if 200 <= response.status_code < 300:
                    acknowledged.append(n)
        return acknowledged

    def trial(self, i: int, rng: np.random.Generator) -> dict[str, Any]:
        from ...claims import ClaimStore, verify_store

        tag = f"trial{i}"
        server = self._server(tag)
        server.start()
        stop = threading.Event()
        acked: list[int] = []
        client = threading.Thread(target=lambda: acked.extend(self._post_until(server, tag, stop)), daemon=True)
        started = time.perf_counter()
        client.start()
        delay = self.delay(rng)
        time.sleep(delay)
        killed = server.proc is not None and server.proc.poll() is None
        if killed:
            os.kill(server.pid, signal.SIGKILL)
        server.proc.wait() if server.proc is not None else None
        client.join(timeout=120)
        stop.set()
        result: dict[str, Any] = {"killed": killed, "kill_at_s": delay, "seconds": time.perf_counter() - started,
                                  "returncode": server.proc.returncode if server.proc else None,
                                  "acknowledged": len(acked)}
        try:
            with ClaimStore.open(self.db, self._embedder()) as store:
                batches = [read_claims_ids(self._batch(tag, n)) for n in range(len(acked) + 2)]
                ids = {c.id for c in store.iter_claims()}
        except Exception as exc:  # noqa: BLE001 - reported as a corrupted store
            return {**result, "opened": False, "verified": False, "error": f"{type(exc).__name__}: {exc}",
                    "mixed": False, "lost": len(acked), "outcome": "unreadable"}
        report = verify_store(self.db, self._embedder(), sample=16)
        present = [len(ids & b) for b in batches]
        complete = [n for n, p in enumerate(present) if p == self.per_request]
        mixed = any(0 < p < self.per_request for p in present) or complete != list(range(len(complete)))
        mine = set().union(*batches)
        lost = len(self.expected - ids) + sum(present[n] != self.per_request for n in acked)
        phantoms = len(ids - self.expected - mine)
        self.expected |= set().union(*(batches[n] for n in complete)) if complete else set()
        return {**result, "opened": True, "verified": report.ok, "problems": [c.name for c in report.problems],
                "outcome": "acknowledged batches all in" if len(complete) == len(acked) else
                           f"{len(complete) - len(acked)} unacknowledged batch(es) in",
                "mixed": mixed or phantoms > 0, "lost": lost}


def read_claims_ids(batch: list[dict[str, Any]]) -> set[str]:
    """The ids the store gives the claims of one ClaimReview batch."""
    import tempfile

    from ...claims import read_claims

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "batch.json"
        path.write_text(json.dumps(batch), encoding="utf-8")
        return {c.id for c in read_claims(path, "claimreview")}


def _comparable(path: Path) -> dict[str, Any]:
    """A summary without what differs between two runs of the same thing (times, paths)."""
    summary = json.loads(path.read_text(encoding="utf-8"))
    for key in ("timings", "run_log"):
        summary.pop(key, None)
    return summary


class _Captured(logging.Handler):
    """Whether `logger` warned while the block ran (a rebuild of the index on open)."""

    def __init__(self, logger: str) -> None:
        super().__init__(logging.WARNING)
        self.logger = logging.getLogger(logger)
        self.seen = False

    def emit(self, record: logging.LogRecord) -> None:
        self.seen = True

    def __enter__(self) -> _Captured:
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self)
