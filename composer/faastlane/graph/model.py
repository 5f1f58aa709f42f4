"""The picture's content: states as nodes, transitions as edges, Parallel and Map states
as clusters holding their branches or iterator, each Task's placement and trust.

Placement comes from the plan that ``faastlane compose`` writes (``compose.plan``), so the
picture says what plan.json says; trust from the app's faastlane.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from faastlane.compose.action import Composition
from faastlane.runtime.asl.model import (
    Catcher,
    Choice,
    Fail,
    Machine,
    Map,
    Parallel,
    Retrier,
    State,
    Task,
)
from faastlane.runtime.parallel.protocol import state_keys

from .choice_text import condition
from .trace_times import StateTime

START, END = "__start__", "__end__"
UNTRUSTED, SENSITIVE, TRUSTED = "untrusted", "sensitive", "trusted"

# Edge kinds: how an edge is drawn.
NEXT, CHOICE, DEFAULT, CATCH = "next", "choice", "default", "catch"

# What a placement word of plan.json means, as the picture says it.
TASK_PLACEMENTS = {"thread": "thread", "sandbox": "sandboxed process",
                   "process": "forked process"}
SECTION_PLACEMENTS = {"threads": "on threads", "processes": "in warm processes",
                      "containers": "in processes, extra containers when wide"}
# A section whose local placement the Orchestrator learns (plan.json's "learned").
LEARNED = "on threads, or warm processes once timing shows they pay"


@dataclass
class Node:
    id: str
    name: str
    kind: str  # a state Type, or Start/End
    lines: list[str] = field(default_factory=list)  # details under the name
    trust: str | None = None  # untrusted / sensitive / trusted, Tasks only
    placement: str | None = None  # plan.json's word
    time: str | None = None  # measured, from a trace


@dataclass
class Edge:
    source: str
    target: str
    label: str = ""
    kind: str = NEXT


@dataclass
class Diagram:
    """One state machine: the workflow, a Parallel branch or a Map iterator."""

    items: list[Node | Cluster] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    title: str = ""  # "branch 1", "per item"


@dataclass
class Cluster:
    """A Parallel or Map state: a box around its branches (or its iterator)."""

    id: str
    name: str
    kind: str
    lines: list[str] = field(default_factory=list)
    diagrams: list[Diagram] = field(default_factory=list)
    placement: str | None = None
    time: str | None = None


@dataclass
class Graph:
    name: str
    isolation: str
    diagram: Diagram
    subtitle: str = ""

    def nodes(self) -> list[Node]:
        return [item for item in _walk(self.diagram) if isinstance(item, Node)]

    def clusters(self) -> list[Cluster]:
        return [item for item in _walk(self.diagram) if isinstance(item, Cluster)]

    def edges(self) -> list[Edge]:
        found: list[Edge] = []

        def visit(diagram: Diagram) -> None:
            found.extend(diagram.edges)
            for item in diagram.items:
                if isinstance(item, Cluster):
                    for inner in item.diagrams:
                        visit(inner)

        visit(self.diagram)
        return found


def _walk(diagram: Diagram) -> list[Node | Cluster]:
    found: list[Node | Cluster] = []
    for item in diagram.items:
        found.append(item)
        if isinstance(item, Cluster):
            for inner in item.diagrams:
                found.extend(_walk(inner))
    return found


def _errors(errors: tuple[str, ...]) -> str:
    return ", ".join(errors)


def _retry_line(retry: tuple[Retrier, ...]) -> str:
    attempts = sum(r.max_attempts for r in retry)
    errors = ", ".join(e for r in retry for e in r.error_equals)
    return f"retry x{attempts}: {errors}"


def _catch_edges(source: str, catch: tuple[Catcher, ...], keys: dict[str, str]) -> list[Edge]:
    return [Edge(source, keys[c.next], f"catch {_errors(c.error_equals)}", CATCH)
            for c in catch]


def _trust(function: str | None, plan: dict[str, Any]) -> str | None:
    marks = plan["functions"].get(function or "", {})
    for word in (UNTRUSTED, SENSITIVE, TRUSTED):
        if marks.get(word):
            return word
    return None


def _time(times: dict[str, StateTime], name: str) -> str | None:
    measured = times.get(name)
    return None if measured is None else measured.text()


class _Builder:
    def __init__(self, composition: Composition, times: dict[str, StateTime]) -> None:
        self.plan = composition.plan
        self.times = times
        self.ids = state_keys(composition.workflow)

    def diagram(self, machine: Machine, top: bool, title: str = "") -> Diagram:
        diagram = Diagram(title=title)
        keys = {name: self.ids[id(state)] for name, state in machine.states.items()}
        if top:
            diagram.items.append(Node(START, "Start", "Start"))
            diagram.edges.append(Edge(START, keys[machine.start_at]))
        ends = False
        for name, state in machine.states.items():
            diagram.items.append(self.item(state, keys[name]))
            if isinstance(state, Choice):
                for rule in state.choices:
                    diagram.edges.append(Edge(keys[name], keys[rule["Next"]],
                                              condition(rule), CHOICE))
                if state.default is not None:
                    diagram.edges.append(Edge(keys[name], keys[state.default], "default",
                                              DEFAULT))
            elif state.next is not None:
                diagram.edges.append(Edge(keys[name], keys[state.next]))
            elif not isinstance(state, Fail):
                ends = True
                if top:
                    diagram.edges.append(Edge(keys[name], END))
            catch = getattr(state, "catch", ())
            diagram.edges.extend(_catch_edges(keys[name], catch, keys))
        if top and ends:
            diagram.items.append(Node(END, "End", "End"))
        return diagram

    def item(self, state: State, key: str) -> Node | Cluster:
        planned = self.plan["states"].get(key, {})
        placement = planned.get("placement")
        if isinstance(state, (Parallel, Map)):
            if planned.get("learned"):
                return self.cluster(state, key, placement, LEARNED + (
                    ", extra containers when wide" if placement == "containers" else ""))
            return self.cluster(state, key, placement)
        node = Node(key, state.name, type(state).__name__, placement=placement,
                    time=_time(self.times, state.name))
        if isinstance(state, Task):
            function = state.function or "(named at run time)"
            if function != state.name:
                node.lines.append(f"function {function}")
            node.lines.append(TASK_PLACEMENTS.get(placement or "", placement or ""))
            node.trust = _trust(state.function, self.plan)
            if state.retry:
                node.lines.append(_retry_line(state.retry))
        elif isinstance(state, Fail) and state.error:
            node.lines.append(state.error)
        return node

    def cluster(self, state: Parallel | Map, key: str, placement: str | None,
                where: str | None = None) -> Cluster:
        where = where or SECTION_PLACEMENTS.get(placement or "", placement or "")
        if isinstance(state, Parallel):
            lines = [f"{len(state.branches)} branches {where}"]
            diagrams = [self.diagram(branch, False, f"branch {index + 1}")
                        for index, branch in enumerate(state.branches)]
        else:
            source = "items" if state.has_items else state.items_path
            limit = f", at most {state.max_concurrency} at once" \
                if isinstance(state.max_concurrency, int) and state.max_concurrency else ""
            lines = [f"one iteration per item of {source}", f"iterations {where}{limit}"]
            diagrams = [self.diagram(state.iterator, False, "per item")]
        if state.retry:
            lines.append(_retry_line(state.retry))
        return Cluster(key, state.name, type(state).__name__, lines, diagrams, placement,
                       _time(self.times, state.name))


def build(composition: Composition, times: dict[str, StateTime] | None = None,
          end_to_end: str | None = None) -> Graph:
    """The graph of a composed app; ``times`` (state name -> measured) from a trace."""
    isolation = composition.plan["isolation"]["mode"]
    diagram = _Builder(composition, times or {}).diagram(composition.workflow, True)
    subtitle = f"isolation {isolation}"
    if end_to_end:
        subtitle += f"; traced run: {end_to_end} end to end"
    return Graph(composition.app.name, isolation, diagram, subtitle)
