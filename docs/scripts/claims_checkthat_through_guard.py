"""CheckThat-2020 dev and test tweets through ClaimGuard.check_many: the shipped decision and
the decision fitted across sources (runs/decision-i12.json); MAP@5 / P@1 from the verdicts'
candidates, flagged from their flags. Test: reporting only."""
from pathlib import Path
from misguard.config import load_settings
from misguard.embed import get_embedder
from misguard.claims import ClaimGuard, ClaimStore, average_precision_at, load_decision
from misguard.bench.claims._data import load_checkthat
import sys
ct = load_checkthat(Path("../shared/data")); store = ClaimStore.open(Path("runs/bench-claims/store-checkthat"), get_embedder(None, load_settings().embed))
for name, decision in (("shipped", None), ("across sources", load_decision("runs/decision-i12.json"))):
    guard = ClaimGuard(store, decision=decision)
    for split in ("dev", "test"):
        qs = ct.queries[split]
        v = [x for i in range(0, len(qs), 64) for x in guard.check_many([q.text for q in qs[i:i + 64]])]
        ids = [[c.claim_id for c in x.candidates] for x in v]
        n = len(qs)
        print(f"{name} {split}: ranking {guard.ranking}, MAP@5 {sum(average_precision_at(r, q.gold) for r, q in zip(ids, qs)) / n:.3f}, "
              f"P@1 {sum(r[0] in q.gold for r, q in zip(ids, qs)) / n:.3f}, flagged {sum(x.flagged for x in v) / n:.1%} of {n}", flush=True)
