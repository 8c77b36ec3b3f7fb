"""The multi-agent runtime: planner, workers on a directed graph, concluder; rounds,
bounded memory, LLM-simulated tools, an interceptor seam for defenses and a versioned
JSONL event log.

    system = MultiAgentSystem(task, RoleLLMs(worker=get_llm("local/qwen2.5-1.5b")), MASConfig(topology="star"))
    await system.plan()             # subtasks and graph; attacks modify system.agents now
    system.add_interceptor(defense) # every message passes through it before delivery
    result = await system.run()     # result.answer, result.log (EventLog), result.graph
"""

from ._events import EVENTS_SCHEMA, EVENTS_VERSION, Event, EventLog, read_events
from ._interceptor import (
    DEFENSES,
    ConclusionReviewer,
    DefenseContext,
    DefenseFactory,
    EventLogView,
    Interception,
    Interceptor,
    InterceptorAction,
    SystemView,
    build_defense,
    defense_params,
    run_interceptors,
)
from ._memory import ShortTermMemory
from ._runtime import (
    Agent,
    MASConfig,
    MASResult,
    MultiAgentSystem,
    PlanAnswer,
    Retriever,
    RoleLLMs,
    WorkerAction,
    topology_names,
)
from ._task import Task, ToolSpec
from ._tasks import MisinfoTask, load_tasks, parse_seeds, parse_task_selection, sample_tasks_path
from ._topology import TOPOLOGIES, build_graph, graph_from_adjacency, graph_from_edges

__all__ = [
    "DEFENSES",
    "EVENTS_SCHEMA",
    "EVENTS_VERSION",
    "TOPOLOGIES",
    "Agent",
    "ConclusionReviewer",
    "DefenseContext",
    "DefenseFactory",
    "Event",
    "EventLog",
    "EventLogView",
    "Interception",
    "Interceptor",
    "InterceptorAction",
    "MASConfig",
    "MASResult",
    "MisinfoTask",
    "MultiAgentSystem",
    "PlanAnswer",
    "Retriever",
    "RoleLLMs",
    "ShortTermMemory",
    "SystemView",
    "Task",
    "ToolSpec",
    "WorkerAction",
    "build_defense",
    "build_graph",
    "defense_params", "run_interceptors",
    "graph_from_adjacency",
    "graph_from_edges",
    "load_tasks",
    "parse_seeds",
    "parse_task_selection",
    "read_events",
    "sample_tasks_path",
    "topology_names",
]
