"""The load test's pieces: never-repeating texts, and the summary rendered from a log."""

from __future__ import annotations

import itertools

from misguard.bench.service import load_texts, render_summary, summarise, unique_texts
from misguard.runlog import RunHeader, RunLog


def test_unique_texts_never_repeat_and_are_seeded():
    texts = ["a", "b", "c"]
    first = list(itertools.islice(unique_texts(texts, 0), 10))
    assert len(set(first)) == 10 and set(first[:3]) == set(texts)
    assert first == list(itertools.islice(unique_texts(texts, 0), 10))
    assert len(load_texts(None)) >= 20


def test_summary_is_rendered_from_the_log(tmp_path):
    path = tmp_path / "runlog.jsonl"
    with RunLog.open(path, RunHeader(kind="bench.service", params={"duration_s": 3}), resume=False) as log:
        for second, (n, rss) in enumerate([(40, 100.0), (42, 100.5), (44, 101.0)], start=1):
            log.write("second", key=f"unique-{second}", phase="unique", second=second, completed=n, errors=0,
                      error_kinds=[], latencies_ms=[10.0] * (n - 1) + [100.0], rss_mb=rss, total_completed=0)
        log.write("second", key="repeat-1", phase="repeat", second=1, completed=200, errors=1, error_kinds=["HTTP 503"],
                  latencies_ms=[2.0] * 200, rss_mb=101.0, total_completed=0)
        log.write("server_metrics", texts={"cached": 200.0, "clean": 126.0})
    summary = summarise(path)
    unique = summary["phases"]["unique"]
    assert unique["requests"] == 126 and unique["requests_per_s"] == 42.0 and unique["requests_per_s_min_second"] == 40
    assert unique["latency_ms"]["p50"] == 10.0 and unique["errors"] == 0
    assert abs(unique["rss_slope_mb_per_min"] - 30.0) < 1e-6  # 0.5 MB per second
    assert summary["phases"]["repeat"]["error_kinds"] == ["HTTP 503"]
    table = render_summary(summary)
    assert "| unique | 3 | 126 | 42.0 |" in table and "cached" in table


def test_summary_reads_each_concurrency_against_the_cli_batch_rate(tmp_path):
    path = tmp_path / "runlog.jsonl"
    with RunLog.open(path, RunHeader(kind="bench.service", params={}), resume=False) as log:
        for repeat, cli_rate, rates in ((0, 20.0, (10, 12)), (1, 30.0, (14, 14))):
            log.write("cli", key=f"cli-r{repeat}", repeat=repeat, texts=100, seconds=100 / cli_rate, texts_per_s=cli_rate,
                      wall_s=1.0, texts_per_s_with_start=cli_rate / 2, load_avg_1m=1.0)
            for second, n in enumerate(rates, start=1):
                log.write("second", key=f"unique-c8-r{repeat}-{second}", phase="unique-c8", repeat=repeat, second=second,
                          concurrency=8, completed=n, errors=0, error_kinds=[], latencies_ms=[50.0] * n, rss_mb=100.0,
                          total_completed=0)
            log.write("batches", key=f"unique-c8-r{repeat}", phase="unique-c8", repeat=repeat, batches=5, texts=20)
    summary = summarise(path)
    phase = summary["phases"]["unique-c8"]
    assert phase["texts_per_guard_call"] == 4.0
    assert phase["requests_per_s_repeats"] == [11.0, 14.0] and phase["requests_per_s"] == 12.5
    assert summary["cli"]["texts_per_s"] == 25.0 and phase["share_of_cli"] == 0.5
    assert "| unique-c8 | 4 | 50 | 12.5 | 0.50 | 4.0 |" in render_summary(summary)
