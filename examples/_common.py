"""Shared by the examples: the sample fact-check store and the command-line options."""

from __future__ import annotations

import argparse
from pathlib import Path

from misguard.claims import ClaimStore, read_claims
from misguard.embed import get_embedder

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "misguard" / "claims" / "data" / "sample_claims.jsonl"
#: A claim the sample store rates false, as a misled agent would repeat it.
FALSE_CLAIM = "the Great Wall of China can be seen with the naked eye from the Moon"


def options(description: str, argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--fake", action="store_true", help="scripted model answers (no server needed)")
    parser.add_argument("--base-url", default="http://127.0.0.1:8000/v1",
                        help="an OpenAI-compatible server, e.g. `misguard models serve local/qwen2.5-1.5b`")
    parser.add_argument("--model", default="qwen2.5-1.5b", help="the model name the server knows")
    parser.add_argument("--workdir", default="example-run", help="where the claim store and event log go")
    parser.add_argument("--embedder", default="e5", help="embedder of the claim store (e5: the fitted decision)")
    parser.add_argument("--threshold", type=float, default=None,
                        help="a plain cosine threshold (for embedders no decision was fitted for)")
    return parser.parse_args(argv)


def claim_store(args: argparse.Namespace) -> ClaimStore:
    """The sample fact checks in a store under the work directory (built once)."""
    path = Path(args.workdir) / f"claims-{args.embedder.replace('/', '-')}"
    store = ClaimStore.open(path, get_embedder(args.embedder), create=True)
    if not len(store):
        store.add(read_claims(SAMPLE))
    return store


def claim_params(args: argparse.Namespace) -> dict:
    return {"claim-guard": {"mode": "correct", **({"threshold": args.threshold} if args.threshold else {})}}
