"""The framework-neutral layer without any framework: the interceptor chain, rounds,
decisions per message and receiver, the event log, building defenses by name."""

from __future__ import annotations

import asyncio
import threading

import pytest

from misguard.config import Settings
from misguard.errors import ConfigError, MisguardError
from misguard.integrations import Protection, build_interceptors
from misguard.mas import Interception, read_events


class Upper:
    name = "upper"

    def __init__(self) -> None:
        self.rounds: list[int] = []

    async def start_round(self, view):
        self.rounds.append(view.round)
        return None

    async def intercept(self, message, view):
        return Interception.rewritten(message.text.upper(), "louder")

    def describe(self):
        return {"name": self.name}


def test_interceptors_chain_as_in_the_native_runtime(probe):
    # the probe sees what Upper left; a block stops the chain
    protection = Protection([Upper(), probe])
    delivery = protection.screen_sync("a", "b", "the moon", step=1)
    assert probe.seen == [("a", "b", 1, "THE MOON")] and delivery.text == "THE MOON" and delivery.action.value == "rewrite"
    blocked = protection.screen_sync("a", "b", "bad", step=1)
    assert blocked.blocked and blocked.text == "[message withheld by misguard: contains BAD]" and blocked.original == "bad"
    log = protection.finish()
    kinds = [(e.type, e.data.get("interceptor")) for e in log.events if e.type == "interception"]
    assert kinds == [("interception", "upper"), ("interception", "probe")] * 2


def test_a_message_is_screened_once_per_receiver_and_steps_are_rounds(probe):
    upper = Upper()
    protection = Protection([upper, probe])
    first = protection.screen_sync("a", "b", "hello", step="s1", key="m1")
    again = protection.screen_sync("a", "b", "hello", step="s2", key="m1")
    assert again is first and len(probe.seen) == 1  # the cached decision, nothing re-run or logged
    protection.screen_sync("a", "c", "hello", step="s2", key="m1")  # another receiver: screened
    protection.screen_sync("c", "b", "x", step="s2")
    protection.screen_sync("c", "b", "y", step="s3")
    assert [r for _, _, r, _ in probe.seen] == [1, 2, 2, 3] and upper.rounds == [1, 2, 3]
    log = protection.finish()
    assert log.rounds() == [1, 2, 3]
    assert [e.data["sent"] for e in log.of_type("round_end")] == [1, 2, 1]
    with pytest.raises(MisguardError, match="finished"):
        protection.screen_sync("a", "b", "late")


async def test_async_callers_from_their_own_loop_and_threads_share_one_runner(probe):
    protection = Protection([probe])

    def worker(i: int) -> None:
        protection.screen_sync(f"t{i}", "hub", f"from thread {i}", step="s")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    results = await asyncio.gather(*(protection.screen(f"c{i}", "hub", f"from task {i}", step="s") for i in range(4)))
    for t in threads:
        t.join()
    assert len(probe.seen) == 8 and all(r.action.value == "pass" for r in results)
    assert {r for _, _, r, _ in probe.seen} == {1}
    assert set(protection.graph.predecessors("hub")) == {*(f"t{i}" for i in range(4)), *(f"c{i}" for i in range(4))}
    protection.finish()


def test_the_log_is_the_native_event_log(tmp_path, probe):
    path = tmp_path / "events.jsonl"
    protection = Protection([probe], framework="demo 1.0", log_path=path)
    protection.declare(["a", "b"], [("a", "b")])
    protection.screen_sync("a", "b", "the moon", step=1)
    protection.screen_sync("b", "c", "fine", step=2)
    protection.record("memory_write", record_id="r1", agent="a")
    protection.finish(answer="done")
    log = read_events(path)
    start = next(log.of_type("start"))
    assert start.data["edges"] == [["a", "b"]] and start.data["components"]["framework"] == "demo 1.0"
    assert [e.data["receiver"] for e in log.of_type("edge_discovered")] == ["c"]
    assert log.final_answer() == "done" and log.edge_history()[("a", "b")][0]["text"] == "the [corrected]"
    end = next(log.of_type("end"))
    assert ["b", "c", "runtime"] in end.data["edges"] and "probe" in end.data["usage_by_interceptor"]
    assert [e.type for e in log.events].count("memory_write") == 1


def test_defenses_are_built_by_name_with_clear_errors():
    from misguard.llm import get_llm

    (check,) = build_interceptors("self-check", settings=Settings(), llm=get_llm("mock"))
    assert check.name == "self-check"
    with pytest.raises(ConfigError, match="Unknown defense 'nope'"):
        build_interceptors("nope", settings=Settings())
    with pytest.raises(ConfigError, match="pass llm="):
        build_interceptors("self-check", settings=Settings())
    with pytest.raises(ConfigError, match="not an interceptor"):
        Protection([object()])  # type: ignore[list-item]
