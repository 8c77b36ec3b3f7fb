"""Shared memory of a framework app, guarded: every write is recorded in a misguard
`MemoryStore` with its provenance (the agent, and the records that agent read in the same
step as reuse edges), screened, and repairable with the store's audited actions
(quarantine, rewrite, rollback: nothing is deleted). The adapters' store wrappers ask
`resolve` what a read returns: the newest active version of the key, so a quarantined
write is no longer read back (an earlier write of the same key is, if one is active), a
rewritten one is read as rewritten, and a rollback brings back what it undoes.

The framework's own store keeps every value it was given: the guard decides what reads
return, never what is stored.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import ConfigError
from ..mas import EventLog
from ..types import MemoryRecord, Provenance

if TYPE_CHECKING:
    from ..memory import MemoryGuard, MemoryStore
    from ._core import Protection

#: Separates scope and key in a record's `state` (a namespace may contain "/").
_SEP = " :: "


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


#: `resolve` for a key the guard never saw written (the framework's value stands).
UNKNOWN: Any = _Missing()
#: `resolve` for a key whose every write is quarantined, or that was deleted.
HIDDEN: Any = _Missing()


@dataclass(frozen=True)
class MemoryVerdict:
    """A screen's decision on one written value."""

    flagged: bool
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class MemoryScreen(Protocol):
    """Checks a value as it is written; a flagged write is quarantined at once."""

    name: str

    def check(self, text: str) -> MemoryVerdict: ...

    def describe(self) -> dict[str, Any]: ...


class ClaimMemoryScreen:
    """Flags writes that repeat a known false claim (`misguard.claims.ClaimGuard`)."""

    name = "claim-guard"

    def __init__(self, guard: Any) -> None:
        self.guard = guard

    def check(self, text: str) -> MemoryVerdict:
        verdict = self.guard.check(text)
        ev = verdict.evidence[0] if verdict.evidence else None
        details: dict[str, Any] = {"score": round(float(verdict.score), 6)}
        if ev is not None and ev.claim is not None:
            details.update(claim_id=ev.claim.id, claim=ev.claim.text[:300])
        return MemoryVerdict(verdict.flagged, "repeats a known false claim" if verdict.flagged else "", details)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "guard": self.guard.describe()}


@dataclass(frozen=True)
class WriteResult:
    record_id: str
    quarantined: bool
    read: tuple[str, ...]
    verdicts: dict[str, MemoryVerdict]


