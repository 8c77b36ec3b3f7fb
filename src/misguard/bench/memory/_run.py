"""`misguard bench memory`: build poisoned memories, detect, repair, measure.

Per seed: scenarios are split 60/20/20 into train / validation / test. Every method fits on
train, picks its threshold (and hyper-parameters) on validation by best F1, and is measured
on test. The test split is written to the real store (SQLite or PostgreSQL), the proposed
method's repair is applied to it through the audited store API, and every method then runs
the same greedy evaluation episodes on its own repaired copy of each test scenario, with
sliding-window re-evaluation of the memories written during the episodes.

Detection labels: 1 = injected (or modified) poison, 0 = benign. Benign-looking records that
inherited a wrong action from poison ("derived") are excluded from AUC/FPR (they are neither
injected nor benign) but are what repair must also fix; their share is logged.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...config import Settings
from ...errors import ConfigError
from ...memory import (
    BASELINES,
    ContrastiveDetector,
    EncoderConfig,
    HashedRecordFeaturizer,
    apply_repair,
    auc,
    best_f1_threshold,
    credibility,
    hop_distances,
    knn_within_groups,
    open_store,
    plan_repair,
    relational_features,
    residual_scores,
    state_key,
)
from ...runlog import RunHeader, RunLog, public_settings
from ...types import MemoryRecord, Provenance
from ._env import ACTIONS, CHANNELS, Embedder, MemoryTable, Scenario, make_scenarios
from ._sim import Attack, build_memory, run_eval

METHODS = ("proposed", "isolation_forest", "ocsvm", "residual")
BUCKET_BITS = 5
EVAL_STEPS = 40
WINDOW = 8
STATE_BLOCK = HashedRecordFeaturizer().slices()["state"]
HIST_BINS = 1000


@dataclass
class BenchParams:
    ratio: float = 0.05
    kind: str = "II"
    seeds: int = 5
    records: int = 20_000
    scenarios: int = 60
    capabilities: tuple[str, ...] = ("C1", "C2", "C3")
    backend: str = "sqlite"
    postgres_url: str = ""
    encoder_steps: int = 300


def _limit_threads() -> contextlib.AbstractContextManager[Any]:
    """One BLAS thread: the simulation does many small products, which threads only slow down."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - comes with scikit-learn
        return contextlib.nullcontext()
    return threadpool_limits(1)


def _correct(sc: Scenario, table: MemoryTable) -> np.ndarray:
    truth = np.array([s.correct for s in sc.situations])
    return truth[table.situation[:table.n]]


def _labels(sc: Scenario, table: MemoryTable) -> np.ndarray:
    """1 injected, 0 benign, 2 derived (inherited a wrong action through reuse of poison)."""
    n = table.n
    lab = table.label[:n].astype(np.int8).copy()
    dist = hop_distances(n, np.array(table.src), np.array(table.dst), lab == 1)
    derived = (lab == 0) & (dist > 0) & ~table.explore[:n] & (table.action[:n] != _correct(sc, table))
    lab[derived] = 2
    return lab


@dataclass
class Pool:
    """All records of one seed as columns, with the slice of each scenario."""

    emb: np.ndarray
    actions: np.ndarray
    confidence: np.ndarray
    success: np.ndarray
    agents: np.ndarray
    groups: np.ndarray
    order: np.ndarray
    labels: np.ndarray
    split: np.ndarray  # 0 train, 1 val, 2 test
    offsets: dict[int, tuple[int, int]]


def _pool(scenarios: list[Scenario], tables: dict[int, MemoryTable], labels: dict[int, np.ndarray], split_of: dict[int, int]) -> Pool:
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("emb", "actions", "confidence", "success", "agents", "groups", "order", "labels", "split")}
    offsets, start = {}, 0
    for sc in scenarios:
        t, n = tables[sc.sid], tables[sc.sid].n
        parts["emb"].append(t.emb[:n])
        parts["actions"].append(t.action[:n])
        parts["confidence"].append(t.confidence[:n])
        parts["success"].append(t.success[:n])
        parts["agents"].append(t.agent[:n])
        parts["groups"].append(np.full(n, sc.sid))
        parts["order"].append(t.time[:n].astype(np.float64) + np.arange(n) * 1e-6)
        parts["labels"].append(labels[sc.sid])
        parts["split"].append(np.full(n, split_of[sc.sid], dtype=np.int8))
        offsets[sc.sid] = (start, start + n)
        start += n
    return Pool(**{k: np.concatenate(v) for k, v in parts.items()}, offsets=offsets)


