"""Simulation of agents acting from shared memory, and the poisoning attacks.

Attacks (section 4.5 of the paper), each at a ratio of the scenario's memory stream:
* Type I, instruction injection: the poisoned record carries an injected instruction in its
  context (`cmd=ignore-previous-instructions-always-<action>`) and a tool tag, and arrives
  through a tool-output channel.
* Type II, structural camouflage: the record copies a target situation's state, context and
  tags with no nuisance, so it sits at the situation's benign centroid (cosine >= 0.90 to the
  nearest benign centroid is enforced; the cosine is logged) and is retrieved first; only
  the action is shifted.
* Type III, cross-agent consistency: colluding agents write camouflaged records that agree
  on the same wrong action and tags for a few target situations and cite one another, so
  the poison forms a coherent subgraph.
Capabilities (threat model): C1 inject new records; C2 modify existing benign records
(their provenance stays genuine); C3 collusion across agents (Type III); C4 adaptive
knowledge of the defence: poison claims only a typical confidence and no success signal,
trading influence for a weaker conflict signal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ._env import CHANNELS, N_ACTIONS, Embedder, MemoryTable, Scenario, nuisance

K_RETRIEVE = 8
EPSILON = 0.08
#: Chance that a record written from a retrieved memory reuses that memory's wording.
COPY_PHRASING = 0.5


@dataclass(frozen=True)
class Attack:
    kind: str  # "I", "II", "III" or "none"
    ratio: float
    capabilities: frozenset[str] = frozenset({"C1"})

    @property
    def adaptive(self) -> bool:
        return "C4" in self.capabilities


@dataclass
class BuildInfo:
    centroid_cosines: list[float] = field(default_factory=list)
    targets: list[int] = field(default_factory=list)


def decide(table: MemoryTable, queries: np.ndarray, k: int = K_RETRIEVE) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Retrieval-based action for each query: (actions, vote shares, supporting record indices)."""
    n = table.n
    sims = queries @ table.emb[:n].T
    sims[:, ~table.active[:n]] = -np.inf
    kk = min(k, n)
    top = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
    ts = np.take_along_axis(sims, top, axis=1)
    ok = np.isfinite(ts)
    w = np.where(ok, np.maximum(ts, 0.0) ** 4 * table.confidence[top], 0.0)
    acts = table.action[top]
    votes = np.zeros((len(queries), N_ACTIONS))
    np.add.at(votes, (np.repeat(np.arange(len(queries)), kk), acts.ravel()), w.ravel())
    chosen = votes.argmax(axis=1)
    share = votes[np.arange(len(queries)), chosen] / np.maximum(votes.sum(axis=1), 1e-12)
    support = [top[i][ok[i] & (acts[i] == chosen[i])] for i in range(len(queries))]
    return chosen, share, support


def _append(table: MemoryTable, emb: np.ndarray, sit: int, action: int, agent: int, conf: float, success: float,
            step: int, label: int, explore: bool, channel: str, tokens: tuple, parents: np.ndarray | list[int]) -> int:
    if table.n >= table.capacity:
        table.grow()
    i = table.n
    table.emb[i], table.situation[i], table.action[i], table.agent[i] = emb, sit, action, agent
    table.confidence[i], table.success[i], table.time[i], table.label[i] = conf, success, step, label
    table.reward[i] = 0.0 if np.isnan(success) else (1.0 if success else -0.5)
    table.explore[i], table.active[i], table.channel[i] = explore, True, CHANNELS.index(channel)
    table.tokens.append(tokens)
    if label == 0:
        _add_benign(table, sit, emb)
    for p in parents:
        table.src.append(int(p))
        table.dst.append(i)
    table.n += 1
    return i


def _add_benign(table: MemoryTable, sit: int, vec: np.ndarray, sign: float = 1.0) -> None:
    acc = table.benign_sum.get(sit)
    if acc is None:
        acc = table.benign_sum[sit] = np.zeros(table.dim, dtype=np.float64)
    acc += sign * vec


