"""Where a claim store lives: a store spec names a backend, and `open_claim_store` opens it.

A spec is a directory (the default backend, `sqlite`: `ClaimStore`) or starts with a prefix
a registered backend claims (`qdrant:DIR`, `qdrant+http://HOST:6333/COLLECTION`). A backend
registers a factory `(spec, embedder, *, create, index) -> store` with its `prefixes` (an
installed package adds its module under the `misguard.claim_stores` entry-point group); a
plug-in's backend then opens from the CLI, the service and the benches by its spec alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..embed import Embedder
from ..registry import Registry

#: Backends of claim stores by name; metadata: `prefixes` of the specs each one opens.
STORE_BACKENDS: Registry[Any] = Registry("claim store backend", plugins=("misguard.claims._qdrant",),
                                         entry_point_group="misguard.claim_stores")
DEFAULT_BACKEND = "sqlite"


@STORE_BACKENDS.register(DEFAULT_BACKEND, prefixes=(), extra="", network=False,
                         help="a directory: SQLite records and the vector index files beside them")
def _sqlite(spec: str, embedder: Embedder, *, create: bool = False, index: str = "auto") -> Any:
    from ._store import ClaimStore

    return ClaimStore.open(Path(spec).expanduser(), embedder, create=create, index=index)


def store_backend(spec: str | Path) -> str:
    """The name of the backend that opens `spec` (a directory: `sqlite`)."""
    text = str(spec)
    for entry in STORE_BACKENDS:
        if any(text.startswith(prefix) for prefix in entry.metadata.get("prefixes", ())):
            return entry.name
    return DEFAULT_BACKEND


def open_claim_store(spec: str | Path, embedder: Embedder, *, create: bool = False, index: str = "auto") -> Any:
    """Open the claim store `spec` names with its backend; `create=True` makes an empty one
    when absent (see `ClaimStore.open` for `index`)."""
    return STORE_BACKENDS.get(store_backend(spec)).factory(str(spec), embedder, create=create, index=index)


__all__ = ["DEFAULT_BACKEND", "STORE_BACKENDS", "open_claim_store", "store_backend"]