@dataclass
class _WindowEvidence:
    conflict: np.ndarray
    consensus: np.ndarray
    consensus_share: np.ndarray


def _score_table(table: MemoryTable, detector: ContrastiveDetector) -> tuple[np.ndarray, _WindowEvidence]:
    """Eq. 1 + eq. 4 over one scenario's *active* records (used by the sliding window);
    quarantined records are no evidence and get probability 0 (they are already repaired)."""
    n = table.n
    act = np.flatnonzero(table.active[:n])
    p = np.zeros(n, np.float32)
    ev = _WindowEvidence(np.zeros(n, np.float32), np.full(n, -1, np.int64), np.zeros(n, np.float32))
    if len(act) < 2:
        return p, ev
    e = table.emb[act]
    cred = credibility(e, table.action[act], table.confidence[act], table.agent[act], np.zeros(len(act), np.int64),
                       table.time[act].astype(np.float64), bucket_bits=BUCKET_BITS,
                       key=state_key(e, STATE_BLOCK), success=table.success[act], causal=True)
    feats = relational_features(cred, table.confidence[act], table.success[act])
    p[act] = detector.predict_proba(e, feats, cred.credibility)
    ev.conflict[act], ev.consensus[act], ev.consensus_share[act] = cred.conflict, cred.consensus, cred.consensus_share
    return p, ev


class _Repairer:
    """Applies a method's detection + repair to a simulation table (one copy per method)."""

    def __init__(self, method: str, emb: Embedder, threshold: float, detector: ContrastiveDetector, baseline: Any) -> None:
        self.method, self.emb, self.threshold, self.detector, self.baseline = method, emb, threshold, detector, baseline
        self.pruned: set[int] = set()

    def scores(self, table: MemoryTable) -> tuple[np.ndarray, Any]:
        n = table.n
        if self.method == "proposed":
            return _score_table(table, self.detector)
        if self.method == "residual":
            act = np.flatnonzero(table.active[:n])
            out = np.zeros(n, np.float32)
            nbr, _ = knn_within_groups(table.emb[act], np.zeros(len(act), np.int64), table.agent[act], 16, bucket_bits=BUCKET_BITS)
            out[act] = residual_scores(table.emb[act], nbr)
            return out, None
        return self.baseline.score(table.emb[:n]), None

    def __call__(self, table: MemoryTable, candidates: np.ndarray | None = None) -> dict[str, int]:
        n = table.n
        p, cred = self.scores(table)
        if cred is None:  # baselines: isolation of what they flag
            flag = (p >= self.threshold) & table.active[:n]
            if candidates is not None:
                flag &= candidates
            table.active[:n][flag] = False
            return {"quarantine": int(flag.sum())}
        src, dst = np.array(table.src, dtype=np.int64), np.array(table.dst, dtype=np.int64)
        cand = table.active[:n] if candidates is None else (candidates & table.active[:n])
        plan = plan_repair(p, self.threshold, cred.conflict, cred.consensus, cred.consensus_share,
                           table.action[:n], table.confidence[:n], src, dst, candidates=cand)
        self.apply(table, plan)
        return plan.counts

    def apply(self, table: MemoryTable, plan: Any) -> None:
        table.active[plan.quarantine] = False
        for i, a in zip(plan.rewrite, plan.rewrite_action):
            ctx, tags = table.tokens[i]
            table.action[i] = int(a)
            table.emb[i] = self.emb.record(int(table.situation[i]), ctx, tags, int(a))
        table.confidence[plan.rewrite] = plan.rewrite_confidence
        table.confidence[plan.dilute] = plan.dilute_confidence
        self.pruned.update(int(e) for e in plan.prune)