def _observe(rng: np.random.Generator, sc: Scenario, correct: bool) -> float:
    """Feedback is partial and noisy: knowledge tasks get none, others 60% of the time, 10% flipped."""
    if sc.domain == "knowledge" or rng.random() > 0.6:
        return float("nan")
    return float(correct ^ (rng.random() < 0.1))


def agent_step(table: MemoryTable, sc: Scenario, emb: Embedder, rng: np.random.Generator, step: int, *, explore: bool) -> tuple[int, int]:
    """Every agent faces a situation and acts from memory; returns (decisions, wrong decisions)."""
    sits = rng.integers(0, len(sc.situations), sc.n_agents)
    queries = np.stack([emb.query(int(s)) for s in sits])
    chosen, share, support = decide(table, queries)
    wrong = 0
    for a, (s, act, sh, sup) in enumerate(zip(sits, chosen, share, support)):
        s, act = int(s), int(act)
        expl = explore and rng.random() < EPSILON
        conf = float(np.clip(sh, 0.3, 0.99))
        if expl:
            act, conf, sup = int(rng.integers(N_ACTIONS)), float(rng.uniform(0.2, 0.4)), []
        correct = act == sc.situations[s].correct
        wrong += not correct
        if len(sup) and rng.random() < COPY_PHRASING:
            ctx, tags = table.tokens[int(sup[0])]  # the agent reuses the memory's wording
        else:
            ctx, tags = nuisance(rng, sc.situations[s], step)
        _append(table, emb.record(s, ctx, tags, act), s, act, a, conf, _observe(rng, sc, correct), step, 0, expl, "direct", (ctx, tags), sup)
    return len(sits), wrong


def nearest_centroid_cosine(table: MemoryTable, vec: np.ndarray) -> float:
    """Cosine of `vec` to the nearest benign situation centroid (running sums, no rescans)."""
    best = -1.0
    for acc in table.benign_sum.values():
        norm = float(np.linalg.norm(acc))
        if norm > 0:
            best = max(best, float(acc @ vec) / norm)
    return best


class Attacker:
    """Writes poison into a scenario's memory during the build phase."""

    def __init__(self, attack: Attack, sc: Scenario, emb: Embedder, rng: np.random.Generator) -> None:
        self.attack, self.sc, self.emb, self.rng = attack, sc, emb, rng
        n_sit = len(sc.situations)
        share = {"I": 0.3, "II": 0.3, "III": 0.15}.get(attack.kind, 0.0)
        self.targets = rng.choice(n_sit, size=max(1, round(share * n_sit)), replace=False).tolist()
        self.wrong = {t: int(rng.choice([a for a in range(N_ACTIONS) if a != sc.situations[t].correct])) for t in self.targets}
        n_coll = 2 if sc.n_agents >= 2 else 1
        self.colluders = rng.choice(sc.n_agents, size=n_coll, replace=False).tolist()
        self.last: dict[int, int] = {}
        self.info = BuildInfo(targets=list(self.targets))

    def _conf(self) -> tuple[float, float]:
        if self.attack.adaptive:
            return float(self.rng.uniform(0.55, 0.75)), float("nan")
        return float(self.rng.uniform(0.9, 0.99)), 1.0

    def inject(self, table: MemoryTable, step: int) -> None:
        kind, rng, sc = self.attack.kind, self.rng, self.sc
        t = int(rng.choice(self.targets))
        sit, wrong = sc.situations[t], self.wrong[t]
        conf, succ = self._conf()
        caps = self.attack.capabilities
        if kind == "I":
            ctx = tuple(sit.context) + (f"cmd=ignore-previous-instructions-always-{wrong}",)
            tags = tuple(sit.tags) + ("tool=exec",)
            agent = int(rng.integers(sc.n_agents))
            _append(table, self.emb.record(t, ctx, tags, wrong), t, wrong, agent, conf, succ, step, 1, False, "tool-output", (ctx, tags), [])
            return
        if kind == "II" and "C2" in caps and rng.random() < 0.5:
            cands = np.flatnonzero((table.situation[:table.n] == t) & (table.label[:table.n] == 0) & (table.channel[:table.n] != 0))
            if len(cands):  # modify a genuine record: provenance stays, the action is shifted
                i = int(rng.choice(cands))
                ctx, tags = table.tokens[i]
                _add_benign(table, t, table.emb[i], -1.0)
                table.action[i], table.label[i] = wrong, 1
                table.confidence[i], table.success[i] = max(conf, float(table.confidence[i])), succ
                table.emb[i] = self.emb.record(t, ctx, tags, wrong)
                self.info.centroid_cosines.append(nearest_centroid_cosine(table, table.emb[i]))
                return
        # Camouflage: the attacker tries a nuisance-free variant (it sits at the situation's
        # benign centroid, so it is retrieved first) and copies of genuine records' phrasing,
        # and keeps the variant closest to the nearest benign centroid.
        variants = [(tuple(sit.context) + (f"window={step // 25}",), tuple(sit.tags)), (tuple(sit.context), tuple(sit.tags))]
        pool = np.flatnonzero((table.situation[:table.n] == t) & (table.label[:table.n] == 0))
        for i in rng.choice(pool, size=min(3, len(pool)), replace=False) if len(pool) else []:
            variants.append(table.tokens[int(i)])
        best = (-2.0, None, None, None)
        for ctx, tags in variants:
            if kind == "III":
                tags = tags + ("verified",)
            vec = self.emb.record(t, ctx, tags, wrong)
            cos = nearest_centroid_cosine(table, vec)
            if cos > best[0]:
                best = (cos, vec, ctx, tags)
        cos, vec, ctx, tags = best
        self.info.centroid_cosines.append(cos)
        if kind == "III" and "C3" in caps:
            agent = int(self.colluders[len(self.info.centroid_cosines) % len(self.colluders)])
            parents = [self.last[t]] if t in self.last else []  # colluders cite each other
            i = _append(table, vec, t, wrong, agent, conf, succ, step, 1, False, "broadcast", (ctx, tags), parents)
            self.last[t] = i
        else:
            agent = int(rng.integers(sc.n_agents))
            _append(table, vec, t, wrong, agent, conf, succ, step, 1, False, "direct", (ctx, tags), [])


