"""Integrity of a shared memory store: `verify_memory_store` checks that the heads, the
version history, the reuse edges and the audit log agree with each other.

    database    SQLite: PRAGMA integrity_check (PostgreSQL keeps its own pages: connectivity)
    heads       each record's head is its newest version, stored identically in the history
    versions    every history row belongs to a record; versions run without gaps
    embeddings  whole float32 vectors, finite, one width
    edges       every reuse edge starts at a stored record, ends at one (or a decision),
                and has a finite weight
    audit       every entry is readable, names an action the store makes, and a target that
                exists; rolled-back entries and their rollbacks pair up
    replay      replaying the audit log from "every record active, every edge at weight 1"
                gives each record's status, each edge's weight and pruning, and each
                record's number of versions: the log explains the whole state

A repair that crashed half-way would show up here (a status the log does not explain, an
audit entry whose change is missing); `batch()` makes that impossible on SQL backends.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._store import SQLMemoryStore

#: Actions the store writes to its audit log (`SQLMemoryStore`).
ACTIONS = frozenset({"quarantine", "release", "rewrite", "dilute", "prune", "rollback"})
#: Columns a head and its version row must agree on.
_RECORD_COLUMNS = ("agent", "time", "channel", "state", "context", "action", "tags", "success", "reward",
                   "confidence", "embedding")


@dataclass
class MemoryCheck:
    name: str
    ok: bool
    detail: str


@dataclass
class MemoryVerifyReport:
    """What `verify_memory_store` found."""

    location: str
    records: int
    edges: int
    audit_entries: int
    checks: list[MemoryCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def problems(self) -> list[MemoryCheck]:
        return [c for c in self.checks if not c.ok]

    def to_dict(self) -> dict[str, object]:
        return {"location": self.location, "ok": self.ok, "records": self.records, "edges": self.edges,
                "audit_entries": self.audit_entries, "checks": [vars(c) for c in self.checks]}


def verify_memory_store(store: SQLMemoryStore, *, location: str = "", limit: int = 5) -> MemoryVerifyReport:
    """Check `store` (see the module docstring), reading it in one transaction. `limit`:
    examples named per failed check."""
    location = location or store.backend
    try:
        with store._engine.connect() as conn, conn.begin():  # one snapshot of every table
            database = _check_database(store, conn)
            if not database.ok:  # the rows cannot be trusted (or read): say so and stop
                return MemoryVerifyReport(location, 0, 0, 0, [database])
            heads = [dict(r._mapping) for r in conn.execute(store._mem.select().order_by(store._mem.c.seq))]
            versions = [dict(r._mapping) for r in conn.execute(store._ver.select())]
            edges = [dict(r._mapping) for r in conn.execute(store._edges.select().order_by(store._edges.c.id))]
            audit = [dict(r._mapping) for r in conn.execute(store._audit.select().order_by(store._audit.c.seq))]
    except store._sa.exc.SQLAlchemyError as exc:
        reason = getattr(exc, "orig", None) or exc
        return MemoryVerifyReport(location, 0, 0, 0, [MemoryCheck(
            "database", False, f"cannot be read ({reason}); restore a backup of the store")])
    report = MemoryVerifyReport(location, len(heads), len(edges), len(audit))
    report.checks = [
        database,
        _check_heads(heads, versions, limit),
        _check_versions(heads, versions, limit),
        _check_embeddings(heads, versions, limit),
        _check_edges(heads, edges, limit),
    ]
    entries, audit_check = _check_audit(heads, edges, audit, limit)
    report.checks.append(audit_check)
    report.checks.append(_check_replay(heads, versions, edges, entries, limit))
    return report


def _check_database(store: SQLMemoryStore, conn: Any) -> MemoryCheck:
    if store.backend == "sqlite":
        rows = [r[0] for r in conn.exec_driver_sql("PRAGMA integrity_check")]
        if rows == ["ok"]:
            return MemoryCheck("database", True, "PRAGMA integrity_check: ok")
        return MemoryCheck("database", False, "PRAGMA integrity_check: " + "; ".join(r.replace("\n", "; ") for r in rows[:5])
                           + "; restore a backup of the store")
    conn.exec_driver_sql("SELECT 1")
    return MemoryCheck("database", True, f"{store.backend}: reachable (the server checks its own pages)")


def _examples(items: list[str], limit: int) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _check_heads(heads: list[dict], versions: list[dict], limit: int) -> MemoryCheck:
    by_key = {(v["id"], v["version"]): v for v in versions}
    newest: dict[str, int] = {}
    for v in versions:
        newest[v["id"]] = max(newest.get(v["id"], v["version"]), v["version"])
    bad = []
    for h in heads:
        row = by_key.get((h["id"], h["version"]))
        if row is None:
            bad.append(f"{h['id']}: head version {h['version']} not in the history")
        elif newest[h["id"]] != h["version"]:
            bad.append(f"{h['id']}: head is version {h['version']}, the newest is {newest[h['id']]}")
        elif any(row[c] != h[c] for c in _RECORD_COLUMNS):
            bad.append(f"{h['id']}: head differs from its version row ({[c for c in _RECORD_COLUMNS if row[c] != h[c]]})")
        elif h["status"] not in ("active", "quarantined"):
            bad.append(f"{h['id']}: unknown status {h['status']!r}")
    if bad:
        return MemoryCheck("heads", False, _examples(bad, limit))
    return MemoryCheck("heads", True, f"{len(heads)} heads, each its newest version")


def _check_versions(heads: list[dict], versions: list[dict], limit: int) -> MemoryCheck:
    ids = {h["id"] for h in heads}
    by_id: dict[str, list[int]] = defaultdict(list)
    for v in versions:
        by_id[v["id"]].append(v["version"])
    bad = [f"{rid}: history without a record" for rid in by_id if rid not in ids]
    for rid, numbers in by_id.items():
        numbers.sort()
        if numbers != list(range(numbers[0], numbers[0] + len(numbers))):
            bad.append(f"{rid}: versions {numbers} have gaps")
    if bad:
        return MemoryCheck("versions", False, _examples(bad, limit))
    return MemoryCheck("versions", True, f"{len(versions)} versions of {len(by_id)} records, no gaps")


def _check_embeddings(heads: list[dict], versions: list[dict], limit: int) -> MemoryCheck:
    import numpy as np

    widths: Counter[int] = Counter()
    bad = []
    for row in [*heads, *versions]:
        blob = row["embedding"]
        if blob is None:
            continue
        if len(blob) % 4:
            bad.append(f"{row['id']}: embedding of {len(blob)} bytes, not whole float32 values")
            continue
        vec = np.frombuffer(blob, dtype=np.float32)
        if not np.isfinite(vec).all():
            bad.append(f"{row['id']}: embedding with NaN or infinite values")
        widths[len(vec)] += 1
    if len(widths) > 1:
        bad.append(f"embeddings of {len(widths)} widths: {dict(widths)}")
    if bad:
        return MemoryCheck("embeddings", False, _examples(bad, limit))
    return MemoryCheck("embeddings", True, f"{sum(widths.values())} embeddings" + (f" of width {next(iter(widths))}" if widths else ""))


def _check_edges(heads: list[dict], edges: list[dict], limit: int) -> MemoryCheck:
    ids = {h["id"] for h in heads}
    bad = []
    for e in edges:
        if e["src"] not in ids:
            bad.append(f"edge {e['id']}: source {e['src']!r} is not stored")
        if e["dst_kind"] not in ("memory", "decision"):
            bad.append(f"edge {e['id']}: unknown kind {e['dst_kind']!r}")
        elif e["dst_kind"] == "memory" and e["dst"] not in ids:
            bad.append(f"edge {e['id']}: destination {e['dst']!r} is not stored")
        if not math.isfinite(e["weight"]):
            bad.append(f"edge {e['id']}: weight {e['weight']}")
    if bad:
        return MemoryCheck("edges", False, _examples(bad, limit))
    return MemoryCheck("edges", True, f"{len(edges)} reuse edges, {sum(bool(e['pruned']) for e in edges)} pruned")


def _check_audit(heads: list[dict], edges: list[dict], audit: list[dict], limit: int) -> tuple[list[dict], MemoryCheck]:
    """Parse the log (entries that cannot be read are left out of the replay)."""
    ids = {h["id"] for h in heads}
    edge_ids = {str(e["id"]) for e in edges}
    seqs = {a["seq"]: a for a in audit}
    bad, entries = [], []
    rollbacks_of: Counter[int] = Counter()
    for a in audit:
        try:
            entry = {**a, "before": json.loads(a["before"]), "after": json.loads(a["after"])}
        except (TypeError, ValueError):
            bad.append(f"entry {a['seq']}: before/after are not JSON")
            continue
        action, target = entry["action"], entry["target"]
        if action not in ACTIONS:
            bad.append(f"entry {a['seq']}: unknown action {action!r}")
            continue
        if action in ("quarantine", "release", "rewrite") and target not in ids:
            bad.append(f"entry {a['seq']}: {action} of record {target!r}, which is not stored")
        elif action in ("dilute", "prune") and target not in edge_ids:
            bad.append(f"entry {a['seq']}: {action} of edge {target}, which is not stored")
        elif action == "rollback":
            original = seqs.get(int(target)) if target.isdigit() else None
            if original is None or int(target) >= a["seq"]:
                bad.append(f"entry {a['seq']}: rollback of entry {target}, which does not precede it")
            else:
                rollbacks_of[int(target)] += 1
        entries.append(entry)
    for a in audit:
        count = rollbacks_of.get(a["seq"], 0)
        if bool(a["rolled_back"]) != (count == 1) or count > 1:
            bad.append(f"entry {a['seq']}: marked {'rolled back' if a['rolled_back'] else 'not rolled back'}, "
                       f"with {count} rollback entries")
    check = (MemoryCheck("audit", False, _examples(bad, limit)) if bad
             else MemoryCheck("audit", True, f"{len(audit)} entries, {sum(rollbacks_of.values())} rolled back"))
    return entries, check


def _check_replay(heads: list[dict], versions: list[dict], edges: list[dict], entries: list[dict],
                  limit: int) -> MemoryCheck:
    status = {h["id"]: "active" for h in heads}
    weight = {str(e["id"]): 1.0 for e in edges}
    pruned = {str(e["id"]): False for e in edges}
    new_versions: Counter[str] = Counter()
    by_seq = {e["seq"]: e for e in entries}
    for e in entries:
        action, target, after = e["action"], e["target"], e["after"]
        if action == "rollback":
            original = by_seq.get(int(target)) if target.isdigit() else None
            if original is None:
                continue
            action, target = original["action"], original["target"]
            if action == "rewrite":  # the old version is written again as the newest one
                new_versions[target] += 1
                continue
        elif action == "rewrite":
            new_versions[target] += 1
            continue
        if action in ("quarantine", "release") and target in status and "status" in after:
            status[target] = after["status"]
        elif action == "dilute" and target in weight and "weight" in after:
            weight[target] = float(after["weight"])
        elif action == "prune" and target in pruned and "pruned" in after:
            pruned[target] = bool(after["pruned"])
    count: Counter[str] = Counter(v["id"] for v in versions)
    bad = [f"record {h['id']}: status {h['status']}, the log says {status[h['id']]}"
           for h in heads if h["status"] != status[h["id"]]]
    bad += [f"record {h['id']}: {count[h['id']]} versions, the log explains {1 + new_versions[h['id']]}"
            for h in heads if count[h["id"]] != 1 + new_versions[h["id"]]]
    for e in edges:
        key = str(e["id"])
        if bool(e["pruned"]) != pruned[key]:
            bad.append(f"edge {key}: pruned={bool(e['pruned'])}, the log says {pruned[key]}")
        if not math.isclose(e["weight"], weight[key], rel_tol=1e-9, abs_tol=1e-12):
            bad.append(f"edge {key}: weight {e['weight']}, the log says {weight[key]}")
    if bad:
        return MemoryCheck("replay", False, _examples(bad, limit))
    return MemoryCheck("replay", True, "the audit log explains every status, version, weight and pruning")


__all__ = ["MemoryCheck", "MemoryVerifyReport", "verify_memory_store"]
