"""The data behind `claims verify`'s sample bound (SAME_VECTOR): with e5, how similar is a
claim's stored vector to the same text embedded again, and to the nearest other claim?

    .venv/bin/python docs/scripts/claims_verify_sample_bound.py ../shared/data/claims/liar/test.tsv
"""

import sys

import numpy as np

from misguard.claims import read_claims
from misguard.embed import get_embedder

texts = list(dict.fromkeys(c.text for c in read_claims(sys.argv[1])))[:1000]
embedder = get_embedder("e5")
vectors = embedder.embed(texts, "passage")
sims = vectors @ vectors.T
np.fill_diagonal(sims, -1.0)
again = embedder.embed(texts[:64], "passage")
print(f"{len(texts)} distinct claims; nearest other claim: max cosine {sims.max():.4f}; "
      f"the same text again (64 claims, another batch): min cosine {np.einsum('ij,ij->i', vectors[:64], again).min():.7f}")
