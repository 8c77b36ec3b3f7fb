"""The claim guard against the red-team transformations, on the multilingual dev set.

Store: the dev set's 40 false claims among `distractors` false LIAR/Snopes claims (2,000 by
default). Each query keeps its task wrapper ("Translate from French to English: ") and the
transformation disguises what follows it (the claim the wrapper carries); a transformation
applies only to queries in its languages (code-switching to English ones, transliteration
to Hindi, Arabic and Chinese ones). Markup transformations write a page, read by
`ClaimGuard.check_document` (the page checker the extension and `/v1/check/page` use); a
page is flagged when any of its chunks is.

Arms: `hardened` (the guard as shipped) and `unhardened` (the same guard with its
`unmask` steps and its injection screen off), so the suite says what the hardening buys
(the crawler's reading of markup and the invisible characters `clean_text` drops are not
switched off: the markup family's "before" is the figure measured before they changed). Split: the claims are
split in two halves by a fixed seed (`SPLIT_SEED`, grouped by claim: a true query goes with
its near false claim); constants are chosen on `dev` and reported on `test`.

Measures per arm and transformation: detection (false queries flagged) and false flags
(near-miss true queries flagged), before (undisguised) and after, with bootstrap intervals
over claims, and the paired change.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from ...attacks.transforms import Context, Pipeline, compose
from ...claims import (
    DEFAULT_UNMASK,
    ClaimGuard,
    ClaimStore,
    Decision,
    load_devset,
    load_distractors,
    strip_instructions,
)
from ...claims._sources import Query
from ...config import Settings
from ...embed import get_embedder
from ...errors import ConfigError
from ...runlog import RunHeader, RunLog, public_settings
from ..claims import resolve_data_dir
from ._report import render_report

SPLIT_SEED = 0
ARMS = ("hardened", "unhardened")
#: the undisguised baseline, for text and for pages
BASELINE, PAGE_BASELINE = "none", "markup-plain"


def split_groups(groups: Sequence[str], split: str) -> set[str]:
    """The claim groups of `split` ("dev", "test" or "all"), a fixed half by `SPLIT_SEED`."""
    ordered = sorted(set(groups))
    if split == "all":
        return set(ordered)
    if split not in ("dev", "test"):
        raise ConfigError(f"split is dev, test or all, not {split!r}")
    dev = set(random.Random(SPLIT_SEED).sample(ordered, len(ordered) // 2))
    return dev if split == "dev" else set(ordered) - dev


def disguise(query: Query, pipeline: Pipeline, *, seed: int, llm: Any = None) -> str:
    """The query with its claim disguised (the task wrapper kept in front); a markup
    transformation writes the whole query into its page, as the plain page has it."""
    if pipeline.output == "html":
        return pipeline.apply(query.text, seed=seed, key=query.qid, context=Context(query.lang, llm))
    _, offset, _ = strip_instructions(query.text)
    head, body = query.text[:offset], query.text[offset:]
    return head + pipeline.apply(body, seed=seed, key=query.qid, context=Context(query.lang, llm))


def build_store(path: Path, embedder: Any, data: Path, distractors: int, console: Console) -> ClaimStore:
    store = ClaimStore.open(path, embedder, create=True)
    dev = load_devset(data)
    wanted = len(dev.claims) + distractors
    if len(store) < wanted:
        started = time.perf_counter()
        store.add(dev.claims, source="devset")
        store.add(load_distractors(data, distractors), source="distractors")
        console.print(f"store: {len(store)} claims ({time.perf_counter() - started:.0f} s)")
    return store


def guards(store: ClaimStore, arms: Sequence[str], decision: Decision | None = None) -> dict[str, ClaimGuard]:
    unknown = set(arms) - set(ARMS)
    if unknown:
        raise ConfigError(f"unknown arms {sorted(unknown)}; use some of {', '.join(ARMS)}")
    return {arm: ClaimGuard(store, decision=decision, cache_size=0, unmask=() if arm == "unhardened" else DEFAULT_UNMASK,
                            screen_injections=arm == "hardened") for arm in arms}


def run_claims_redteam(
    settings: Settings,
    output: Path,
    *,
    transforms: Sequence[str],
    data_dir: Path | None = None,
    distractors: int = 2000,
    split: str = "test",
    arms: Sequence[str] = ARMS,
    store_dir: Path | None = None,
    llm: Any = None,
    console: Console | None = None,
    decision: Decision | None = None,
    limit: int = 0,
) -> dict[str, Any]:
    """Run (or resume) the claim-guard red-team suite; returns the summary. `decision`:
    the guard's decision (default: the one shipped for the embedder); `limit` > 0 keeps the
    split's first `limit` queries (tests)."""
    console = console or Console()
    data = resolve_data_dir(settings, data_dir)
    dev = load_devset(data)
    pipelines = {spec: compose(spec) for spec in transforms}
    needs_llm = [s for s, p in pipelines.items() if p.llm]
    if needs_llm and llm is None:
        raise ConfigError(f"{', '.join(needs_llm)} need an LLM; pass --llm")
    embedder = get_embedder(None, settings.embed)
    groups = split_groups([q.group for q in dev.queries], split)
    queries = [q for q in dev.queries if q.group in groups][: limit or None]
    header = RunHeader(
        kind="bench.redteam.claims", settings=public_settings(settings),
        components={"embedder": embedder.describe(), "llm": llm.describe() if llm is not None else {}},
        seeds={"seed": settings.seed, "split": SPLIT_SEED},
        params={"target": "claims", "data_dir": str(data), "distractors": distractors, "split": split,
                "arms": list(arms), "transforms": {s: p.describe() for s, p in pipelines.items()},
                "queries": len(queries), "decision": decision.describe() if decision is not None else "shipped"},
    )
    output.mkdir(parents=True, exist_ok=True)
    log = RunLog.open(output / "runlog.jsonl", header, resume=True)
    if log.header.params.get("split") != split or log.header.params.get("distractors") != distractors:
        log.close()
        raise ConfigError(f"{output}/runlog.jsonl was made with another split or store; use another --output")
    done = log.done_keys("check")
    # a resumed log keeps its first header: each invocation records its own arms and transforms
    log.write("invocation", arms=list(arms), transforms={s: p.describe() for s, p in pipelines.items()},
              command=header.command)
    try:
        store = build_store(store_dir or output / "store", embedder, data, distractors, console)
        by_arm = guards(store, arms, decision)
        for arm, guard in by_arm.items():
            if f"guard:{arm}" not in log.done_keys("guard"):
                log.write("guard", key=f"guard:{arm}", arm=arm, guard=guard.describe(), claims=len(store))
            pages = any(p.output == "html" for p in pipelines.values())
            for spec in dict.fromkeys([BASELINE, *([PAGE_BASELINE] if pages else []), *pipelines]):
                pipeline = None if spec == BASELINE else pipelines.get(spec) or compose(spec)
                todo = [q for q in queries if f"{arm}:{spec}:{q.qid}" not in done
                        and (pipeline is None or pipeline.applies_to(q.lang))]
                if not todo:
                    continue
                started = time.perf_counter()
                texts = [q.text if pipeline is None else disguise(q, pipeline, seed=settings.seed, llm=llm) for q in todo]
                flagged, scores = _check(guard, texts, html=pipeline is not None and pipeline.output == "html")
                for q, text, f, score in zip(todo, texts, flagged, scores):
                    log.write("check", key=f"{arm}:{spec}:{q.qid}", arm=arm, spec=spec,
                              family="none" if pipeline is None else pipeline.family, qid=q.qid, group=q.group,
                              label=q.label, lang=q.lang, attack=q.attack, flagged=f, score=round(score, 6),
                              text=text[:3000])
                console.print(f"{arm} {spec}: {len(todo)} texts, {sum(flagged)} flagged "
                              f"({time.perf_counter() - started:.0f} s)", highlight=False)
    finally:
        log.close()
    return render_report(output / "runlog.jsonl", output, console)


def _check(guard: ClaimGuard, texts: list[str], *, html: bool) -> tuple[list[bool], list[float]]:
    if not html:
        verdicts = guard.check_many(texts)
        return [v.flagged for v in verdicts], [float(v.score) for v in verdicts]
    flagged, scores = [], []
    for page in texts:
        report = guard.check_document(page, html=True)
        flagged.append(report.flagged)
        scores.append(max((float(v.score) for v in report.verdicts.values()), default=0.0))
    return flagged, scores


def summary_json(summary: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(summary, indent=2), encoding="utf-8")
