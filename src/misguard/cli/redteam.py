"""`misguard bench redteam`: the guards against the red-team transformations."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from ..errors import ConfigError
from ._common import console, friendly_errors, settings_from
from .bench import bench_app

TARGETS = ("claims", "misinfotask", "judge", "rectifier", "cost")


def register(app: typer.Typer) -> None:
    """Adds `misguard bench redteam` to the bench group (the group itself is `bench`'s)."""


def _list() -> None:
    from ..attacks.transforms import FAMILIES, all_transforms

    table = Table(title="red-team transformations (compose with '+', parameters as name:key=value,...)")
    for col in ("name", "family", "parameters", "languages", "LLM", "output", "what it does"):
        table.add_column(col)
    for t in sorted(all_transforms(), key=lambda t: (FAMILIES.index(t.family), t.name)):
        table.add_row(t.name, t.family, ", ".join(f"{k}={v}" for k, v in t.defaults.items()) or "-",
                      ",".join(t.languages) or "any", "yes" if t.llm else "", t.output, t.description)
    console.print(table)


@bench_app.command("redteam")
@friendly_errors
def bench_redteam(
    ctx: typer.Context,
    list_: Annotated[bool, typer.Option("--list", help="List the registered transformations and exit.")] = False,
    target: Annotated[str, typer.Option(help="What to attack: 'claims' (the claim guard on the multilingual dev set), 'misinfotask' (MisInfoTask messages through a defense, `defense-probe` style), 'judge' (the claim guard's LLM judge under prompt injection: flips), 'rectifier' (ARGUS's LLM rectifier under a note to the channel monitor: flips) or 'cost' (the claim guard's hardening in time: text preparation hardened against unhardened, beside the embedding).")] = "claims",
    transform: Annotated[Optional[list[str]], typer.Option("--transform", "-t", help="A transformation spec, e.g. homoglyph:rate=0.6+leet (repeatable; default: the target's suite).")] = None,
    output: Annotated[Path, typer.Option(help="Directory for the run log, summary and report (rerun to resume).")] = Path("runs/bench-redteam"),
    data: Annotated[Optional[Path], typer.Option(help="The directory holding claims/devset-multilingual (layout in docs/claims.md; default: settings.data_dir).")] = None,
    split: Annotated[str, typer.Option(help="claims: half of the dev-set claims to run on: 'test' (reported), 'dev' (where constants are chosen) or 'all'.")] = "test",
    distractors: Annotated[int, typer.Option(help="claims, cost: LIAR + Snopes false claims in the store beside the 40 dev-set claims.")] = 2000,
    store_dir: Annotated[Optional[Path], typer.Option(help="claims, cost: claim store to build or reuse (default OUTPUT/store).")] = None,
    arm: Annotated[Optional[list[str]], typer.Option("--arm", help="claims: 'hardened' (as shipped) and/or 'unhardened' (unmask steps off); default both.")] = None,
    tasks: Annotated[str, typer.Option(help="misinfotask: task ids, e.g. 0-29.")] = "0-29",
    defense: Annotated[str, typer.Option(help="misinfotask: the defense to probe (any registered name).")] = "argus",
    defense_param: Annotated[Optional[list[str]], typer.Option("--defense-param", help="misinfotask: KEY=VALUE for the defense (repeatable).")] = None,
    k: Annotated[int, typer.Option(help="misinfotask, rectifier: arguments / ground truths per message.")] = 2,
    limit: Annotated[int, typer.Option(help="judge: dev-set queries of the split to judge (spread over it; 0 = all).")] = 100,
    judge_prompt: Annotated[Optional[list[int]], typer.Option("--judge-prompt", help="judge: judge prompts to compare (repeatable; default 2 and 3).")] = None,
) -> None:
    """Disguise what a guard checks (look-alike letters, leetspeak, markup, prompt injection...)
    and measure what it still catches and what it now wrongly flags, per transformation,
    before and after, with bootstrap intervals over claims or tasks."""
    if list_:
        _list()
        return
    if target not in TARGETS:
        raise ConfigError(f"--target is one of {', '.join(TARGETS)}, not {target!r}")
    from ..bench.redteam import ARMS, default_suite

    settings = settings_from(ctx)
    specs = list(transform or default_suite(target))
    llm = None
    from ..attacks.transforms import compose

    if any(compose(s).llm for s in specs):
        from ..llm import get_llm

        llm = get_llm(None, settings.llm)
    if target == "judge":
        from ..bench.redteam import run_judge_flips
        from ..llm import get_llm

        run_judge_flips(settings, output, llm=get_llm(None, settings.llm), data_dir=data, split=split, limit=limit,
                        prompts=judge_prompt or (2, 3), distractors=distractors, store_dir=store_dir, console=console)
        return
    if target == "cost":
        from ..bench.redteam import run_hardening_cost

        run_hardening_cost(settings, output, data_dir=data, distractors=distractors, store_dir=store_dir, console=console)
        return
    if target == "rectifier":
        from ..bench.redteam import run_rectifier_flips
        from .mas import _records, _select, parse_params

        _, records = _records(settings, str(data) if data else None)
        run_rectifier_flips(settings, output, tasks=_select(records, tasks), defense_params=parse_params(defense_param or []),
                            k=k, console=console)
        return
    if target == "claims":
        from ..bench.redteam import run_claims_redteam

        run_claims_redteam(settings, output, transforms=specs, data_dir=data, distractors=distractors, split=split,
                           arms=arm or ARMS, store_dir=store_dir, llm=llm, console=console)
    else:
        from ..bench.redteam import run_misinfotask_redteam
        from .mas import parse_params

        params = parse_params(defense_param or [])
        run_misinfotask_redteam(settings, output, transforms=specs, tasks=tasks, data=str(data) if data else None, defense=defense,
                                defense_params=params, k=k, console=console)
