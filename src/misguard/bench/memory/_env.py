"""Surrogate multi-agent tasks in the style of MPE / PettingZoo, written for this benchmark.

Three task domains, each a set of discrete *situations* with a reference (benign) policy:

* path planning: an agent at `pos` must step toward `goal` on an 8x8 grid; an obstacle may
  block one direction. Actions N, S, E, W, wait.
* resource contention: five resources with load levels; take the least-loaded one.
* knowledge coordination: answer (entity, relation) from the scenario's knowledge base;
  five candidate facts.

Agents act by retrieval: facing a situation, an agent queries the scenario's shared memory
with the situation (state + context, no action), takes the top-k active records, and acts
by a similarity x confidence weighted vote; it then writes its own record (state, context,
action, tags, provenance, success/reward/confidence) and a reuse edge from every retrieved
record that supported its action. A poisoned record that wins a vote causes a wrong action,
and the record written from that action carries the poison on: poison spreads across
agents, hop by hop. During the build phase agents explore (epsilon-greedy) so that benign
memory also holds low-confidence records with non-reference actions: a wrong action alone
is not an anomaly.

Embeddings come from `HashedRecordFeaturizer` (deterministic feature hashing of the record
fields); records carry nuisance tokens (time bucket, phrasing, free-form note tags) so that
benign records of one situation are similar but not identical.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...memory import HashedRecordFeaturizer

DOMAINS = ("path", "resource", "knowledge")
ACTIONS = {
    "path": ["N", "S", "E", "W", "wait"],
    "resource": ["take-r0", "take-r1", "take-r2", "take-r3", "take-r4"],
    "knowledge": ["fact-0", "fact-1", "fact-2", "fact-3", "fact-4"],
}
N_ACTIONS = 5
PHRASES = ["please", "asap", "routine", "verify", "coordinate", "team", "update", "check"]
NOTES = [f"note-{i}" for i in range(16)]


@dataclass
class Situation:
    state: list[str]
    context: list[str]
    tags: list[str]
    correct: int


@dataclass
class Scenario:
    sid: int
    domain: str
    n_agents: int
    situations: list[Situation]

    @property
    def task(self) -> str:
        return f"task={self.domain}-{self.sid}"


def _path_situation(rng: np.random.Generator, task: str) -> Situation:
    x, y, gx, gy = (int(v) for v in rng.integers(0, 8, 4))
    obst = str(rng.choice(["N", "S", "E", "W", "none"]))
    dx, dy = np.sign(gx - x), np.sign(gy - y)
    prefs = []
    if abs(gx - x) >= abs(gy - y):
        prefs += [("E" if dx > 0 else "W") if dx else None, ("N" if dy > 0 else "S") if dy else None]
    else:
        prefs += [("N" if dy > 0 else "S") if dy else None, ("E" if dx > 0 else "W") if dx else None]
    move = next((p for p in prefs if p and p != obst), "wait")
    state = [f"pos={x},{y}", f"goal={gx},{gy}", f"dx={dx}", f"dy={dy}", f"obst={obst}"]
    state.append("obs=" + "|".join(state))  # conjunction feature: the full observation
    return Situation(state, [task, "instr=reach-goal"], ["nav", f"zone={x // 4}{y // 4}"], ACTIONS["path"].index(move))


def _resource_situation(rng: np.random.Generator, task: str) -> Situation:
    loads = rng.integers(0, 4, N_ACTIONS)
    prio = int(rng.integers(0, 3))
    state = [f"load{r}={int(v)}" for r, v in enumerate(loads)] + [f"prio={prio}"]
    state.append("obs=" + "|".join(state))
    return Situation(state, [task, "instr=acquire-resource"], ["sched", f"prio-class={prio}"], int(np.argmin(loads)))


def _knowledge_situation(rng: np.random.Generator, task: str, kb: np.ndarray) -> Situation:
    e, r = int(rng.integers(0, kb.shape[0])), int(rng.integers(0, kb.shape[1]))
    state = [f"entity=e{e}", f"rel=r{r}", f"etype={e % 5}"]
    state.append("obs=" + "|".join(state))
    return Situation(state, [task, "instr=answer-query"], ["kg", f"rel-class={r}"], int(kb[e, r]))


def make_scenarios(n_scenarios: int, rng: np.random.Generator, n_situations: int = 40) -> list[Scenario]:
    out = []
    for sid in range(n_scenarios):
        domain = DOMAINS[sid % len(DOMAINS)]
        n_agents = int(rng.integers(4, 9))
        task = f"task={domain}-{sid}"
        kb = rng.integers(0, N_ACTIONS, (30, 4))
        seen, sits = set(), []
        while len(sits) < n_situations:
            if domain == "path":
                s = _path_situation(rng, task)
            elif domain == "resource":
                s = _resource_situation(rng, task)
            else:
                s = _knowledge_situation(rng, task, kb)
            key = tuple(s.state)
            if key not in seen:
                seen.add(key)
                sits.append(s)
        out.append(Scenario(sid, domain, n_agents, sits))
    return out


@dataclass
class MemoryTable:
    """Column store of one scenario's memory (the simulation's working copy)."""

    dim: int
    capacity: int
    emb: np.ndarray = field(init=False)
    n: int = 0

    def __post_init__(self) -> None:
        self.emb = np.zeros((self.capacity, self.dim), dtype=np.float32)
        z = lambda dt, v=0: np.full(self.capacity, v, dtype=dt)  # noqa: E731
        self.situation, self.action, self.agent = z(np.int64), z(np.int64), z(np.int64)
        self.confidence, self.success, self.reward = z(np.float32), z(np.float32, np.nan), z(np.float32)
        self.time = z(np.int64)
        self.label = z(np.int8)  # 0 benign, 1 injected/modified poison
        self.explore = z(bool)
        self.active = z(bool, True)
        self.channel = z(np.int8)  # index into CHANNELS
        self.tokens: list[tuple[tuple[str, ...], tuple[str, ...]]] = []  # (context, tags) per record
        self.benign_sum: dict[int, np.ndarray] = {}  # situation -> sum of benign embeddings
        self.src: list[int] = []
        self.dst: list[int] = []

    def grow(self) -> None:
        extra = self.capacity
        for name, arr in list(vars(self).items()):
            if isinstance(arr, np.ndarray) and len(arr) == self.capacity:
                pad = np.zeros((extra,) + arr.shape[1:], dtype=arr.dtype)
                if name == "active":
                    pad[:] = True
                if name == "success":
                    pad[:] = np.nan
                setattr(self, name, np.concatenate([arr, pad]))
        self.capacity += extra

    def copy(self) -> MemoryTable:
        new = MemoryTable.__new__(MemoryTable)
        for k, v in vars(self).items():
            if isinstance(v, dict):
                v = {key: arr.copy() for key, arr in v.items()}
            setattr(new, k, v.copy() if isinstance(v, (np.ndarray, list)) else v)
        return new


CHANNELS = ["demo", "direct", "tool-output", "broadcast"]


class Embedder:
    """Cached hashed embeddings of situations, nuisance variants and actions."""

    def __init__(self, featurizer: HashedRecordFeaturizer, scenario: Scenario) -> None:
        self.f = featurizer
        self.sc = scenario
        self.sl = featurizer.slices()
        self._state = [featurizer.field_vector("state", s.state) for s in scenario.situations]
        names = ACTIONS[scenario.domain]
        self._action = [featurizer.field_vector("action", [f"act={a}"]) for a in names]
        self._ctx: dict[tuple[str, ...], np.ndarray] = {}
        self._tag: dict[tuple[str, ...], np.ndarray] = {}

    def _block(self, cache: dict, fname: str, toks: tuple[str, ...]) -> np.ndarray:
        v = cache.get(toks)
        if v is None:
            v = cache[toks] = self.f.field_vector(fname, toks)
        return v

    def record(self, sit: int, ctx: tuple[str, ...], tags: tuple[str, ...], action: int) -> np.ndarray:
        v = np.concatenate([self._state[sit], self._block(self._ctx, "context", ctx), self._block(self._tag, "tags", tags), self._action[action]])
        return v / np.linalg.norm(v)

    def query(self, sit: int) -> np.ndarray:
        s = self.sc.situations[sit]
        v = np.concatenate([self._state[sit], self._block(self._ctx, "context", tuple(s.context)), self._block(self._tag, "tags", tuple(s.tags)), np.zeros(self.f.blocks["action"], np.float32)])
        return v / np.linalg.norm(v)


def nuisance(rng: np.random.Generator, sit: Situation, step: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Benign variation: a time bucket and a phrasing in the context, a free-form note tag."""
    ctx = tuple(sit.context) + (f"window={step // 25}", f"phrase={PHRASES[int(rng.integers(len(PHRASES)))]}")
    tags = tuple(sit.tags) + (NOTES[int(rng.integers(len(NOTES)))],)
    return ctx, tags