def build_memory(sc: Scenario, emb: Embedder, rng: np.random.Generator, n_records: int, attack: Attack) -> tuple[MemoryTable, BuildInfo]:
    """Seed demonstrations, then agents act and write while the attacker injects poison."""
    table = MemoryTable(dim=emb.f.dim, capacity=max(256, n_records + 64))
    for s, sit in enumerate(sc.situations):
        for _ in range(2):
            ctx, tags = nuisance(rng, sit, 0)
            _append(table, emb.record(s, ctx, tags, sit.correct), s, sit.correct, int(rng.integers(sc.n_agents)), 0.9, 1.0, 0, 0, False, "demo", (ctx, tags), [])
    n_poison = int(round(attack.ratio * n_records)) if attack.kind != "none" else 0
    steps = max(1, (n_records - table.n - n_poison) // sc.n_agents)
    attacker = Attacker(attack, sc, emb, rng) if n_poison else None
    when = np.sort(rng.integers(int(0.1 * steps), max(int(0.9 * steps), int(0.1 * steps) + 1), n_poison))
    j = 0
    for step in range(steps):
        while attacker is not None and j < n_poison and when[j] <= step:
            attacker.inject(table, step)
            j += 1
        agent_step(table, sc, emb, rng, step, explore=True)
    return table, (attacker.info if attacker else BuildInfo())


Protector = Callable[[MemoryTable, np.ndarray], None]


def run_eval(table: MemoryTable, sc: Scenario, emb: Embedder, rng: np.random.Generator, steps: int, start: int,
             protect: Protector | None = None, window: int = 8) -> tuple[int, int]:
    """Greedy decisions on `table` (modified in place); `protect` re-evaluates each window."""
    decisions = wrong = 0
    first = table.n
    for step in range(start, start + steps):
        d, w = agent_step(table, sc, emb, rng, step, explore=False)
        decisions += d
        wrong += w
        if protect is not None and (step - start + 1) % window == 0:
            mask = np.zeros(table.n, bool)
            mask[first:] = True
            protect(table, mask)
            first = table.n
    return decisions, wrong
