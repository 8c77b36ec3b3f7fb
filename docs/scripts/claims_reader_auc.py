"""How well the pair reader's score separates the decision's rows, next to the best-segment
cosine s1: ROC AUC per source over the English rows of a `bench claims --reader` run log
(out-of-fold reader scores for the CheckThat train tweets; every other row is a text the
reader never saw).

    python docs/scripts/claims_reader_auc.py RUN/runlog.jsonl
"""
import sys
from collections import defaultdict

from sklearn.metrics import roc_auc_score

from misguard.claims import FEATURES
from misguard.runlog import read_runlog

_, events = read_runlog(sys.argv[1])
reader, s1 = FEATURES.index("reader_en"), FEATURES.index("s1")
rows = defaultdict(list)
for e in events:
    if e.type == "row" and e.data["lang"] == "en":
        rows[e.data["source"]].append((e.data["label"], e.data["x"][reader], e.data["x"][s1]))
for source, items in sorted(rows.items()):
    y = [label for label, _, _ in items]
    print(f"{source}: {len(items)} English rows ({sum(y)} should flag); AUC reader {roc_auc_score(y, [r for _, r, _ in items]):.3f}, "
          f"s1 {roc_auc_score(y, [s for _, _, s in items]):.3f}")
