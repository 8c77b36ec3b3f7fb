"""A small pinned dataset served from loopback: two plain files, a zip holding two more
(under names of its own), and a file derived from two of them."""

from __future__ import annotations

import hashlib
import io
import itertools
import zipfile
from pathlib import Path

import pytest

from misguard.data import DataFile, Dataset, Download, register_dataset
from tests.helpers.route_server import Answer, route_server

CONTENT = {
    "a.txt": b"alpha line\n",
    "notes/b.tsv": b"id\ttext\n1\tbeta\n",
    "claims.jsonl": b'{"id": "t1", "text": "The Moon is made of green cheese", "verdict": "false"}\n',
    "d.txt": b"delta\n",
}
_names = itertools.count()


def joined(source: Path, out: Path) -> None:
    """The derived file: a.txt then notes/b.tsv."""
    (out / "joined.txt").write_bytes((source / "a.txt").read_bytes() + (source / "notes" / "b.tsv").read_bytes())


def pin(path: str, data: bytes, derived: bool = False) -> DataFile:
    return DataFile(path, hashlib.sha256(data).hexdigest(), len(data), derived=derived)


def archive() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("release/v1/claims.jsonl", CONTENT["claims.jsonl"])
        zf.writestr("release/v1/README", b"unrelated\n")
        zf.writestr("release/v1/d.txt", CONTENT["d.txt"])
    return buffer.getvalue()


def make_dataset(base_url: str) -> Dataset:
    """A freshly named dataset whose downloads point at `base_url`."""
    joined_bytes = CONTENT["a.txt"] + CONTENT["notes/b.tsv"]
    return register_dataset(Dataset(
        name=f"pinned-test-{next(_names)}",
        title="test dataset",
        directory="tests/pinned",
        entry="a.txt",
        files=(*(pin(p, d) for p, d in CONTENT.items()), pin("joined.txt", joined_bytes, derived=True)),
        downloads=(Download(f"{base_url}/files/a.txt", path="a.txt"), Download(f"{base_url}/files/b.tsv", path="notes/b.tsv"),
                   Download(f"{base_url}/release.zip", archive="zip")),
        license="test data",
        derive=joined,
    ))


@pytest.fixture
def site():
    routes = {
        "/files/a.txt": Answer(CONTENT["a.txt"], content_type="text/plain"),
        "/files/b.tsv": Answer(CONTENT["notes/b.tsv"], content_type="text/tab-separated-values"),
        "/release.zip": Answer(archive(), content_type="application/zip"),
    }
    with route_server(routes) as server:
        yield server


@pytest.fixture
def dataset(site) -> Dataset:
    return make_dataset(site.url)
