"""G-Safeguard baseline: a graph attention network over per-agent utterance embeddings
flags attacked agents; their outgoing messages are dropped.

Node features at round r are the embeddings of what each agent sent in round r-1 (mean
over its messages; zeros if it sent none), so flagging starts in round 2. The network is
trained on event logs the runtime writes under attack (`train_gsafeguard`): labels are the
agents the attack compromised, as recorded in each log's `start` event.

Plain torch (dense attention over the small agent graph); torch-geometric would add a
dependency for a few dozen nodes. torch is behind the `torch` extra.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..config import GSafeguardSettings
from ..embed import Embedder
from ..errors import ConfigError, DataError, MissingExtraError
from ..mas import DefenseContext, EventLog, Interception, SystemView, read_events
from ..types import EdgeMessage

if TYPE_CHECKING:
    import networkx as nx  # imported where used: it adds ~0.1-0.4 s to every CLI start

FORMAT = "misguard.gsafeguard"
FORMAT_VERSION = 1


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise MissingExtraError("torch", "torch", "the G-Safeguard defense") from None
    return torch


def _model(dim: int, hidden: int) -> Any:
    torch = _torch()
    nn = torch.nn

    class GraphAttentionLayer(nn.Module):
        """Single-head graph attention (Velickovic et al.) on a dense adjacency with self loops."""

        def __init__(self, d_in: int, d_out: int) -> None:
            super().__init__()
            self.linear = nn.Linear(d_in, d_out, bias=False)
            self.attend_src = nn.Linear(d_out, 1, bias=False)
            self.attend_dst = nn.Linear(d_out, 1, bias=False)

        def forward(self, x: Any, adjacency: Any) -> Any:
            h = self.linear(x)
            logits = torch.nn.functional.leaky_relu(self.attend_dst(h) + self.attend_src(h).T, 0.2)
            logits = logits.masked_fill(adjacency == 0, float("-inf"))
            return torch.softmax(logits, dim=1) @ h

    class GSafeguardNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer1 = GraphAttentionLayer(dim, hidden)
            self.layer2 = GraphAttentionLayer(hidden, hidden)
            self.head = nn.Linear(hidden + dim, 1)

        def forward(self, x: Any, adjacency: Any) -> Any:
            h = torch.relu(self.layer1(x, adjacency))
            h = torch.relu(self.layer2(h, adjacency))
            return self.head(torch.cat([h, x], dim=1)).squeeze(1)

    return GSafeguardNet()


@dataclass
class GraphSample:
    """One round of one run: node features, adjacency (receiver attends to sender), labels."""

    agents: list[str]
    features: np.ndarray
    adjacency: np.ndarray
    labels: np.ndarray


def adjacency_of(graph_edges: Sequence[Sequence[str]], agents: Sequence[str]) -> np.ndarray:
    index = {a: i for i, a in enumerate(agents)}
    adj = np.eye(len(agents), dtype=np.float32)
    for a, b in graph_edges:
        if a in index and b in index:
            adj[index[b], index[a]] = 1.0  # b receives from a
    return adj


def round_features(messages: list[dict[str, Any]], agents: Sequence[str], embedder: Embedder) -> np.ndarray:
    """Mean embedding of each agent's messages (as written) in one round; zeros if none."""
    features = np.zeros((len(agents), embedder.dim), dtype=np.float32)
    index = {a: i for i, a in enumerate(agents)}
    texts = [m["original"] for m in messages if m["sender"] in index]
    owners = [index[m["sender"]] for m in messages if m["sender"] in index]
    if texts:
        vectors = embedder.embed(texts, "query")
        counts = np.zeros(len(agents))
        for owner, vector in zip(owners, vectors):
            features[owner] += vector
            counts[owner] += 1
        features[counts > 0] /= counts[counts > 0, None]
    return features


def samples_from_log(log: EventLog, embedder: Embedder) -> list[GraphSample]:
    """One sample per round of a run under attack (labels from the `start` event)."""
    start = next(log.of_type("start"), None)
    if start is None:
        return []
    agents = list(start.data["agents"])
    compromised = start.data.get("compromised", {})
    labels = np.array([float(any(compromised.get(a, {}).values())) for a in agents], dtype=np.float32)
    adjacency = adjacency_of(start.data["edges"], agents)
    out = []
    for r in log.rounds():
        messages = log.messages(r, delivered_only=False)
        if messages:
            out.append(GraphSample(agents, round_features(messages, agents, embedder), adjacency, labels))
    return out


def _fit(model: Any, optimiser: Any, tensors: list[Any], weight: Any, epochs: int) -> float:
    """Adam over the samples in shuffled order; returns the last epoch's mean loss."""
    torch = _torch()
    loss_value = 0.0
    for _ in range(epochs):
        order = list(range(len(tensors)))
        random.shuffle(order)
        loss_value = 0.0
        for i in order:
            x, adj, y = tensors[i]
            optimiser.zero_grad()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(model(x, adj), y, pos_weight=weight)
            loss.backward()
            optimiser.step()
            loss_value += float(loss.detach())
    return loss_value / max(1, len(tensors))


