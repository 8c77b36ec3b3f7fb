"""Where named datasets live on this machine, and how they get there.

A *data root* holds datasets at their `Dataset.directory` (`claims/liar/train.tsv`, ...).
Two kinds are read: the user cache (`~/.cache/misguard/data`, setting `data_cache_dir`),
which `fetch` and `add` fill, and a mirror (setting `data_dir`: a folder that already holds
the datasets at their directories), read in place and never written. A file counts only when its size and sha256 match
the pin, wherever it lies.

Every write goes through a staging directory inside the cache: downloads and copies are
checked there first, then each file is moved into place with an atomic rename, so a failed
or interrupted fetch leaves no file that is not a verified copy.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..errors import DataError
from ._catalog import DATASETS, DataFile, Dataset, get_dataset

if TYPE_CHECKING:
    from ..config import Settings
    from ..net import RetryingFetcher

_CHUNK = 1 << 20
#: Largest download accepted (the biggest pinned one is a few MB).
MAX_DOWNLOAD_BYTES = 512 * 1024**2
FileState = Literal["ok", "missing", "mismatch"]


def default_data_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/misguard/data`, else `~/.cache/misguard/data`."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "misguard" / "data"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class FileStatus:
    """One pinned file under one data root."""

    dataset: str
    file: DataFile
    root: Path
    kind: Literal["cache", "mirror"]
    state: FileState
    sha256: str | None = None
    """What the file on disk hashes to (when present)."""

    @property
    def path(self) -> Path:
        return self.root / get_dataset(self.dataset).directory / self.file.path


@dataclass(frozen=True)
class FetchReport:
    dataset: str
    downloaded: tuple[str, ...]
    """URLs fetched (empty: every file was already in the cache)."""
    placed: tuple[str, ...]
    """Files written into the cache."""
    directory: Path


class DataCache:
    """The user cache plus read-only mirrors. Build with `DataCache.from_settings`."""

    def __init__(self, root: Path | None = None, mirrors: Sequence[Path] = ()) -> None:
        self.root = Path(root) if root is not None else default_data_cache_dir()
        self.mirrors = [Path(m) for m in mirrors]
        self._hashes: dict[tuple[str, int, int], str] = {}

    @classmethod
    def from_settings(cls, settings: Settings) -> DataCache:
        """Cache `data_cache_dir`; mirror `data_dir` when set."""
        return cls(settings.data_cache_dir, [settings.data_dir] if settings.data_dir is not None else [])

    # -- reading ---------------------------------------------------------------------------

    def roots(self) -> list[tuple[Path, Literal["cache", "mirror"]]]:
        return [(self.root, "cache"), *((m, "mirror") for m in self.mirrors)]

    def status(self, name: str, files: Iterable[DataFile] | None = None) -> list[FileStatus]:
        """Each pinned file of `name` under every root: ok, missing or mismatch."""
        dataset = get_dataset(name)
        wanted = list(files) if files is not None else list(dataset.files)
        out = []
        for root, kind in self.roots():
            for item in wanted:
                path = root / dataset.directory / item.path
                if not path.is_file():
                    out.append(FileStatus(name, item, root, kind, "missing"))
                    continue
                digest = self._sha256(path)
                ok = digest == item.sha256 and path.stat().st_size == item.size
                out.append(FileStatus(name, item, root, kind, "ok" if ok else "mismatch", digest))
        return out

    def root_of(self, name: str, member: str | None = None) -> Path:
        """The first data root (cache, then mirrors) holding verified copies of `name`'s
        files (or only of `member`)."""
        dataset = get_dataset(name)
        wanted = [dataset.file(member)] if member else list(dataset.files)
        states = self.status(name, wanted)
        for root, _ in self.roots():
            if all(s.state == "ok" for s in states if s.root == root):
                return root
        raise DataError(self._absent_message(dataset, states, member))

    def locate(self, name: str, member: str | None = None) -> Path:
        """The verified path of dataset `name`: its entry file, its directory, or `member`."""
        dataset = get_dataset(name)
        root = self.root_of(name, member)
        base = root / dataset.directory
        if member:
            return base / member
        return base / dataset.entry if dataset.entry else base

    def resolve(self, name_or_path: str | Path) -> Path:
        """An existing path as given; otherwise a dataset name (`liar`) or one of its files
        (`liar/train.tsv`), located and verified."""
        path = Path(name_or_path).expanduser()
        if path.exists():
            return path
        name, _, member = str(name_or_path).partition("/")
        if name in DATASETS:
            return self.locate(name, member or None)
        raise DataError(
            f"{name_or_path}: no such file, and no dataset of that name "
            f"(datasets: {', '.join(DATASETS.names())}; `misguard data list` describes them)"
        )

    def resolve_root(self, name_or_path: str | Path) -> Path:
        """An existing directory as given; a dataset name -> the data root holding it (for
        benchmarks that read several datasets laid out under one root)."""
        path = Path(name_or_path).expanduser()
        if path.exists():
            return path
        name, _, member = str(name_or_path).partition("/")
        if name in DATASETS:
            return self.root_of(name, member or None)
        return self.resolve(name_or_path)  # the same error as for a file

    def _absent_message(self, dataset: Dataset, states: list[FileStatus], member: str | None) -> str:
        what = f"{dataset.name}/{member}" if member else dataset.name
        where = ", ".join(f"{kind} {root}" for root, kind in self.roots())
        bad = [s for s in states if s.state == "mismatch"]
        lines = [f"dataset {what} is not in the {where} with every file verified"]
        for s in bad[:3]:
            lines.append(f"{s.path} has sha256 {s.sha256}, not the pinned {s.file.sha256}")
        if dataset.downloads:
            lines.append(f"fetch it with: misguard data fetch {dataset.name}")
        lines.append(f"or place a copy obtained by hand with: misguard data add {dataset.name} FILE...")
        return "; ".join(lines)

    def _sha256(self, path: Path) -> str:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if key not in self._hashes:
            self._hashes[key] = sha256_file(path)
        return self._hashes[key]

    # -- writing ---------------------------------------------------------------------------

    def fetch(self, name: str, fetcher: RetryingFetcher) -> FetchReport:
        """Download `name`'s missing files into the cache, each checked against its pin."""
        return asyncio.run(self.fetch_async(name, fetcher))

    async def fetch_async(self, name: str, fetcher: RetryingFetcher) -> FetchReport:
        from ..net import FetchError

        dataset = get_dataset(name)
        target = self.root / dataset.directory
        if not dataset.downloads:
            raise DataError(
                f"{name} is not published for download; if you have a copy, place it with: "
                f"misguard data add {name} FILE..."
            )
        missing = {s.file.path for s in self.status(name) if s.kind == "cache" and s.state != "ok"}
        if not missing:
            return FetchReport(name, (), (), target)
        inputs = missing - _derived(dataset)
        plain = {d.path for d in dataset.downloads if d.path}
        needed = [d for d in dataset.downloads if d.path in inputs]
        if inputs - plain:  # only an archive can hold these
            needed += [d for d in dataset.downloads if d.archive]
        with self._staging(name) as staging:
            downloaded = []
            for download in needed:
                try:
                    page = await fetcher.get(download.url, accept="*/*")
                except FetchError as exc:
                    raise DataError(
                        f"{exc}; nothing was written. Without network, download {download.url} by hand "
                        f"and place it with: misguard data add {name} FILE"
                    ) from None
                downloaded.append(download.url)
                if download.archive:
                    self._extract(dataset, io.BytesIO(page.content), staging, inputs, source=download.url)
                else:
                    assert download.path is not None
                    item = dataset.file(download.path)
                    self._check_bytes(item, page.content, download.url)
                    _write(staging / item.path, page.content)
            placed = self._finish(dataset, staging, missing, target)
        return FetchReport(name, tuple(downloaded), tuple(placed), target)

    def add(self, name: str, files: Sequence[Path]) -> list[str]:
        """Place files obtained by hand into the cache: each must match one of `name`'s
        pinned files (by size and sha256), or be a zip archive holding some. Returns the
        dataset files placed."""
        dataset = get_dataset(name)
        target = self.root / dataset.directory
        missing = {s.file.path for s in self.status(name) if s.kind == "cache" and s.state != "ok"}
        by_hash = {(f.sha256, f.size): f for f in dataset.files}
        with self._staging(name) as staging:
            found: set[str] = set()
            for number, path in enumerate(map(Path, files)):
                if not path.is_file():
                    raise DataError("no such file", source=str(path))
                # Hash the copy, not the original: what is placed is what was checked.
                copy = staging / f".added-{number}"
                try:
                    shutil.copyfile(path, copy)
                except OSError as exc:
                    raise DataError(f"cannot read it: {exc}", source=str(path)) from None
                digest, size = sha256_file(copy), copy.stat().st_size
                item = by_hash.get((digest, size))
                if item is not None:
                    os.replace(copy, _mkparents(staging / item.path))
                    found.add(item.path)
                elif zipfile.is_zipfile(copy):
                    with open(copy, "rb") as fh:
                        got = self._extract(dataset, fh, staging, {f.path for f in dataset.files}, source=str(path))
                    if not got:
                        raise DataError(f"the archive holds none of {name}'s files; nothing was written{_expected(dataset)}",
                                        source=str(path))
                    found |= got
                else:
                    raise DataError(
                        f"sha256 {digest} ({size:,} bytes) is none of {name}'s pinned files; "
                        f"nothing was written{_expected(dataset)}",
                        source=str(path),
                    )
            placed = self._finish(dataset, staging, found | (missing & _derived(dataset)), target, partial=True)
        return placed

    def _extract(self, dataset: Dataset, archive: io.IOBase, staging: Path, wanted: set[str], *, source: str) -> set[str]:
        """Members whose size and sha256 match a wanted file, written under its pinned path."""
        pins = {(f.sha256, f.size): f for f in dataset.files if f.path in wanted and not f.derived}
        sizes = {size for _, size in pins}
        found: set[str] = set()
        try:
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    # The declared size picks candidates, so a huge member is never read.
                    if info.is_dir() or info.file_size not in sizes:
                        continue
                    data = zf.read(info)
                    item = pins.get((hashlib.sha256(data).hexdigest(), len(data)))
                    if item is not None and item.path not in found:
                        _write(staging / item.path, data)
                        found.add(item.path)
        except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError, zlib.error) as exc:
            # Corrupt, truncated, encrypted or oddly compressed: nothing of it is trusted.
            raise DataError(f"not a readable zip archive: {exc}", source=source) from None
        return found

    def _check_bytes(self, item: DataFile, data: bytes, source: str) -> None:
        digest = hashlib.sha256(data).hexdigest()
        if digest != item.sha256 or len(data) != item.size:
            raise DataError(
                f"refused: {source} has sha256 {digest} ({len(data):,} bytes), pinned {item.sha256} "
                f"({item.size:,} bytes) for {item.path}; the upstream file changed or the download was "
                "altered. Nothing was written"
            )

    def _finish(self, dataset: Dataset, staging: Path, wanted: set[str], target: Path, *, partial: bool = False) -> list[str]:
        """Derive, check and move the staged files into the cache; returns those placed."""
        if dataset.derive is not None and any(f.derived and f.path in wanted for f in dataset.files):
            inputs = [f for f in dataset.files if not f.derived]
            sources = _overlay(staging, target, inputs)
            if all((sources / f.path).is_file() for f in inputs):
                dataset.derive(sources, staging)
                for item in dataset.files:
                    if item.derived:
                        self._check_bytes(item, (staging / item.path).read_bytes(), f"the rebuilt {item.path}")
        staged = [f for f in dataset.files if (staging / f.path).is_file()]
        absent = wanted - {f.path for f in staged}
        if absent and not partial:
            inputs = sorted(absent - _derived(dataset))
            lacking = f"the downloads lacked {', '.join(inputs)}" if inputs else f"could not rebuild {', '.join(sorted(absent))}"
            raise DataError(f"{dataset.name}: {lacking}; nothing was written")
        for item in staged:
            _fsync(staging / item.path)
        for item in staged:
            destination = target / item.path
            destination.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / item.path, destination)
        return [f.path for f in staged]

    def _staging(self, name: str) -> _StagingDir:
        return _StagingDir(self.root, name)


