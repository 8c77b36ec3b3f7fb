"""The online sensitivity table: one row per type and ratio run online; a run whose guard
left no affected derived record says so instead of printing a mean of 0 hops."""

from __future__ import annotations

from misguard.bench.memory._report import markdown_online_sensitivity


def _build(hops: float, hops_max: int, misbehavior: float) -> dict:
    return {"hops_written": hops, "hops_written_ci95": [hops, hops], "hops_written_max": hops_max,
            "build_misbehavior": misbehavior, "eval": {"misbehavior": misbehavior, "misbehavior_ci95": [0.0, misbehavior]}}


def _summary(kind: str, ratio: float, online_hops: float, online_max: int) -> dict:
    online = {**_build(online_hops, online_max, 0.01), "collateral": 0.02, "collateral_ci95": [0.01, 0.03]}
    return {"params": {"kind": kind, "ratio": ratio}, "online": {"before": _build(6.0, 19, 0.25), "online": online}}


def test_rows_per_type_and_ratio_and_none_reached():
    table = markdown_online_sensitivity({
        "a": _summary("II", 0.05, 1.5, 3),
        "b": _summary("I", 0.005, 0.0, 0),
        "c": {"params": {"kind": "III", "ratio": 0.1}},  # a run without --online-window: no row
    })
    rows = table.splitlines()[2:]
    assert rows[0] == "| II | 5.0% | 6.00 (19) → 1.50 [1.50, 1.50] (3) | 25.0 → 1.0 [0.0, 1.0] | 25.0 → 1.0 | 2.0 [1.0, 3.0] |"
    assert "| I | 0.5% | 6.00 (19) → no derived record affected |" in rows[1]
    assert len(rows) == 2
