"""Named datasets for the benchmarks: pinned public URLs and sha256, a user cache
(`~/.cache/misguard/data`, setting `data_cache_dir`), mirrors read in place (setting
`data_dir`), and `add` for copies obtained by hand. Nothing is shipped with misguard.

    path = resolve("liar/test.tsv")          # an existing path is returned as given
    DataCache.from_settings(settings).fetch("snopes", RetryingFetcher())
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._cache import MAX_DOWNLOAD_BYTES, DataCache, FetchReport, FileStatus, default_data_cache_dir, sha256_file
from ._catalog import DATASETS, DataFile, Dataset, Download, dataset_names, get_dataset, register_dataset

if TYPE_CHECKING:
    from ..config import Settings


def resolve(name_or_path: str | Path, settings: Settings | None = None) -> Path:
    """A path as given when it exists; else a dataset name (`misinfotask`) or one of its
    files (`liar/train.tsv`), found verified in the cache or a mirror.

    Raises:
        DataError: neither a path nor an available dataset; says how to fetch or add it.
    """
    return _cache(settings).resolve(name_or_path)


def resolve_root(name_or_path: str | Path, settings: Settings | None = None) -> Path:
    """A directory as given when it exists; else the data root (cache or mirror) holding
    the named dataset, for benchmarks that read several datasets under one root."""
    return _cache(settings).resolve_root(name_or_path)


def _cache(settings: Settings | None) -> DataCache:
    if settings is None:
        from ..config import load_settings

        settings = load_settings()
    return DataCache.from_settings(settings)


__all__ = [
    "DATASETS", "MAX_DOWNLOAD_BYTES", "DataCache", "DataFile", "Dataset", "Download", "FetchReport", "FileStatus",
    "dataset_names", "default_data_cache_dir", "get_dataset", "register_dataset", "resolve", "resolve_root",
    "sha256_file",
]
