"""Memory guard: shared agent memory with provenance, poisoning detection and repair.

    store = open_store("memory.db")                 # or "postgresql://user@host/db"
    memory = SharedMemory(store)                    # hashed featuriser, or pass e5's embed
    memory.write([MemoryRecord(state=..., action=..., provenance=Provenance(agent="a1"))])
    hits = memory.retrieve(state, context, agent="a2")     # recorded as reuse edges
    MemoryGuard().guard_store(store)                # credibility (no labels), repair (audited)
    store.rollback(seq)                             # undo any audit entry

torch, scikit-learn and SQLAlchemy are imported where used (extra `memory`; PostgreSQL
needs extra `postgres`).
"""

from ..types import MemoryRecord, Provenance
from ._baselines import auc, best_f1_threshold, residual_scores
from ._detectors import DETECTORS, DetectorInputs, MemoryDetector, metadata_matrix
from ._credibility import (
    CredibilityResult,
    EvidenceGraph,
    credibility,
    knn_within_groups,
    relational_features,
    state_key,
)
from ._encoder import ContrastiveDetector, EncoderConfig
from ._features import HashedRecordFeaturizer, record_fields, record_text
from ._graph import hop_distances, mean_hops
from ._guard import GuardScores, MemoryGuard, RecordArrays, task_of
from ._repair import GAMMAS, THETA_R, RepairPlan, apply_repair, plan_repair
from ._shared import SharedMemory
from ._store import (
    MEMORY_BACKENDS,
    AuditEntry,
    MemoryStore,
    PostgresMemoryStore,
    ReuseEdge,
    SQLiteMemoryStore,
    SQLMemoryStore,
    open_store,
)
from ._verify import MemoryCheck, MemoryVerifyReport, verify_memory_store

__all__ = [
    "DETECTORS", "GAMMAS", "MEMORY_BACKENDS", "THETA_R",
    "AuditEntry", "DetectorInputs", "MemoryDetector", "ContrastiveDetector", "CredibilityResult", "EncoderConfig",
    "EvidenceGraph", "GuardScores", "HashedRecordFeaturizer", "MemoryGuard", "MemoryRecord", "MemoryStore",
    "PostgresMemoryStore", "Provenance", "RecordArrays", "RepairPlan", "ReuseEdge", "SQLMemoryStore",
    "SQLiteMemoryStore", "SharedMemory",
    "apply_repair", "auc", "best_f1_threshold", "credibility", "hop_distances", "knn_within_groups",
    "mean_hops", "metadata_matrix", "open_store", "plan_repair", "record_fields", "record_text", "relational_features",
    "residual_scores", "state_key", "task_of",
    "MemoryCheck", "MemoryVerifyReport", "verify_memory_store",
]