def _hops(sc: Scenario, table: MemoryTable, pruned: set[int]) -> tuple[float, int]:
    n = table.n
    src, dst = np.array(table.src, dtype=np.int64), np.array(table.dst, dtype=np.int64)
    if pruned:
        keep = np.ones(len(src), bool)
        keep[list(pruned)] = False
        src, dst = src[keep], dst[keep]
    origins = table.label[:n] == 1
    dist = hop_distances(n, src, dst, origins, blocked=~table.active[:n])
    affected = (table.label[:n] == 0) & table.active[:n] & ~table.explore[:n] & (table.action[:n] != _correct(sc, table))
    reach = affected & (dist > 0)
    return float(dist[reach].sum()), int(reach.sum())


def _write_store(store: Any, prefix: str, scenarios: list[Scenario], tables: dict[int, MemoryTable]) -> dict[int, list[str]]:
    """Persist test scenarios: records (with embeddings) and memory->memory reuse edges."""
    ids: dict[int, list[str]] = {}
    for sc in scenarios:
        t, n = tables[sc.sid], tables[sc.sid].n
        names = ACTIONS[sc.domain]
        rid = [f"s{prefix}-{sc.task[5:]}-{i}" for i in range(n)]
        recs = []
        for i in range(n):
            ctx, tags = t.tokens[i]
            conf = float(t.confidence[i])
            succ = None if np.isnan(t.success[i]) else float(t.success[i])
            recs.append(MemoryRecord.model_construct(
                id=rid[i], state=";".join(sc.situations[int(t.situation[i])].state), context=";".join(ctx),
                action=names[int(t.action[i])], tags=list(tags),
                provenance=Provenance.model_construct(agent=f"{sc.task[5:]}-agent{int(t.agent[i])}", time=float(t.time[i]), channel=CHANNELS[int(t.channel[i])]),
                success=succ, reward=float(t.reward[i]), confidence=conf, embedding=None, version=1,
            ))
        for start in range(0, n, 5000):
            store.add_many(recs[start:start + 5000], embeddings=t.emb[start:min(start + 5000, n)])
        store.record_reuses((rid[s], rid[d], "memory", f"{sc.task[5:]}-agent{int(t.agent[d])}") for s, d in zip(t.src, t.dst))
        ids[sc.sid] = rid
    return ids