def train_gsafeguard(
    event_logs: Sequence[str | Path], embedder: Embedder, output: str | Path, *,
    epochs: int = 200, hidden: int = 64, lr: float = 5e-3, seed: int = 0,
) -> dict[str, Any]:
    """Train on event logs of attacked runs; save weights and how they were made.

    Returns a report (samples, positives, final loss, training accuracy).
    """
    torch = _torch()
    samples = [s for path in event_logs for s in samples_from_log(read_events(path), embedder)]
    if not samples or not any(s.labels.any() for s in samples):
        raise DataError("no attacked rounds in these event logs; train on runs with an attack", source=str(event_logs[:1]))
    random.seed(seed)
    torch.manual_seed(seed)
    model = _model(embedder.dim, hidden)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=1e-4)
    positives = float(sum(s.labels.sum() for s in samples))
    total = float(sum(len(s.labels) for s in samples))
    weight = torch.tensor((total - positives) / max(positives, 1.0))  # classes are unbalanced (1 of N)
    tensors = [(torch.tensor(s.features), torch.tensor(s.adjacency), torch.tensor(s.labels)) for s in samples]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a few dozen nodes: thread hand-offs cost more than they save
    try:
        loss_value = _fit(model, optimiser, tensors, weight, epochs)
    finally:
        torch.set_num_threads(threads)
    with torch.no_grad():
        correct = sum(int(((model(x, adj) > 0).float() == y).sum()) for x, adj, y in tensors)
    report = {
        "samples": len(samples), "nodes": int(total), "positives": int(positives),
        "final_loss": loss_value, "train_accuracy": correct / total,
        "epochs": epochs, "hidden": hidden, "lr": lr, "seed": seed,
        "embedder": embedder.describe(), "logs": [str(p) for p in event_logs],
    }
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"format": FORMAT, "version": FORMAT_VERSION, "dim": embedder.dim, "hidden": hidden,
                "state": model.state_dict(), "report": report}, output)
    return report


class GSafeguard:
    """The G-Safeguard interceptor: flags agents each round, drops their messages.

    Args:
        model_path: weights from `train_gsafeguard` (made for this embedder).
        embedder: embeds utterances.
        params: `settings.defense.g_safeguard`.
    """

    name = "g-safeguard"

    def __init__(self, model_path: str | Path, embedder: Embedder, params: GSafeguardSettings | None = None) -> None:
        torch = _torch()
        path = Path(model_path)
        if not path.is_file():
            raise ConfigError(f"G-Safeguard weights {path} not found; train them with `misguard defenses fit-gsafeguard`")
        saved = torch.load(path, map_location="cpu", weights_only=True)
        if saved.get("format") != FORMAT:
            raise DataError("not G-Safeguard weights", source=str(path))
        if saved["dim"] != embedder.dim:
            raise ConfigError(f"{path} was trained for {saved['dim']}-dim embeddings; the embedder gives {embedder.dim}")
        self.model = _model(saved["dim"], saved["hidden"])
        self.model.load_state_dict(saved["state"])
        self.model.eval()
        self.training_report = saved["report"]
        self.path = path
        self.embedder = embedder
        self.params = params or GSafeguardSettings()
        self.flagged: set[str] = set()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "model_path": str(self.path), "params": self.params.model_dump(mode="json"),
                "embedder": self.embedder.describe(), "training": {k: v for k, v in self.training_report.items() if k != "logs"}}

    def scores(self, graph: nx.DiGraph, agents: Sequence[str], messages: list[dict[str, Any]]) -> dict[str, float]:
        """Probability that each agent is attacked, from one round's messages."""
        torch = _torch()
        x = torch.tensor(round_features(messages, agents, self.embedder))
        adj = torch.tensor(adjacency_of(list(graph.edges()), agents))
        with torch.no_grad():
            probs = torch.sigmoid(self.model(x, adj)).tolist()
        return dict(zip(agents, probs))

    def round_scores(self, view: SystemView, round: int) -> dict[str, float]:
        """`scores` of every agent from what it wrote in `round` (as written, delivered or not)."""
        agents = list(view.agents) or sorted(view.graph.nodes())
        return self.scores(view.graph, agents, view.log.messages(round, delivered_only=False))

    async def start_round(self, view: SystemView) -> dict[str, Any] | None:
        if view.round == 1:
            self.flagged = set()
            return None
        scores = self.round_scores(view, view.round - 1)
        self.flagged = {a for a, p in scores.items() if p > self.params.threshold}
        return {"flagged": sorted(self.flagged), "scores": {a: round(p, 4) for a, p in scores.items()}}

    async def intercept(self, message: EdgeMessage, view: SystemView) -> Interception:
        if message.sender in self.flagged:
            return Interception.blocked(f"{message.sender} flagged as attacked")
        return Interception.passed()


def build_gsafeguard(context: DefenseContext, params: GSafeguardSettings) -> list[GSafeguard]:
    if params.model_path is None:
        raise ConfigError(
            "g-safeguard needs trained weights: train with `misguard defenses fit-gsafeguard`, then pass "
            "--defense-param model_path=PATH (or set defense.g_safeguard.model_path)"
        )
    return [GSafeguard(params.model_path, context.need_embedder("g-safeguard"), params)]
