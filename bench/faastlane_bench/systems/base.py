"""What every system under test is to the worker: a :class:`System` that runs one
execution and reports it as a :class:`RunResult` (which also crosses the worker's pipe
as JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..timeline import Span


@dataclass
class RunResult:
    """One workflow execution as a system reports it."""

    status: str
    output: Any
    start: float  # wall clock, time.time()
    end: float
    spans: list[Span] = field(default_factory=list)
    external: list[tuple[float, float]] = field(default_factory=list)
    states: int = 0  # states entered (Step Functions bills these as transitions)

    def to_json(self, with_output: bool) -> dict[str, Any]:
        return {"status": self.status, "output": self.output if with_output else None,
                "start": self.start, "end": self.end,
                "spans": [[s.function, s.start, s.end] for s in self.spans],
                "external": self.external, "states": self.states}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        return cls(data["status"], data["output"], data["start"], data["end"],
                   [Span(*s) for s in data["spans"]], [tuple(e) for e in data["external"]],
                   data.get("states", 0))


class System(Protocol):
    """What a worker serves: run one execution (traced or not), and shut down. A system
    is built from the worker's spec (a dict: ``app``, ``planning``, ...)."""

    def run(self, execution_input: Any, traced: bool) -> RunResult: ...

    def close(self) -> None: ...