def value_text(value: Any) -> str:
    """The text of a written value the screens read and the record keeps (JSON for data)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def _text_value(text: str, like: Any) -> Any:
    """A record's (possibly rewritten) text back as a value of the written kind."""
    if isinstance(like, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


class GuardedMemory:
    """The misguard side of a framework's shared memory.

    Args:
        store: a `misguard.memory.MemoryStore`, or a SQLite path / PostgreSQL URL for one.
        screens: checks run on every write (e.g. `ClaimMemoryScreen`).
        protection: log memory actions into this protection's event log (the messages'
            log), so one log holds a run; default: an own in-memory log.
    """

    def __init__(
        self, store: MemoryStore | str | Path, *, screens: Sequence[MemoryScreen] = (),
        protection: Protection | None = None,
    ) -> None:
        from ..memory import HashedRecordFeaturizer, open_store

        self.store = open_store(store) if isinstance(store, (str, Path)) else store
        for screen in screens:
            if not isinstance(screen, MemoryScreen):
                raise ConfigError(f"{screen!r} is not a memory screen (needs name, check(text), describe())")
        self.screens = list(screens)
        self.protection = protection
        self.log = protection.log if protection is not None else EventLog(meta={"kind": "memory"})
        self.featurizer = HashedRecordFeaturizer()
        self._lock = threading.RLock()
        #: (scope, key) -> record ids newest last; None marks a delete
        self._index: dict[tuple[str, str], list[str | None]] = defaultdict(list)
        self._kinds: dict[str, Any] = {}
        #: (agent, step) -> record ids that agent read in that step
        self._reads: dict[tuple[str, Hashable], list[str]] = defaultdict(list)
        self._reload()

    def _reload(self) -> None:
        """Rebuild the key index from the store (a store reopened after a restart)."""
        records = sorted(self.store.iter_records(), key=lambda r: (r.provenance.time, r.id))
        for record in records:
            scope, _, key = record.state.partition(_SEP)
            self._index[(scope, key)].append(record.id)

    def _event(self, type: str, **data: Any) -> None:
        if self.protection is not None:
            self.protection.record(type, **data)
        else:
            self.log.add(type, **data)

    # -- writes ----------------------------------------------------------------------------

    def write(
        self, scope: str, key: str, value: Any, *, agent: str, step: Hashable = None, text: str | None = None,
    ) -> WriteResult:
        """Record a write by `agent`, link it to what `agent` read in `step`, screen it
        (`text`: what the screens read, e.g. a message's words without its JSON envelope)."""
        screened = text if text is not None else value_text(value)
        text = value_text(value)
        with self._lock:
            read = tuple(dict.fromkeys(self._reads.get((agent, step), ())))
            record = MemoryRecord(
                state=f"{scope}{_SEP}{key}", context=f"task={scope}; key={key}", action=text,
                tags=["framework-write"], provenance=Provenance(agent=agent, channel="framework"),
            )
            record.embedding = self.featurizer.embed([record])[0].tolist()
            self.store.add(record)
            if read:
                self.store.record_reuses([(src, record.id, "memory", agent) for src in read])
            self._index[(scope, key)].append(record.id)
            self._kinds[record.id] = value
        verdicts = {s.name: s.check(screened) for s in self.screens}
        flagged = [name for name, v in verdicts.items() if v.flagged]
        self._event("memory_write", record_id=record.id, agent=agent, scope=scope, key=key, read=list(read),
                    text=text[:2000], screens={n: {"flagged": v.flagged, "reason": v.reason, **v.details}
                                               for n, v in verdicts.items()})
        if flagged:
            reason = "; ".join(f"{n}: {verdicts[n].reason}" for n in flagged)
            self.quarantine(record.id, reason, actor="screen")
        return WriteResult(record.id, bool(flagged), read, verdicts)

    def delete(self, scope: str, key: str, *, agent: str) -> None:
        """A delete by the app: reads of the key return nothing until it is written again."""
        with self._lock:
            self._index[(scope, key)].append(None)
        self._event("memory_delete", agent=agent, scope=scope, key=key)

    # -- reads -----------------------------------------------------------------------------

    def resolve(self, scope: str, key: str, *, agent: str | None = None, step: Hashable = None) -> Any:
        """What a read of (scope, key) returns: the value of the newest active write, HIDDEN
        when every write since the last delete is quarantined, UNKNOWN when the guard never
        saw the key written. A read by `agent` in `step` is remembered as provenance."""
        with self._lock:
            history = list(self._index.get((scope, key), ()))
        if not history:
            return UNKNOWN
        skipped = []
        for record_id in reversed(history):
            if record_id is None:
                break
            if self.store.status(record_id) != "active":
                skipped.append(record_id)
                continue
            if agent is not None:
                with self._lock:
                    self._reads[(agent, step)].append(record_id)
            if skipped:
                self._event("memory_read_hidden", agent=agent, scope=scope, key=key, hidden=skipped, served=record_id)
            head = self.store.get(record_id)
            return _text_value(head.action, self._kinds.get(record_id, head.action))
        if skipped:
            self._event("memory_read_hidden", agent=agent, scope=scope, key=key, hidden=skipped, served=None)
        return HIDDEN

    def note_read(self, record_ids: Sequence[str], *, agent: str, step: Hashable = None) -> None:
        with self._lock:
            self._reads[(agent, step)].extend(record_ids)

    def end_step(self, agent: str, step: Hashable = None) -> None:
        """Forget what `agent` read in `step` (its writes are linked to those reads until then)."""
        with self._lock:
            self._reads.pop((agent, step), None)

    def record_id(self, scope: str, key: str) -> str | None:
        """The newest write of (scope, key), active or not."""
        with self._lock:
            history = [r for r in self._index.get((scope, key), ()) if r is not None]
        return history[-1] if history else None

    # -- repair (audited; `rollback` undoes any of them) -------------------------------------

    def quarantine(self, record_id: str, reason: str, actor: str = "operator") -> int:
        seq = self.store.quarantine(record_id, reason, actor=actor)
        self._event("memory_quarantine", record_id=record_id, reason=reason, actor=actor, seq=seq)
        return seq

    def release(self, record_id: str, reason: str, actor: str = "operator") -> int:
        seq = self.store.release(record_id, reason, actor=actor)
        self._event("memory_release", record_id=record_id, reason=reason, actor=actor, seq=seq)
        return seq

    def rewrite(self, record_id: str, value: Any, reason: str, actor: str = "operator") -> int:
        """A new version of the record with `value` (the old one is kept)."""
        text = value_text(value)
        head = self.store.get(record_id)
        changed = head.model_copy(update={"action": text})
        seq = self.store.rewrite(record_id, {"action": text, "embedding": self.featurizer.embed([changed])[0].tolist()},
                                 reason, actor=actor)
        self._event("memory_rewrite", record_id=record_id, reason=reason, actor=actor, seq=seq, text=text[:2000])
        return seq

    def rollback(self, seq: int, actor: str = "operator") -> int:
        """Undo audited action `seq` (a quarantine, release or rewrite); itself audited."""
        new = self.store.rollback(seq, actor=actor)
        self._event("memory_rollback", seq=seq, rollback_seq=new, actor=actor)
        return new

    def repair(self, guard: MemoryGuard, *, since: float | None = None) -> dict[str, int]:
        """Run a `MemoryGuard` pass (score, plan, apply; audited) over the framework writes."""
        started = time.time()
        _, _, plan, seqs = guard.guard_store(self.store, since=since,
                                             scope=lambda r: "framework-write" in r.tags)
        counts = {k: int(v) for k, v in (plan.counts or {}).items()}
        self._event("memory_repair", seqs=seqs, counts=counts, wall_s=time.time() - started)
        return counts

    def audit(self) -> list[Any]:
        return self.store.audit_log()

    def describe(self) -> dict[str, Any]:
        return {"store": self.store.backend, "screens": [s.describe() for s in self.screens]}
