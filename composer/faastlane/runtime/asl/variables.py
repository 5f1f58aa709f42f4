"""Workflow variables: what ``Assign`` stores and ``$name`` reads, with their scopes.

Following the Step Functions developer guide, "Passing data between states with
variables":

- a state's ``Assign`` stores variables that every *later* state of the same scope can
  read; the whole state (its paths, expressions and Assign itself) sees the values it was
  entered with, and the new values take effect when the state completes;
- the top-level states share one scope; each Parallel branch and Map iteration runs in
  an inner scope that reads the outer variables but cannot assign them, and whose own
  variables are gone when the branch ends (results come back through its output);
- the values one ``Assign`` stores may total at most 256 KiB, and all the variables of
  an execution at most 10 MiB; beyond that the state fails with
  ``States.DataLimitExceeded``.

A forked branch process inherits its :class:`Variables` object with the rest of the
Orchestrator's memory, so outer variables need no transport; nothing flows back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import DATA_LIMIT_EXCEEDED, RUNTIME, StatesError
from .jsonvalue import compact_json

MAX_ASSIGN_BYTES = 256 * 1024
MAX_TOTAL_BYTES = 10 * 1024 * 1024


def encoded_size(value: Any) -> int:
    """The bytes ``value`` counts against the variable limits: its compact UTF-8 JSON.

    Every measure of variables goes through here, so a scope rebuilt elsewhere (a remote
    group's, from the variables it was sent) starts from the same total as ``Assign``'s.
    """
    return len(compact_json(value).encode("utf-8"))


class Variables:
    """The variables one (sub-)machine run sees: its own, over read-only outer ones."""

    __slots__ = ("_outer", "_outer_bytes", "_own", "_own_bytes", "_view")

    def __init__(self, outer: Mapping[str, Any] | None = None, outer_bytes: int = 0) -> None:
        self._outer: Mapping[str, Any] = outer or {}
        self._outer_bytes = outer_bytes
        self._own: dict[str, Any] = {}
        self._own_bytes: dict[str, int] = {}
        self._view: Mapping[str, Any] = self._outer

    @property
    def view(self) -> Mapping[str, Any]:
        """Every variable visible here (inner ones shadow nothing: names are unique)."""
        return self._view

    def inner(self) -> Variables:
        """The scope of a Parallel branch or Map iteration started from here."""
        return Variables(self._view, self._outer_bytes + sum(self._own_bytes.values()))

    def assign(self, values: Mapping[str, Any], state_name: str) -> None:
        """Store one state's evaluated ``Assign`` (all names at once, or none)."""
        if not values:
            return
        sizes = {}
        for name, value in values.items():
            if name in self._outer:
                raise StatesError(RUNTIME, f"State '{state_name}' cannot assign the variable "
                                           f"'{name}': it belongs to an outer scope (a Parallel "
                                           "branch or Map iteration can only read it)")
            sizes[name] = encoded_size(value)
        assigned = sum(sizes.values())
        if assigned > MAX_ASSIGN_BYTES:
            raise StatesError(DATA_LIMIT_EXCEEDED, f"State '{state_name}' assigns {assigned} "
                                                   f"bytes of variables; the limit for one "
                                                   f"Assign is {MAX_ASSIGN_BYTES} bytes")
        own = {**self._own_bytes, **sizes}
        total = self._outer_bytes + sum(own.values())
        if total > MAX_TOTAL_BYTES:
            raise StatesError(DATA_LIMIT_EXCEEDED, f"State '{state_name}': the execution's "
                                                   f"variables would total {total} bytes; the "
                                                   f"limit is {MAX_TOTAL_BYTES} bytes")
        self._own.update(values)
        self._own_bytes = own
        self._view = {**self._outer, **self._own} if self._outer else dict(self._own)