class _StagingDir:
    """A temporary directory inside the cache (one file system: the moves out are atomic
    renames), removed on exit whatever happened."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.name = name
        self.path: Path | None = None

    def __enter__(self) -> Path:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DataError(f"cannot create the data cache {self.root}: {exc}") from None
        self.path = Path(tempfile.mkdtemp(prefix=f".staging-{self.name}-", dir=self.root))
        return self.path

    def __exit__(self, *exc: object) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)


def _mkparents(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _write(path: Path, data: bytes) -> None:
    _mkparents(path)
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _fsync(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


def _derived(dataset: Dataset) -> set[str]:
    return {f.path for f in dataset.files if f.derived}


def _overlay(staging: Path, target: Path, inputs: list[DataFile]) -> Path:
    """A directory with every input file: staged ones, else (hard links to) cached ones."""
    merged = staging / ".inputs"
    for item in inputs:
        for base in (staging, target):
            if (base / item.path).is_file():
                destination = _mkparents(merged / item.path)
                try:
                    os.link(base / item.path, destination)
                except OSError:
                    shutil.copyfile(base / item.path, destination)
                break
    return merged


def _expected(dataset: Dataset) -> str:
    listed = ", ".join(f"{f.path} ({f.size:,} bytes, sha256 {f.sha256[:12]}...)" for f in dataset.files if not f.derived)
    return f". Expected one of: {listed}"
