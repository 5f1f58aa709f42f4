"""The served workflow: warm copies of the composed action, each taking one call at a
time (as one action container takes one activation at a time), started again if a call
kills it.

Up to ``concurrency`` copies run calls at once; one is started with the server (it says
whether the action starts at all), the others when calls need them, as a platform starts
containers; a call beyond them waits for a free copy. A spilled group of Parallel or Map
jobs (the action calling itself through the served OpenWhisk API, ``--max-containers``)
is what a platform runs in an extra container: it gets a copy beyond ``concurrency``, so
the call that spilled it, holding its own copy, never waits on itself.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from faastlane.local_action import stop
from faastlane.runtime.engine import flight
from faastlane.runtime.parallel.protocol import GROUP_KEY
from faastlane.runtime.platforms.action_server import Launcher, ProtocolError

CHILD = (sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                      "warm_action.py"))
STOP_GRACE_SECONDS = 5.0
FLIGHT_VARIABLE = "FAASTLANE_FLIGHT"  # the warm child's flight record (warm_action)


class ChildDied(Exception):
    """The warm child exited during a call (a function crashed the Orchestrator)."""


class _Copy:
    """One warm copy of the action (None until started, or after it died), and the file
    its Orchestrator records its running states in (``engine.flight``)."""

    def __init__(self, flight_file: str) -> None:
        self.launcher: Launcher | None = None
        self.flight_file = flight_file
        flight.prepare(flight_file)


class WarmWorkflow:
    def __init__(self, name: str, action_dir: str, env: dict[str, str] | None = None,
                 concurrency: int = 1) -> None:
        self.name = name
        self.action_dir = action_dir
        self.env = env or {}  # over this process's: a template's local AWS endpoint
        self.concurrency = max(1, concurrency)
        self._changed = threading.Condition()
        self._free: list[_Copy] = []
        self._counted = 0  # copies that count against concurrency (spills' do not)
        self._all: list[_Copy] = []
        first = self._new_copy()
        first.launcher = self._start(first)
        self._add(first, counted=True)
        self._free.append(first)

    def _new_copy(self) -> _Copy:
        # Beside the action, in serve's own temporary folder.
        return _Copy(os.path.join(os.path.dirname(self.action_dir),
                                  f"flight-{len(self._all)}"))

    def _start(self, copy: _Copy) -> Launcher:
        try:
            return Launcher(self.action_dir, "main",
                            {**self.env, FLIGHT_VARIABLE: copy.flight_file}, command=CHILD)
        except ProtocolError as exc:
            raise ChildDied(exc.message) from None

    def _add(self, copy: _Copy, counted: bool) -> None:
        self._all.append(copy)
        self._counted += counted

    def _take(self, spill: bool) -> _Copy:
        with self._changed:
            while True:
                if self._free:
                    return self._free.pop()
                if spill or self._counted < self.concurrency:
                    copy = self._new_copy()  # started by its first call, outside the lock
                    self._add(copy, counted=not spill)
                    return copy
                self._changed.wait()

    def _give_back(self, copy: _Copy) -> None:
        with self._changed:
            self._free.append(copy)
            self._changed.notify()

    def call(self, value: dict[str, Any], **context: Any) -> dict[str, Any]:
        """One execution; ``value`` says which platform's entry runs it, ``context`` the
        activation's ``__OW_*`` keys."""
        answer = self.call_if(value, None, **context)
        assert answer is not None  # always wanted
        return answer

    def call_if(self, value: dict[str, Any],
                on_turn: Callable[[Callable[[], None]], bool] | None,
                **context: Any) -> dict[str, Any] | None:
        """:meth:`call`; ``on_turn(abort)``, called once a copy is this call's, may say
        the call is not wanted any more (None is returned then); ``abort()`` ends that
        copy's process while it runs the call (which then raises ChildDied)."""
        request = json.dumps({"value": value, **context}).encode()
        spill = isinstance(value.get("params"), dict) and GROUP_KEY in value["params"]
        copy = self._take(spill)
        try:
            if copy.launcher is None or copy.launcher.exited():
                _retire(copy)
                copy.launcher = self._start(copy)
            launcher = copy.launcher
            if on_turn is not None and not on_turn(lambda: _kill(launcher)):
                return None
            answer = launcher.interact(request)
            if answer is None:
                fault = launcher.fault()
                _retire(copy)
                raise ChildDied((fault or "the Orchestrator process exited")
                                + flight.while_running(copy.flight_file))
        finally:
            self._give_back(copy)
        result: dict[str, Any] = json.loads(answer)
        return result

    def close(self) -> None:
        with self._changed:
            copies = list(self._all)
        for copy in copies:
            _retire(copy)


def _kill(launcher: Launcher) -> None:
    try:
        launcher.process.kill()
    except ProcessLookupError:
        pass


def _retire(copy: _Copy) -> None:
    if copy.launcher is not None:
        stop(copy.launcher.process, STOP_GRACE_SECONDS)  # as `faastlane run` stops its action
        copy.launcher.stop()
        copy.launcher = None
