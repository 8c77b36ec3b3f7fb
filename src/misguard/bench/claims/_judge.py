"""`bench claims`, the paper's LLM judge (prompts 1 and 2) on the configured --llm: each dev
query against the claim the decision matched for it (read from the run log)."""

from __future__ import annotations

import random

from rich.console import Console

from ...claims import DevSet, LLMJudge, strip_instructions
from ...config import Settings
from ...errors import LLMError
from ...llm import get_llm
from ...runlog import RunLog


def _query_rows(log: RunLog) -> list[dict]:
    latest = {e.key: e.data for e in log.of_type("query")}
    return list(latest.values())


def run_judge(settings: Settings, dev: DevSet, log: RunLog, limit: int, console: Console) -> None:
    llm = get_llm(None, settings.llm)
    log.write("component", key="judge_llm", **llm.describe())  # which model / pack judged
    judges = [LLMJudge(llm, prompt=1), LLMJudge(llm, prompt=2)]
    rows = {r["qid"]: r for r in _query_rows(log)}
    claims = {c.id: c.text for c in dev.claims}
    queries = dev.queries if limit <= 0 else random.Random(settings.seed).sample(dev.queries, min(limit, len(dev.queries)))
    done = log.done_keys("judge")
    for n, q in enumerate(queries):
        if q.qid in done:
            continue
        headline = claims.get(rows[q.qid]["matched"]) or rows[q.qid]["matched"]
        body = strip_instructions(q.text)[0]
        answers: dict[str, object] = {}
        for j in judges:
            try:
                answers[j.name] = j.judge(body, [headline])
            except LLMError as exc:
                answers[j.name] = f"error: {type(exc).__name__}"
        log.write("judge", key=q.qid, qid=q.qid, llm=llm.spec, **answers)
        if n % 20 == 0:
            console.print(f"LLM judge {n + 1}/{len(queries)}")
