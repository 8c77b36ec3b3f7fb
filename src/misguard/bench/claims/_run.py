"""`misguard bench claims`: the claim guard on the multilingual dev set, LIAR/Snopes and
CheckThat-2020. The library fits (`misguard.claims`: the stores, the re-ranker, the language
shift, the decision); this runs the parts in order and logs what each measures before any
table is drawn:
1. the stores: the 40 dev-set false claims + LIAR/Snopes false claims as distractors, and the
   CheckThat-2020 verified claims in a store of their own (`_run`);
2. the decision fitted across sources, its out-of-fold figures and baselines (`_decision`),
   then the final guard on the CheckThat dev and test tweets (test: reporting only);
3. CheckThat: the social-media normalisation steps and the sentence threshold (`_checkthat`);
4. with `--paper-translate`, the paper's LLM translation attacks on the final guard (`_paper`);
5. optionally the paper's LLM judge (prompts 1 and 2) on the configured --llm (`_judge`);
6. speed on this machine (`_speed`).
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from ...claims import (
    FEATURES,
    ClaimGuard,
    ThresholdDecision,
    build_checkthat_store,
    build_training_store,
    load_reader,
    load_training_data,
)
from ...claims._sources import CHECKTHAT, DEVSET
from ...claims._training import DEV_FOLDS
from ...config import Settings
from ...embed import get_embedder
from ...errors import DataError
from ...runlog import RunHeader, RunLog, public_settings
from ._checkthat import check_tweets, social_ablation, views_sweep
from ._decision import measure_decision
from ._judge import run_judge
from ._paper import run_paper
from ._report import render_tables
from ._speed import SpeedTexts, speed_parts


def resolve_data_dir(settings: Settings, data: Path | None) -> Path:
    """--data, else settings.data_dir: the directory holding claims/devset-multilingual."""
    for candidate in (data, settings.data_dir):
        if candidate is not None and (Path(candidate) / DEVSET).is_dir():
            return Path(candidate)
    where = f" (looked in {', '.join(str(c) for c in (data, settings.data_dir) if c is not None)})" if data or settings.data_dir else ""
    raise DataError(
        f"cannot find {DEVSET}{where}; pass --data DIR, the directory that holds it (layout in docs/claims.md), "
        "or set data_dir in misguard.toml"
    )


def run_claims_bench(
    settings: Settings,
    output: Path,
    *,
    data_dir: Path | None,
    distractors: int,
    store_dir: Path | None,
    judge: bool,
    judge_limit: int,
    speed: bool,
    resume: bool,
    console: Console,
    paper: int = 0,
    paper_translate: bool = False,
    checkthat_limit: int = 0,
    checkthat_train: int = 0,
    checkthat_only: bool = False,
    only: str | None = None,
    reader: str | None = None,
    reader_languages: str = "en",
) -> dict:
    root = resolve_data_dir(settings, data_dir)
    data = load_training_data(root, distractors=distractors, checkthat_limit=checkthat_limit,
                              checkthat_train=checkthat_train)
    dev = data.devset
    assert dev is not None  # resolve_data_dir found it
    embedder = get_embedder(None, settings.embed)
    output.mkdir(parents=True, exist_ok=True)
    header = RunHeader(
        kind="bench.claims",
        settings=public_settings(settings),
        components={"embedder": embedder.describe()},
        seeds={"seed": settings.seed, "llm": settings.llm.seed},
        params={"data_dir": str(root), "distractors": len(data.distractors), "folds": DEV_FOLDS, "judge": judge,
                "judge_limit": judge_limit, "features": list(FEATURES), "paper": paper,
                "paper_translate": paper_translate, "checkthat_limit": checkthat_limit,
                "checkthat_train": checkthat_train, "checkthat_only": checkthat_only, "only": only, "reader": reader,
                "reader_languages": reader_languages},
    )
    log = RunLog.open(output / "runlog.jsonl", header, resume=resume)
    try:
        built = build_training_store(store_dir or output / "store", embedder, data, console.print)
        store = built.store
        log.write("store", key=f"store-{len(store)}", claims=len(store), dev_claims=len(dev.claims),
                  distractors=len(data.distractors), embedded=built.embedded, unchanged=built.unchanged,
                  seconds=built.seconds)
        ct, ct_store = data.checkthat, None
        if ct is None:
            console.print(f"[yellow]no {root / CHECKTHAT}: CheckThat-2020 parts skipped[/]")
        else:
            ct_built = build_checkthat_store(output / "store-checkthat", embedder, ct, console.print)
            ct_store = ct_built.store
            log.write("store", key=f"checkthat-store-{len(ct_store)}", source="checkthat2020", claims=len(ct_store),
                      embedded=ct_built.embedded, seconds=ct_built.seconds)
        if only == "speed":
            speed_parts(settings, ct_store or store, SpeedTexts(root, settings.seed), log, console)
            log.close()
            return render_tables(output / "runlog.jsonl", output, console)
        pair_reader = load_reader(reader, settings.embed, reader_languages) if reader is not None else None
        model = measure_decision(data, store, ct_store, settings, log, console, paper=paper, reader=pair_reader,
                                 checkthat_only=checkthat_only)
        guard = ClaimGuard(store, decision=model, reader=pair_reader)
        if ct is not None and ct_store is not None:
            final = ClaimGuard(ct_store, decision=model, k_output=20, reader=pair_reader)
            for split in ("dev", "test"):
                check_tweets(final, ct.queries[split], split, log, console)
        if only == "decision":  # the decision and the tweets through it; nothing measured before
            log.close()
            return render_tables(output / "runlog.jsonl", output, console)
        if ct is not None and ct_store is not None:
            # On the dev tweets only: every variant re-embeds most tweets (e5 is the bottleneck).
            social_ablation(ct_store, ThresholdDecision(1.0, shift=model.shift), ct.queries["dev"], log, console)
            views_sweep(ct_store, ThresholdDecision(1.0, shift=model.shift, ranker=getattr(model, "ranker", None)),
                        ct.queries["dev"], SpeedTexts(root, settings.seed).texts[-3000:], log, console)
        if paper_translate:
            run_paper(settings, guard, data.distractors, data.true_claims, paper, paper_translate, log, console)
        if judge:
            run_judge(settings, dev, log, judge_limit, console)
        if speed:
            speed_parts(settings, ct_store or store, SpeedTexts(root, settings.seed), log, console)
    finally:
        log.close()
    return render_tables(output / "runlog.jsonl", output, console)


__all__ = ["resolve_data_dir", "run_claims_bench"]
