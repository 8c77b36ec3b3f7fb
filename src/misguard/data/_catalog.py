"""What a named dataset is: its files with pinned sizes and sha256, where each comes from,
and where it sits under a data root. Datasets are registered by name (`DATASETS`), so a
package can add its own through the `misguard.datasets` entry-point group."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..registry import Registry

#: Builds a dataset's derived files: (directory holding its other files, output directory).
Derive = Callable[[Path, Path], None]


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset, pinned by size and sha256."""

    path: str
    """Relative to the dataset's directory, with `/` separators."""
    sha256: str
    size: int
    derived: bool = False
    """Made from the dataset's other files by `Dataset.derive`, never downloaded."""


@dataclass(frozen=True)
class Download:
    """A URL to fetch. A plain file is checked against its `DataFile`'s pin; an archive's
    members are matched to the dataset's files by size and sha256, whatever their names
    inside it."""

    url: str
    path: str | None = None
    """The `DataFile` this download is; None for an archive."""
    archive: str | None = None
    """"zip" for an archive."""


@dataclass(frozen=True)
class Dataset:
    """A named dataset: pinned files, where to download them, and how it is licensed."""

    name: str
    title: str
    directory: str
    """Where the files sit under a data root (the cache or a mirror), e.g. `claims/liar`."""
    files: tuple[DataFile, ...]
    downloads: tuple[Download, ...] = ()
    """Empty: not published for download; a copy can only be placed with `add`."""
    entry: str | None = None
    """The file `resolve(name)` returns (None: the dataset's directory)."""
    license: str = ""
    source: str = ""
    """Where the pinned copy comes from (repository and commit, paper)."""
    verified: str = ""
    """How the pins were checked against upstream, and what could not be."""
    derive: Derive | None = None

    def file(self, path: str) -> DataFile:
        for item in self.files:
            if item.path == path:
                return item
        known = ", ".join(f.path for f in self.files)
        raise KeyError(f"{self.name} has no file {path!r} (its files: {known})")

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


DATASETS: Registry[Dataset] = Registry(
    "dataset", plugins=("misguard.data._builtin",), entry_point_group="misguard.datasets"
)


def register_dataset(dataset: Dataset) -> Dataset:
    """Make `dataset` known by its name (to `resolve`, `misguard data` and `--data NAME`)."""
    DATASETS.register(dataset.name, title=dataset.title)(lambda: dataset)
    return dataset


def get_dataset(name: str) -> Dataset:
    """The dataset registered as `name` (`ConfigError` naming the known ones otherwise)."""
    return DATASETS.get(name).factory()


def dataset_names() -> list[str]:
    return DATASETS.names()
