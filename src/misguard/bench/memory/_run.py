"""`misguard bench memory`: poison the shared memory of MPE agents, detect, repair, measure.

Per seed: scenarios (MPE worlds, each with its own store) are split 60/20/20 into train /
validation / test. Every detector registered in `misguard.memory.DETECTORS` (or those
named in `--methods`) is wrapped in a `MemoryGuard`, fitted on the training scenarios,
given its threshold on the validation scenarios by best F1 (`MemoryGuard.fit`) and measured
on the test scenarios. With `holdout`, training and validation scenarios are poisoned with
the *other* attack types and only the test scenarios with the reported one.

Repair: every method repairs its own copy of each test scenario's store through
`MemoryGuard.guard_store` (the proposed detector with eq. 5 propagation repair, baselines
by isolating what they flag), then the same agents keep acting on that copy for the same
evaluation episodes, with the guard re-run over each window of new memories. "Before" is
the same episodes on an unrepaired copy.

Online containment (`online_window` > 0, the paper's "repair operations are dynamically
iterated during the task execution phase through a sliding window re-evaluation"): each
test scenario is built a second time from the same seed and the same attack (targets,
wrong actions, schedule), with the fitted proposed guard run through
`MemoryGuard.guard_store` every `online_window` cycles while the agents keep acting, so
later decisions retrieve repaired memory. Both builds are measured as written: the
propagation that actually happened (hops of every derived record, repaired later or not),
the greedy decisions' error rate during the build, and then the same evaluation episodes.

Labels: 1 = injected or modified poison, 0 = written by an honest agent. Honest records
that inherited a wrong action through reuse of poison ("derived") are excluded from
AUC/FPR (neither injected nor benign) but are what repair must also fix.

Propagation (`propagation`): hops from the nearest injected record to every affected record
on the provenance graph as written; before repair every derived record is affected, after
repair the derived records that are still active with a wrong action (including those
written during the evaluation episodes), so repair lowers the figure only by really
removing or correcting records, never by pruning edges or quarantining an intermediate.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...config import Settings
from ...errors import ConfigError
from ...memory import (
    DETECTORS,
    HashedRecordFeaturizer,
    MemoryGuard,
    MemoryStore,
    RecordArrays,
    SharedMemory,
    auc,
    hop_distances,
    open_store,
    task_of,
)
from ...runlog import RunHeader, RunLog, public_settings
from ._audit import field_separability
from ._mpe import ACTIONS, RECENCY_HALFLIFE, RECENCY_WEIGHT, Attack, Scenario, Truth, World, build_world, make_scenarios, reference_of

BUCKET_BITS = 5
EVAL_STEPS = 40
WINDOW = 8
STATE_BLOCK = HashedRecordFeaturizer().slices()["state"]
HIST_BINS = 1000
KINDS = ("I", "II", "III")


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
    methods: tuple[str, ...] = field(default_factory=tuple)  # empty: every registered detector
    holdout: bool = False
    eval_steps: int = EVAL_STEPS
    repair_rounds: int = 1  # guard_store passes before the evaluation episodes (each re-scores what is left)
    online_window: int = 0  # > 0: also rebuild each test scenario with the guard run every this many cycles
    online_horizon: int = 0  # online passes may repair records of the last this many cycles (0: any active record)
    repair_upstream: bool = True  # the proposed guard's repair also retraces reuse paths upstream (the default)
    first_seed: int = 0  # seeds first_seed .. first_seed + seeds - 1 (tuning runs use seeds the reports do not)

    def method_names(self) -> list[str]:
        names = list(self.methods) or DETECTORS.names()
        for m in names:
            DETECTORS.get(m)  # unknown names: a ConfigError listing the known ones
        return ["proposed"] + [m for m in names if m != "proposed"]


def _limit_threads() -> contextlib.AbstractContextManager[Any]:
    """One BLAS thread: the simulation does many small products, which threads only slow down."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - comes with scikit-learn
        return contextlib.nullcontext()
    return threadpool_limits(1)


def _scope(sc: Scenario) -> Callable[[Any], bool]:
    return lambda r: task_of(r) == sc.task


