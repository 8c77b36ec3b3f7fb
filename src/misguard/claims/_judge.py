"""The judge agent of a document check: the manager's notifications, the document report,
and the audit that every chunk was examined and every detection notified."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..types import Verdict, VerdictLabel
from ._crawl import Chunk


def _notice(verdict: Verdict) -> str:
    claim = verdict.evidence[0].claim if verdict.evidence else None
    if claim is None:
        return "This text may contain misinformation."
    source = f" ({claim.publisher})" if claim.publisher else ""
    return f"This text repeats a claim rated {claim.verdict_original or claim.verdict.value}{source}: {claim.text}"


@dataclass
class Notification:
    chunk_id: str
    claim_id: str | None
    message: str


@dataclass
class DocumentReport:
    doc_id: str
    chunks: list[Chunk]
    verdicts: dict[str, Verdict]
    notifications: list[Notification]
    discrepancies: list[str] = field(default_factory=list)

    @property
    def flagged(self) -> bool:
        return bool(self.notifications)


class JudgeAgent:
    """Checks the manager's work: every chunk examined, notifications == detections."""

    def audit(self, report: DocumentReport) -> list[str]:
        problems = []
        for chunk in report.chunks:
            if chunk.id not in report.verdicts:
                problems.append(f"chunk {chunk.id} was never examined by the detection agent")
        notified = {n.chunk_id for n in report.notifications}
        for chunk_id, verdict in report.verdicts.items():
            if verdict.flagged and chunk_id not in notified:
                problems.append(f"chunk {chunk_id} was flagged but the user was not notified")
            if not verdict.flagged and chunk_id in notified:
                problems.append(f"chunk {chunk_id} was not flagged but a notification was sent")
            if verdict.flagged:
                claim = verdict.evidence[0].claim if verdict.evidence else None
                if claim is None or claim.verdict not in (VerdictLabel.FALSE, VerdictLabel.MOSTLY_FALSE):
                    problems.append(f"chunk {chunk_id} was flagged without a false-rated matching claim")
        for n in report.notifications:
            if n.chunk_id not in report.verdicts:
                problems.append(f"notification for unknown chunk {n.chunk_id}")
        return problems
