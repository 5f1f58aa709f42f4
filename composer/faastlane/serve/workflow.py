"""The served workflow: its warm child, one call at a time (as one action container
takes one activation at a time), started again if a call kills it."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from faastlane.local_action import stop
from faastlane.runtime.platforms.action_server import Launcher, ProtocolError

CHILD = (sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                      "warm_action.py"))
STOP_GRACE_SECONDS = 5.0


class ChildDied(Exception):
    """The warm child exited during a call (a function crashed the Orchestrator)."""


class WarmWorkflow:
    def __init__(self, name: str, action_dir: str, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.action_dir = action_dir
        self.env = env or {}  # over this process's: a template's local AWS endpoint
        self.lock = threading.Lock()
        self.launcher: Launcher | None = self._start()

    def _start(self) -> Launcher:
        try:
            return Launcher(self.action_dir, "main", self.env, command=CHILD)
        except ProtocolError as exc:
            raise ChildDied(exc.message) from None

    def call(self, value: dict[str, Any], **context: Any) -> dict[str, Any]:
        """One execution; ``value`` says which platform's entry runs it, ``context`` the
        activation's ``__OW_*`` keys."""
        answer = self.call_if(value, None, **context)
        assert answer is not None  # always wanted
        return answer

    def call_if(self, value: dict[str, Any], on_turn: Callable[[], bool] | None,
                **context: Any) -> dict[str, Any] | None:
        """:meth:`call`; ``on_turn``, called once the action is this call's, may say it
        is not wanted any more (None is returned then)."""
        request = json.dumps({"value": value, **context}).encode()
        with self.lock:
            if on_turn is not None and not on_turn():
                return None
            if self.launcher is None or self.launcher.exited():
                self._retire()
                self.launcher = self._start()
            answer = self.launcher.interact(request)
            if answer is None:
                fault = self.launcher.fault()
                self._retire()
                raise ChildDied(fault or "the Orchestrator process exited")
        result: dict[str, Any] = json.loads(answer)
        return result

    def abort(self) -> None:
        """End the running call's action process (a stopped execution): the call gets
        ChildDied, and the next one starts the action again."""
        launcher = self.launcher
        if launcher is not None:
            try:
                launcher.process.kill()
            except ProcessLookupError:
                pass

    def _retire(self) -> None:
        if self.launcher is not None:
            _stop(self.launcher)
            self.launcher = None

    def close(self) -> None:
        with self.lock:
            self._retire()


def _stop(launcher: Launcher) -> None:
    stop(launcher.process, STOP_GRACE_SECONDS)  # as `faastlane run` stops its action
    launcher.stop()
