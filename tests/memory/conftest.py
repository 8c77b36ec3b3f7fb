"""Store fixtures: every contract test runs against SQLite and a throwaway PostgreSQL server."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


def _pg_bin() -> Path | None:
    for cand in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(cand, "pg_ctl").exists() and Path(cand, "initdb").exists():
            return Path(cand)
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).parent
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """Start a throwaway PostgreSQL on a unix socket; yields a base URL without a database."""
    pytest.importorskip("psycopg", reason="needs the 'postgres' extra")
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("no PostgreSQL binaries (initdb, pg_ctl) found; .ci/run installs Debian's postgresql")
    root = Path(tempfile.mkdtemp(prefix="misguard-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start PostgreSQL as another user")
        shutil.chown(root, "postgres", "postgres")
        shutil.chown(sock, "postgres", "postgres")
        os.chmod(root, 0o755)
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
                   check=True, capture_output=True, timeout=120)
    opts = f"-k {sock} -p {port} -c listen_addresses='' -c fsync=off"
    subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"), "-w", "start"],
                   check=True, capture_output=True, timeout=120)
    try:
        yield f"postgresql+psycopg://postgres@/{{db}}?host={sock}&port={port}"
    finally:
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


def _create_db(base: str) -> str:
    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    host = base.split("host=")[1].split("&")[0]
    port = base.split("port=")[1]
    with psycopg.connect(host=host, port=port, user="postgres", dbname="postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return base.format(db=name)


@pytest.fixture(params=["sqlite", "postgres"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store location for each backend."""
    if request.param == "sqlite":
        return str(tmp_path / "memory.db")
    return _create_db(request.getfixturevalue("postgres_server"))
