"""Decision parity with a real model: one MisInfoTask task runs natively under ARGUS (real
workers and a real rectifier, deterministic decoding), then every message its agents wrote
is replayed through the integrations' `Protection` with a fresh ARGUS built the same way;
the decisions (actions, delivered texts, interceptions, monitored channels, goals) must be
identical. Writes `parity.json` and both event logs to --output.

    python docs/scripts/integrations_parity_real_llm.py --model local/qwen2.5-0.5b --tasks 0 \
        --rounds 2 --topology chain --attack inject --output runs/parity-real
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from misguard.attacks import AttackSpec, build_attack
from misguard.bench.misinfotask._data import load_tasks, sample_tasks_path
from misguard.config import LLMSettings, Settings
from misguard.embed import get_embedder
from misguard.integrations import Protection, compare_decisions, replay
from misguard.llm import get_llm
from misguard.mas import DefenseContext, MASConfig, MultiAgentSystem, RoleLLMs, build_defense


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local/qwen2.5-0.5b")
    parser.add_argument("--tasks", default="0", help="comma-separated indices of the sample tasks")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--topology", default="chain")
    parser.add_argument("--attack", default="inject")
    parser.add_argument("--output", type=Path, default=Path("runs/parity-real"))
    args = parser.parse_args()
    # one slot and no prompt cache: the same prompt gives the same answer (README, run repeatability)
    llm = get_llm(args.model, LLMSettings(parallel=1, prompt_cache=False, timeout_s=1800, n_ctx=4096))
    embedder = get_embedder("e5")
    settings = Settings()
    tasks = load_tasks(sample_tasks_path())
    args.output.mkdir(parents=True, exist_ok=True)
    results = []
    for index in (int(t) for t in args.tasks.split(",")):
        task = tasks[index]
        context = DefenseContext(settings, {"worker": llm, "rectifier": llm}, embedder)
        started = time.perf_counter()
        system = MultiAgentSystem(task.runtime_task(), RoleLLMs(worker=llm),
                                  MASConfig(topology=args.topology, rounds=args.rounds, seed=0),
                                  interceptors=build_defense("argus", context))

        async def native_run():
            await system.plan()
            attack = build_attack(args.attack, AttackSpec(goal=task.misinfo_goal, arguments=task.misinfo_argument,
                                                          point="most_central", embedder=embedder, seed=0))
            if attack is not None:
                attack.apply(system)
            return await system.run()

        native = asyncio.run(native_run()).log
        native_s = time.perf_counter() - started
        native.dump(args.output / f"native-{index}.jsonl")
        started = time.perf_counter()
        replayed = replay(native, Protection(build_defense("argus", context), framework="replay",
                                             log_path=args.output / f"replayed-{index}.jsonl"))
        replay_s = time.perf_counter() - started
        report = compare_decisions(native, replayed)
        row = {"task": index, "messages": report.messages, "interceptions": report.interceptions,
               "rounds": report.rounds, "same": report.same, "differences": report.differences[:20],
               "rewrites": sum(m["action"] == "rewrite" for m in native.messages(delivered_only=False)),
               "rectifier_calls": sum(1 for e in native.of_type("interception") if e.data["usage"]["calls"]),
               "native_s": round(native_s, 1), "replay_s": round(replay_s, 1)}
        print(json.dumps(row))
        results.append(row)
    (args.output / "parity.json").write_text(json.dumps({"model": args.model, "llm": llm.describe(), "args": {
        k: str(v) for k, v in vars(args).items()}, "results": results}, indent=2))


if __name__ == "__main__":
    main()