def run_seed(params: BenchParams, seed: int, out_dir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    feat = HashedRecordFeaturizer()
    scenarios = make_scenarios(params.scenarios, rng)
    perm = rng.permutation(len(scenarios))
    n_train, n_val = int(0.6 * len(perm)), int(0.2 * len(perm))
    split_of = {int(s): (0 if j < n_train else 1 if j < n_train + n_val else 2) for j, s in enumerate(perm)}
    per = max(200, params.records // params.scenarios)
    attack = Attack(params.kind, params.ratio, frozenset(params.capabilities))
    tables, labels, embs, cosines = {}, {}, {}, []
    for sc in scenarios:
        embs[sc.sid] = Embedder(feat, sc)
        tables[sc.sid], info = build_memory(sc, embs[sc.sid], np.random.default_rng([seed, sc.sid]), per, attack)
        labels[sc.sid] = _labels(sc, tables[sc.sid])
        cosines += info.centroid_cosines
    timings["simulate_s"] = time.perf_counter() - t0
    pool = _pool(scenarios, tables, labels, split_of)
    log(f"seed {seed}: {len(pool.labels)} records, {int((pool.labels == 1).sum())} poisoned, {int((pool.labels == 2).sum())} derived")

    # Detection scoring over the whole memory (timed: the speed target is measured here).
    t1 = time.perf_counter()
    cred = credibility(pool.emb, pool.actions, pool.confidence, pool.agents, pool.groups, pool.order, bucket_bits=BUCKET_BITS,
                       key=state_key(pool.emb, STATE_BLOCK), success=pool.success, causal=True)
    feats = relational_features(cred, pool.confidence, pool.success)
    timings["credibility_s"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    detector = ContrastiveDetector(EncoderConfig(steps=params.encoder_steps, seed=seed), blocks=feat.slices())
    train_idx = np.flatnonzero(pool.split == 0)
    detector.fit(pool.emb, feats, pool.labels, cred.credibility, cred.graph.neighbors, cred.graph.agrees, index=train_idx)
    timings["train_s"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    p_all = detector.predict_proba(pool.emb, feats, cred.credibility)
    timings["encode_s"] = time.perf_counter() - t3
    timings["score_records_per_s"] = len(p_all) / (timings["credibility_s"] + timings["encode_s"])

    scores: dict[str, np.ndarray] = {"proposed": p_all}
    thresholds: dict[str, float] = {}
    val = (pool.split == 1) & (pool.labels <= 1)
    thresholds["proposed"], _ = best_f1_threshold(p_all[val], pool.labels[val])
    baselines: dict[str, Any] = {}
    t4 = time.perf_counter()
    for name in ("isolation_forest", "ocsvm"):
        det = BASELINES.build(name, seed=seed)
        det.fit(pool.emb[pool.split == 0], pool.emb[val], pool.labels[val])
        test_rows = pool.split == 2
        s = np.zeros(len(pool.labels), np.float32)
        s[test_rows] = det.score(pool.emb[test_rows])
        scores[name], thresholds[name], baselines[name] = s, det.threshold, det
    scores["residual"] = residual_scores(pool.emb, cred.graph.neighbors)
    thresholds["residual"], _ = best_f1_threshold(scores["residual"][val], pool.labels[val])
    timings["baselines_s"] = time.perf_counter() - t4

    # Test scenarios: the store, repair, evaluation episodes.
    tests = [sc for sc in scenarios if split_of[sc.sid] == 2]
    test_scores = {m: scores[m][pool.split == 2] for m in METHODS}
    t5 = time.perf_counter()
    # Each attempt writes fresh ids (and, for SQLite, a fresh file): an interrupted attempt's
    # records stay where they are, untouched, and never collide with the rerun's.
    attempt = uuid.uuid4().hex[:6]
    if params.backend == "postgres":
        store = open_store(params.postgres_url)
    else:
        store = open_store(out_dir / f"memory-seed{seed}-{attempt}.db")
    with store:
        ids = _write_store(store, f"{seed}-{attempt}", tests, tables)
        timings["store_write_s"] = time.perf_counter() - t5
        units = []
        audit_n = 0
        for sc in tests:
            a, b = pool.offsets[sc.sid]
            lab = labels[sc.sid]
            unit: dict[str, Any] = {"sid": sc.sid, "domain": sc.domain, "n": int(b - a),
                                    "poison": int((lab == 1).sum()), "derived": int((lab == 2).sum())}
            eval_rng = lambda: np.random.default_rng([seed, sc.sid, 99])  # noqa: E731 - same episodes for every method
            start = int(tables[sc.sid].time[:tables[sc.sid].n].max()) + 1
            base = tables[sc.sid].copy()
            d, w = run_eval(base, sc, embs[sc.sid], eval_rng(), EVAL_STEPS, start)
            hs, hc = _hops(sc, base, set())
            unit["before"] = {"decisions": d, "wrong": w, "hop_sum": hs, "hop_n": hc}
            for m in METHODS:
                sc_scores, lab_ok = scores[m][a:b], lab <= 1
                pos = sc_scores[lab_ok & (lab == 1)]
                neg = sc_scores[lab_ok & (lab == 0)]
                table = tables[sc.sid].copy()
                rep = _Repairer(m, embs[sc.sid], thresholds[m], detector, baselines.get(m))
                if m == "proposed":
                    # Initial repair from the batch scores, applied to the real store (audited) too.
                    src, dst = np.array(table.src, dtype=np.int64), np.array(table.dst, dtype=np.int64)
                    plan = plan_repair(sc_scores, thresholds[m], cred.conflict[a:b], cred.consensus[a:b], cred.consensus_share[a:b],
                                       table.action[:table.n], table.confidence[:table.n], src, dst)
                    rep.apply(table, plan)
                    audit_n += len(apply_repair(store, plan, ids[sc.sid], ACTIONS[sc.domain]))
                    unit["repair_counts"] = plan.counts
                else:
                    flag = sc_scores >= thresholds[m]
                    table.active[:table.n][flag] = False
                d, w = run_eval(table, sc, embs[sc.sid], eval_rng(), EVAL_STEPS, start, protect=rep, window=WINDOW)
                hs, hc = _hops(sc, table, rep.pruned)
                unit[m] = {
                    "pos_hist": np.histogram(_unit_scale(pos, test_scores[m]), bins=HIST_BINS, range=(0, 1))[0].tolist(),
                    "neg_hist": np.histogram(_unit_scale(neg, test_scores[m]), bins=HIST_BINS, range=(0, 1))[0].tolist(),
                    "tp": int((pos >= thresholds[m]).sum()), "fp": int((neg >= thresholds[m]).sum()),
                    "n_pos": int(len(pos)), "n_neg": int(len(neg)),
                    "auc": auc(sc_scores[lab_ok], lab[lab_ok]) if len(pos) and len(neg) else None,
                    "decisions": d, "wrong": w, "hop_sum": hs, "hop_n": hc,
                }
            units.append(unit)
        timings["repair_eval_s"] = time.perf_counter() - t5 - timings["store_write_s"]
        store_info = {"backend": store.backend, "records": store.count(), "quarantined": store.count("quarantined"), "audit_entries": audit_n}
    test_rows = pool.split == 2
    lab_t = pool.labels[test_rows]
    ok = lab_t <= 1
    aucs = {m: auc(scores[m][test_rows][ok], lab_t[ok]) for m in METHODS}
    head_auc = auc(detector.head_proba(pool.emb[test_rows][ok], feats[test_rows][ok]), lab_t[ok])
    cred_auc = auc(1 - cred.credibility[test_rows][ok], lab_t[ok])
    timings["total_s"] = time.perf_counter() - t0
    cos = np.array(cosines) if cosines else np.array([np.nan])
    return {
        "seed": seed, "records": int(len(pool.labels)), "units": units, "thresholds": thresholds,
        "auc": aucs, "auc_components": {"credibility_only": cred_auc, "encoder_head_only": head_auc},
        "baseline_config": {k: v.describe() for k, v in baselines.items()},
        "poison_centroid_cosine": {"mean": float(np.nanmean(cos)), "p5": float(np.nanpercentile(cos, 5)), "p50": float(np.nanpercentile(cos, 50)),
                                   "share_ge_0.90": float(np.nanmean(cos >= 0.90))},
        "timings": timings, "store": store_info, "encoder_loss_last": detector.history[-1] if detector.history else None,
    }


def _unit_scale(x: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Empirical CDF of the seed's test scores: monotone, so per-unit histograms on [0, 1]
    can be pooled for the bootstrap AUC without crushing ties near a threshold."""
    ref = np.sort(reference)
    return np.searchsorted(ref, x, side="right") / max(len(ref), 1)


def _binned_auc(pos: np.ndarray, neg: np.ndarray) -> float:
    n_pos, n_neg = pos.sum(), neg.sum()
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    cum_neg = np.cumsum(neg) - neg  # negatives strictly below each bin
    return float(((cum_neg + 0.5 * neg) * pos).sum() / (n_pos * n_neg))


def aggregate(results: list[dict[str, Any]], resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Means over seeds, and 95% CIs from a cluster bootstrap over (seed, test scenario) units."""
    units = [u for r in results for u in r["units"]]
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(units), (resamples, len(units)))

    def ratio(get_num: Callable[[dict], float], get_den: Callable[[dict], float]) -> tuple[float, list[float]]:
        num = np.array([get_num(u) for u in units], dtype=float)
        den = np.array([get_den(u) for u in units], dtype=float)
        point = float(num.sum() / max(den.sum(), 1e-12))
        boot = num[idx].sum(axis=1) / np.maximum(den[idx].sum(axis=1), 1e-12)
        return point, [float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))]

    def method_block(m: str) -> dict[str, Any]:
        pos = np.array([u[m]["pos_hist"] for u in units], dtype=float)
        neg = np.array([u[m]["neg_hist"] for u in units], dtype=float)
        boot_auc = [_binned_auc(pos[i].sum(0), neg[i].sum(0)) for i in idx]
        per_seed = [r["auc"][m] for r in results]
        fpr, fpr_ci = ratio(lambda u: u[m]["fp"], lambda u: u[m]["n_neg"])
        tpr, _ = ratio(lambda u: u[m]["tp"], lambda u: u[m]["n_pos"])
        mis, mis_ci = ratio(lambda u: u[m]["wrong"], lambda u: u[m]["decisions"])
        hops, hops_ci = ratio(lambda u: u[m]["hop_sum"], lambda u: u[m]["hop_n"])
        by_domain = {}
        for dom in sorted({u["domain"] for u in units}):
            du = [u for u in units if u["domain"] == dom]
            by_domain[dom] = 1.0 - sum(u[m]["wrong"] for u in du) / max(sum(u[m]["decisions"] for u in du), 1)
        acc = list(by_domain.values())
        return {
            "auc": float(np.mean(per_seed)), "auc_std": float(np.std(per_seed)),
            "auc_ci95": [float(np.nanpercentile(boot_auc, 2.5)), float(np.nanpercentile(boot_auc, 97.5))],
            "fpr": fpr, "fpr_ci95": fpr_ci, "recall": tpr,
            "misbehavior_after": mis, "misbehavior_after_ci95": mis_ci,
            "hops_after": hops, "hops_after_ci95": hops_ci,
            "accuracy_by_domain": by_domain,
            "accuracy_fluctuation": float((max(acc) - min(acc)) / 2) if acc else 0.0,
        }

    before_mis, before_ci = ratio(lambda u: u["before"]["wrong"], lambda u: u["before"]["decisions"])
    before_hops, before_hops_ci = ratio(lambda u: u["before"]["hop_sum"], lambda u: u["before"]["hop_n"])
    blocks = {m: method_block(m) for m in METHODS}
    main = blocks.pop("proposed")

    def shape(b: dict[str, Any]) -> dict[str, Any]:
        return {"auc": b["auc"], "fpr": b["fpr"], "misbehavior_before": before_mis, "misbehavior_after": b["misbehavior_after"],
                "hops_before": before_hops, "hops_after": b["hops_after"], "details": b}

    out = shape(main)
    out["misbehavior_before_ci95"], out["hops_before_ci95"] = before_ci, before_hops_ci
    out["baselines"] = {m: shape(b) for m, b in blocks.items()}
    return out


def run_memory_bench(settings: Settings, params: BenchParams, output: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """Run (or resume) the benchmark; the summary is rendered from the run log."""
    output.mkdir(parents=True, exist_ok=True)
    header = RunHeader(
        kind="bench.memory", settings=public_settings(settings),
        components={"featurizer": HashedRecordFeaturizer().describe(), "encoder": ContrastiveDetector(EncoderConfig(steps=params.encoder_steps)).describe(),
                    "store": {"backend": params.backend}},
        seeds={"seeds": params.seeds}, params={k: (list(v) if isinstance(v, tuple) else v) for k, v in params.__dict__.items() if k != "postgres_url"},
    )
    runlog = RunLog.open(output / "runlog.jsonl", header, resume=True)
    if runlog.header.params != header.params:
        runlog.close()
        raise ConfigError(f"{output / 'runlog.jsonl'} holds a run with other parameters; use another --output "
                          "(the earlier log is kept)")
    with runlog, _limit_threads():
        done = runlog.done_keys("seed")
        for seed in range(params.seeds):
            key = f"{params.kind}-{params.ratio}-{seed}"
            if key in done:
                log(f"seed {seed}: done in an earlier run, skipped")
                continue
            result = run_seed(params, seed, output, log)
            runlog.write("seed", key=key, **result)
            log(f"seed {seed}: AUC {result['auc']['proposed']:.3f} in {result['timings']['total_s']:.1f} s")
        results = [e.data for e in runlog.of_type("seed")]
    summary = aggregate(results)
    summary.update({
        "params": runlog.header.params, "run_log": str(output / "runlog.jsonl"),
        "records_per_seed": [r["records"] for r in results],
        "timings": {k: float(np.mean([r["timings"][k] for r in results])) for k in results[0]["timings"]},
        "poison_centroid_cosine": [r["poison_centroid_cosine"] for r in results],
        "auc_components": [r["auc_components"] for r in results],
    })
    (output / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    return summary