def _graph(store: MemoryStore, ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Memory -> memory reuse edges as written (pruned ones included) over record indices."""
    index = {rid: i for i, rid in enumerate(ids)}
    edges = [e for e in store.edges(include_pruned=True) if e.dst_kind == "memory" and e.src in index and e.dst in index]
    return (np.array([index[e.src] for e in edges], dtype=np.int64), np.array([index[e.dst] for e in edges], dtype=np.int64))


def propagation(store: MemoryStore, truth: dict[str, Truth], scope: Callable[[Any], bool] | None = None,
                records: list[Any] | None = None) -> dict[str, Any]:
    """Hops from the nearest injected record to every affected record (the paper's section 4.5).

    The propagation graph is the provenance graph as written: an edge m -> m' for every
    memory m that the decision recorded as m' retrieved and used (`derived_from`), pruned
    edges included, through records of any status, so repair cannot shorten or hide a chain
    by editing the graph. *Derived*: written by an honest agent (not exploring) with an
    action that differs from the reference policy and reachable from an injected record.
    *Affected* (the records whose hops are averaged): derived records that are still active
    and still carry a wrong action, i.e. not quarantined and not rewritten to a correct one
    (before repair: every derived record). `derived_hop_*`: the same over every derived
    record, repaired or not (the propagation that happened). Distances are from the nearest injected record
    (never longer than from "the first injected node" of the paper's definition).
    `records`: the store's records in scope, when the caller has just read them.
    """
    if records is None:
        records = [r for r in store.iter_records() if scope is None or scope(r)]
    ids = [r.id for r in records]
    active = {*store.ids("active")}
    src, dst = _graph(store, ids)
    n = len(ids)
    label = np.array([truth[i].label for i in ids])
    is_active = np.array([i in active for i in ids])
    wrong_now = np.array([ACTIONS.index(r.action) != reference_of(r) for r in records])
    wrong_orig = np.array([truth[i].action != truth[i].reference for i in ids])
    explore = np.array([truth[i].explore for i in ids])
    honest = (label == 0) & ~explore
    dist = hop_distances(n, src, dst, label == 1)
    derived = honest & wrong_orig & (dist > 0)
    affected = derived & is_active & wrong_now
    hist = np.bincount(dist[affected], minlength=1).tolist() if affected.any() else [0]
    return {"hop_sum": float(dist[affected].sum()), "hop_n": int(affected.sum()),
            "derived_hop_sum": float(dist[derived].sum()), "derived_hop_max": int(dist[derived].max()) if derived.any() else 0,
            "hop_max": int(dist[affected].max()) if affected.any() else 0, "hop_hist": hist,
            "affected": int(affected.sum()), "derived": int(derived.sum()), "poison": int((label == 1).sum()),
            "derived_ids": [ids[i] for i in np.flatnonzero(derived)]}


def _copy_store(src: MemoryStore, dst: MemoryStore, scope: Callable[[Any], bool] | None = None) -> None:
    records = [r for r in src.iter_records() if scope is None or scope(r)]
    keep = {r.id for r in records}
    for s in range(0, len(records), 5000):
        dst.add_many(records[s:s + 5000])
    dst.record_reuses((e.src, e.dst, e.dst_kind, e.agent) for e in src.edges() if e.src in keep and e.dst in keep)


def _guard_pass(guard: MemoryGuard, store: MemoryStore, since: float | None, scope: Callable[[Any], bool] | None,
                counts: dict[str, int], memory: SharedMemory | None = None) -> bool:
    """One repair pass (score, plan, apply) with its counts added to `counts`; re-indexes what
    `memory`'s agents retrieve when it changed anything. Returns whether it did."""
    _, _, plan, seqs = guard.guard_store(store, since=since, scope=scope)
    for k, v in plan.counts.items():
        counts[k] = counts.get(k, 0) + v
    if seqs and memory is not None:
        memory.refresh()
    return bool(seqs)


def _episodes(world_sc: Scenario, memory: SharedMemory, truth: dict[str, Truth], clock: int, seed: int, steps: int,
              guard: MemoryGuard | None, scope: Callable[[Any], bool]) -> tuple[int, int, dict[str, int]]:
    """The same greedy evaluation episodes for every method; the guard re-runs per window."""
    world = World(world_sc, memory, np.random.default_rng([seed, world_sc.sid, 99]), truth=truth, clock=clock, episode=10_000,
                  _next_id=10_000_000)  # eval ids never collide with the build's
    counts: dict[str, int] = {}
    start = float(clock)
    for step in range(steps):
        world.step(explore=False)
        if guard is not None and (step + 1) % WINDOW == 0:
            _guard_pass(guard, memory.store, start, scope, counts, memory)
            start = float(world.clock)
    return world.decisions, world.wrong, counts


def online_defense(guard: MemoryGuard, window: int, horizon: int, counts: dict[str, int]) -> Callable[[World, int], None]:
    """`build_world`'s `after_step`: every `window` cycles the guard repairs the memory written so
    far (records of the last `horizon` cycles, or any active record with 0) while agents act."""
    def after_step(world: World, step: int) -> None:
        if (step + 1) % window == 0:
            _guard_pass(guard, world.memory.store, None if horizon <= 0 else float(world.clock - horizon), None, counts, world.memory)
    return after_step


def build_metrics(world: World) -> dict[str, Any]:
    """The build phase as it happened: greedy (non-exploring) agent decisions and how many were
    wrong, and the propagation of the poisoned influence as written."""
    records = list(world.memory.store.iter_records())
    demos = {r.id for r in records if r.provenance.channel == "demo"}
    greedy = [t for rid, t in world.truth.items() if t.label == 0 and not t.explore and rid not in demos]
    prop = propagation(world.memory.store, world.truth, records=records)
    return {"decisions": len(greedy), "wrong": int(sum(t.action != t.reference for t in greedy)),
            "derived": prop["derived"], "hop_sum": prop["derived_hop_sum"], "hop_max": prop["derived_hop_max"],
            "affected_end": prop["affected"]}


def _repaired_ids(store: MemoryStore, actor: str = "memory-guard") -> set[str]:
    """Records the guard quarantined or rewrote (not the attacker's in-place rewrites, C2)."""
    return {e.target for e in store.audit_log()
            if e.action in ("quarantine", "rewrite") and e.actor == actor and not e.rolled_back}


def run_seed(params: BenchParams, seed: int, out_dir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    timings: dict[str, float] = {}
    t0, c0 = time.perf_counter(), time.process_time()
    methods = params.method_names()
    rng = np.random.default_rng([seed, 7])  # not the retrieval-tuning stream (see _mpe)
    feat = HashedRecordFeaturizer()
    scenarios = make_scenarios(params.scenarios, rng)
    perm = rng.permutation(len(scenarios))
    n_train, n_val = int(0.6 * len(perm)), int(0.2 * len(perm))
    split_of = {int(s): (0 if j < n_train else 1 if j < n_train + n_val else 2) for j, s in enumerate(perm)}
    per = max(200, params.records // params.scenarios)
    others = [k for k in KINDS if k != params.kind]

    def attack_for(sc: Scenario) -> Attack:
        kind = params.kind if (split_of[sc.sid] == 2 or not params.holdout) else others[sc.sid % len(others)]
        return Attack(kind, params.ratio, frozenset(params.capabilities))

    attempt = uuid.uuid4().hex[:6]  # an interrupted attempt's stores stay untouched
    folder = out_dir / f"seed{seed}-{attempt}"
    worlds: dict[int, World] = {}
    for sc in scenarios:
        worlds[sc.sid] = build_world(sc, folder / f"scenario{sc.sid}.db", np.random.default_rng([seed, sc.sid]), per, attack_for(sc), feat)
    timings["simulate_s"] = time.perf_counter() - t0

    # One column view over every scenario's memory (groups = scenarios), with labels.
    records, labels, split, offsets, embs = [], [], [], {}, []
    for sc in scenarios:
        w = worlds[sc.sid]
        recs, emb = w.memory.store.records_with_embeddings()  # every record the agents wrote is embedded
        derived = set(propagation(w.memory.store, w.truth, records=recs)["derived_ids"])
        offsets[sc.sid] = (len(records), len(records) + len(recs))
        records += recs
        embs.append(emb)
        labels += [2 if r.id in derived else w.truth[r.id].label for r in recs]
        split += [split_of[sc.sid]] * len(recs)
    arr = RecordArrays.from_records(records, emb=np.concatenate(embs))
    labels_a, split_a = np.array(labels, dtype=np.int8), np.array(split)
    train, val, test = (np.flatnonzero(split_a == k) for k in range(3))
    log(f"seed {seed}: {len(records)} records, {int((labels_a == 1).sum())} poisoned, {int((labels_a == 2).sum())} derived")
    separability = field_separability(records, labels_a)

    # Credibility (eq. 1) once for all methods; each detector fits, then gets its threshold.
    t1, c1 = time.perf_counter(), time.process_time()
    base = MemoryGuard(key_block=STATE_BLOCK, bucket_bits=BUCKET_BITS, causal=True)
    inputs = base.evidence(arr)
    timings["credibility_s"], cpu_cred = time.perf_counter() - t1, time.process_time() - c1
    guards: dict[str, MemoryGuard] = {}
    scores: dict[str, np.ndarray] = {}
    fit_s: dict[str, float] = {}
    for m in methods:
        t = time.perf_counter()
        det = DETECTORS.build(m, seed=seed, encoder_steps=params.encoder_steps, blocks=feat.slices())
        g = MemoryGuard(det, key_block=STATE_BLOCK, bucket_bits=BUCKET_BITS, causal=True,
                        repair="propagation" if m == "proposed" else "isolate", upstream=m == "proposed" and params.repair_upstream)
        g.fit(arr, labels_a, train, val, inputs=inputs)
        fit_s[m] = time.perf_counter() - t
        guards[m] = g
    t2, c2 = time.perf_counter(), time.process_time()
    for m in methods:
        scores[m] = guards[m].score(arr, inputs).p_poison
        if m == "proposed":
            timings["encode_s"], cpu_enc = time.perf_counter() - t2, time.process_time() - c2
    timings["fit_s"] = float(sum(fit_s.values()))
    timings.update({f"fit_{m}_s": v for m, v in fit_s.items()})
    timings["score_records_per_s"] = len(records) / (timings["credibility_s"] + timings["encode_s"])
    # The same per second of this process's CPU time (one BLAS thread): on a shared machine the
    # wall-clock rate measures the other jobs as much as the scoring.
    timings["score_records_per_cpu_s"] = len(records) / max(cpu_cred + cpu_enc, 1e-9)
    ok_test = test[labels_a[test] <= 1]
    aucs = {m: auc(scores[m][ok_test], labels_a[ok_test].astype(int)) for m in methods}
    extra_auc = {}
    prop = guards["proposed"].detector
    if hasattr(prop, "head"):
        extra_auc["encoder_head_only"] = auc(prop.head(inputs)[ok_test], labels_a[ok_test].astype(int))

    # Online containment: the test scenarios rebuilt from the same seeds and attacks, with the
    # fitted proposed guard repairing the memory every `online_window` cycles while agents act.
    tests = [sc for sc in scenarios if split_of[sc.sid] == 2]
    sources: dict[str, dict[int, World]] = {"before": worlds}
    online_counts: dict[int, dict[str, int]] = {}
    if params.online_window > 0:
        t4 = time.perf_counter()
        sources["online"] = {}
        for sc in tests:
            online_counts[sc.sid] = {}
            hook = online_defense(guards["proposed"], params.online_window, params.online_horizon, online_counts[sc.sid])
            sources["online"][sc.sid] = build_world(sc, folder / f"online-scenario{sc.sid}.db", np.random.default_rng([seed, sc.sid]),
                                                    per, attack_for(sc), feat, after_step=hook)
        timings["online_simulate_s"] = time.perf_counter() - t4

    # Repair and evaluation episodes on copies of the test scenarios' stores.
    t3 = time.perf_counter()
    units = []
    pg = open_store(params.postgres_url) if params.backend == "postgres" else None
    store_info: dict[str, Any] = {"backend": params.backend, "audit_entries": 0}
    try:
        for sc in tests:
            w = worlds[sc.sid]
            a, b = offsets[sc.sid]
            lab = labels_a[a:b]
            unit: dict[str, Any] = {"sid": sc.sid, "family": sc.family, "n": int(b - a),
                                    "poison": int((lab == 1).sum()), "derived": int((lab == 2).sum())}
            scope = _scope(sc)
            for m in ["before", *methods, *(["online"] if "online" in sources else [])]:
                src_world = sources.get(m, worlds)[sc.sid]
                if m == "online":  # evaluated on its own store: a copy would lose statuses and the audit log
                    store = src_world.memory.store
                elif m == "proposed" and pg is not None:
                    store = pg
                else:
                    store = open_store(folder / f"eval-{m}-{sc.sid}.db")
                with contextlib.ExitStack() as stack:
                    if store is not pg and m != "online":
                        stack.enter_context(store)
                    if m != "online":
                        _copy_store(src_world.memory.store, store, scope)
                    truth = dict(src_world.truth)
                    build = build_metrics(src_world) if m in ("before", "online") else {}  # before the episodes write more
                    guard = None if m == "before" else guards["proposed" if m == "online" else m]
                    counts: dict[str, int] = dict(online_counts.get(sc.sid, {})) if m == "online" else {}
                    # Re-evaluation: each round scores the memory the previous one left (quarantined records
                    # no longer count as evidence, rewritten ones count with their new action). The online
                    # build has been repaired while it was written: no post-hoc pass.
                    for _ in range(params.repair_rounds if m not in ("before", "online") else 0):
                        if not _guard_pass(guard, store, None, scope, counts):  # type: ignore[arg-type]
                            break
                    memory = SharedMemory(store, featurizer=feat, recency_halflife=RECENCY_HALFLIFE,
                                          recency_weight=RECENCY_WEIGHT, scope=scope)
                    d, wr, more = _episodes(sc, memory, truth, src_world.clock, seed, params.eval_steps, guard, scope)
                    for k, v in more.items():
                        counts[k] = counts.get(k, 0) + v
                    prop_now = propagation(store, truth, scope)
                    repaired = _repaired_ids(store) & {r for r in truth if scope_match(r, sc)}
                    bad = {r for r, t in truth.items() if t.label == 1} | set(prop_now["derived_ids"])
                    block: dict[str, Any] = {"decisions": d, "wrong": wr, "hop_sum": prop_now["hop_sum"], "hop_n": prop_now["hop_n"],
                                             "hop_max": prop_now["hop_max"], "affected": prop_now["affected"],
                                             "hop_hist": prop_now["hop_hist"], "derived_all": prop_now["derived"],
                                             "repaired": len(repaired), "repaired_benign": len(repaired - bad),
                                             "repaired_bad": len(repaired & bad), "bad": len(bad & {r for r in truth if scope_match(r, sc)}),
                                             "counts": counts}
                    if m in ("before", "online"):
                        block["build"] = build
                    else:
                        s_m, ok = scores[m][a:b], lab <= 1
                        pos, neg = s_m[ok & (lab == 1)], s_m[ok & (lab == 0)]
                        thr = guards[m].threshold
                        ref = scores[m][ok_test]
                        block.update({
                            "pos_hist": np.histogram(_unit_scale(pos, ref), bins=HIST_BINS, range=(0, 1))[0].tolist(),
                            "neg_hist": np.histogram(_unit_scale(neg, ref), bins=HIST_BINS, range=(0, 1))[0].tolist(),
                            "tp": int((pos >= thr).sum()), "fp": int((neg >= thr).sum()), "n_pos": int(len(pos)), "n_neg": int(len(neg)),
                        })
                    if m == "proposed":
                        store_info["audit_entries"] += len(store.audit_log()) if store is not pg else 0
                    unit[m] = block
            units.append(unit)
        if pg is not None:
            store_info.update(records=pg.count(), quarantined=pg.count("quarantined"), audit_entries=len(pg.audit_log()))
    finally:
        if pg is not None:
            pg.close()
        for group in sources.values():
            for w in group.values():
                w.memory.store.close()
    timings["repair_eval_s"] = time.perf_counter() - t3
    timings["total_s"] = time.perf_counter() - t0
    timings["total_cpu_s"] = time.process_time() - c0  # this process only (one BLAS thread)
    return {
        "seed": seed, "records": len(records), "units": units, "methods": methods,
        "thresholds": {m: guards[m].threshold for m in methods}, "auc": aucs, "auc_components": extra_auc,
        "detectors": {m: guards[m].detector.describe() for m in methods},
        "supervised": {m: bool(DETECTORS.get(m).metadata.get("supervised")) for m in methods},
        "field_separability": separability, "timings": timings, "store": store_info,
        "attacks": {"test": params.kind, "train_val": others if params.holdout else [params.kind]},
    }


def scope_match(record_id: str, sc: Scenario) -> bool:
    return record_id.startswith(sc.task[5:] + "-")


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
    methods = results[0]["methods"]
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(units), (resamples, len(units)))

    def ratio(get_num: Callable[[dict], float], get_den: Callable[[dict], float]) -> tuple[float, list[float]]:
        num = np.array([get_num(u) for u in units], dtype=float)
        den = np.array([get_den(u) for u in units], dtype=float)
        point = float(num.sum() / max(den.sum(), 1e-12))
        boot = num[idx].sum(axis=1) / np.maximum(den[idx].sum(axis=1), 1e-12)
        return point, [float(np.percentile(boot, 2.5)), float(np.percentile(boot, 97.5))]

    def effect(m: str) -> dict[str, Any]:
        mis, mis_ci = ratio(lambda u: u[m]["wrong"], lambda u: u[m]["decisions"])
        hops, hops_ci = ratio(lambda u: u[m]["hop_sum"], lambda u: u[m]["hop_n"])
        by_family = {}
        for fam in sorted({u["family"] for u in units}):
            fu = [u for u in units if u["family"] == fam]
            by_family[fam] = 1.0 - sum(u[m]["wrong"] for u in fu) / max(sum(u[m]["decisions"] for u in fu), 1)
        acc = list(by_family.values())
        return {
            "misbehavior": mis, "misbehavior_ci95": mis_ci, "hops": hops, "hops_ci95": hops_ci,
            "hops_max": int(max(u[m]["hop_max"] for u in units)),
            "affected_per_scenario": float(np.mean([u[m]["affected"] for u in units])),
            "accuracy_by_family": by_family, "accuracy_fluctuation": float((max(acc) - min(acc)) / 2) if acc else 0.0,
        }

    def method_block(m: str) -> dict[str, Any]:
        pos = np.array([u[m]["pos_hist"] for u in units], dtype=float)
        neg = np.array([u[m]["neg_hist"] for u in units], dtype=float)
        boot_auc = [_binned_auc(pos[i].sum(0), neg[i].sum(0)) for i in idx]
        per_seed = [r["auc"][m] for r in results]
        fpr, fpr_ci = ratio(lambda u: u[m]["fp"], lambda u: u[m]["n_neg"])
        tpr, _ = ratio(lambda u: u[m]["tp"], lambda u: u[m]["n_pos"])
        collateral, coll_ci = ratio(lambda u: u[m]["repaired_benign"], lambda u: u[m]["repaired"])
        coverage, cov_ci = ratio(lambda u: u[m]["repaired_bad"], lambda u: u[m]["bad"])
        eff = effect(m)
        return {
            "auc": float(np.nanmean(per_seed)), "auc_std": float(np.nanstd(per_seed)),
            "auc_ci95": [float(np.nanpercentile(boot_auc, 2.5)), float(np.nanpercentile(boot_auc, 97.5))],
            "fpr": fpr, "fpr_ci95": fpr_ci, "recall": tpr, "supervised": results[0]["supervised"][m],
            "misbehavior_after": eff["misbehavior"], "misbehavior_after_ci95": eff["misbehavior_ci95"],
            "hops_after": eff["hops"], "hops_after_ci95": eff["hops_ci95"], "hops_after_max": eff["hops_max"],
            "affected_after_per_scenario": eff["affected_per_scenario"],
            "repair_coverage": coverage, "repair_coverage_ci95": cov_ci, "collateral": collateral, "collateral_ci95": coll_ci,
            "accuracy_by_family": eff["accuracy_by_family"], "accuracy_fluctuation": eff["accuracy_fluctuation"],
        }

    def online_block() -> dict[str, Any]:
        """Without defense vs online defense: the build as written, then the same evaluation episodes."""
        out: dict[str, Any] = {}
        for m in ("before", "online"):
            builds = [u[m]["build"] for u in units]
            mis, mis_ci = ratio(lambda u, m=m: u[m]["build"]["wrong"], lambda u, m=m: u[m]["build"]["decisions"])
            hops, hops_ci = ratio(lambda u, m=m: u[m]["build"]["hop_sum"], lambda u, m=m: u[m]["build"]["derived"])
            out[m] = {"build_misbehavior": mis, "build_misbehavior_ci95": mis_ci, "hops_written": hops, "hops_written_ci95": hops_ci,
                      "hops_written_max": int(max(b["hop_max"] for b in builds)),
                      "derived_per_scenario": float(np.mean([b["derived"] for b in builds])),
                      "affected_end_of_build_per_scenario": float(np.mean([b["affected_end"] for b in builds])),
                      "eval": effect(m)}
        coll, coll_ci = ratio(lambda u: u["online"]["repaired_benign"], lambda u: u["online"]["repaired"])
        cov, cov_ci = ratio(lambda u: u["online"]["repaired_bad"], lambda u: u["online"]["bad"])
        out["online"].update({"collateral": coll, "collateral_ci95": coll_ci, "repair_coverage": cov, "repair_coverage_ci95": cov_ci,
                              "repaired_per_scenario": float(np.mean([u["online"]["repaired"] for u in units]))})
        return out

    before = effect("before")
    blocks = {m: method_block(m) for m in methods}
    main = blocks.pop("proposed")

    def shape(b: dict[str, Any]) -> dict[str, Any]:
        return {"auc": b["auc"], "fpr": b["fpr"], "misbehavior_before": before["misbehavior"], "misbehavior_after": b["misbehavior_after"],
                "hops_before": before["hops"], "hops_after": b["hops_after"], "details": b}

    out = shape(main)
    out["before"] = before
    out["misbehavior_before_ci95"], out["hops_before_ci95"] = before["misbehavior_ci95"], before["hops_ci95"]
    out["baselines"] = {m: shape(b) for m, b in blocks.items()}
    if "online" in units[0]:
        out["online"] = online_block()
    seps = [r["field_separability"] for r in results]
    out["field_separability_max"] = {k: float(max(s[k] for s in seps)) for k in seps[0]}
    return out


def run_memory_bench(settings: Settings, params: BenchParams, output: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """Run (or resume) the benchmark; the summary is rendered from the run log."""
    output.mkdir(parents=True, exist_ok=True)
    methods = params.method_names()
    header = RunHeader(
        kind="bench.memory", settings=public_settings(settings),
        components={"environment": {"package": "mpe2", "env": "simple_spread_v3", "max_cycles": 25},
                    "featurizer": HashedRecordFeaturizer().describe(),
                    "detectors": {m: dict(DETECTORS.get(m).metadata) for m in methods},
                    "retrieval": {"recency_halflife": RECENCY_HALFLIFE, "recency_weight": RECENCY_WEIGHT},
                    "store": {"backend": params.backend}},
        seeds={"seeds": params.seeds},
        params={k: (list(v) if isinstance(v, tuple) else v) for k, v in params.__dict__.items() if k != "postgres_url"},
    )
    runlog = RunLog.open(output / "runlog.jsonl", header, resume=True)
    defaults = {k: (list(v) if isinstance(v, tuple) else v) for k, v in BenchParams().__dict__.items()}

    def same(params: dict[str, Any]) -> dict[str, Any]:
        """Parameters that must match: not the seed count (seeds 0..N-1 are summarised, so a run
        can be extended or summarised early); a parameter a log predates ran with its default."""
        return {k: v for k, v in {**defaults, **params}.items() if k not in ("seeds", "postgres_url")}

    if same(runlog.header.params) != same(header.params):
        runlog.close()
        raise ConfigError(f"{output / 'runlog.jsonl'} holds a run with other parameters; use another --output "
                          "(the earlier log is kept)")
    with runlog, _limit_threads():
        done = runlog.done_keys("seed")
        seed_range = range(params.first_seed, params.first_seed + params.seeds)
        for seed in seed_range:
            key = f"{params.kind}-{params.ratio}-{seed}"
            if key in done:
                log(f"seed {seed}: done in an earlier run, skipped")
                continue
            result = run_seed(params, seed, output, log)
            runlog.write("seed", key=key, **result)
            log(f"seed {seed}: AUC {result['auc']['proposed']:.3f} in {result['timings']['total_s']:.1f} s")
        wanted = {f"{params.kind}-{params.ratio}-{seed}" for seed in seed_range}
        results = [e.data for e in runlog.of_type("seed") if e.key in wanted]
    summary = aggregate(results)
    summary.update({
        "params": {**runlog.header.params, "seeds": params.seeds}, "run_log": str(output / "runlog.jsonl"),
        "records_per_seed": [r["records"] for r in results],
        "timings": {k: float(np.mean([r["timings"][k] for r in results])) for k in results[0]["timings"]
                    if all(k in r["timings"] for r in results)},
        "auc_components": [r["auc_components"] for r in results],
    })
    (output / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    return summary
