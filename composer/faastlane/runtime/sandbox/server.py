"""A sandbox process: one function, imported once, invoked over its socket for the
container's life (a warm Lambda: module-level state persists between invocations).

Requests (``wire``) carry the event, the label its output is tagged with, the seconds
the function may run (for its context's remaining time; the caller enforces them), the
activation's environment and whether to trace. The reply is the detached result or the
ASL error, with the trace records made here. One invocation at a time, as on Lambda;
callers on other connections wait their turn.
"""

from __future__ import annotations

import dataclasses
import json
import os
import selectors
import socket
import sys
import time
from typing import Any, NoReturn

from ..asl.errors import StatesError
from ..engine import trace
from ..engine.functions import (
    FunctionSpec,
    Invocable,
    LoadedFunction,
    environment_of,
    initialized,
    load_module,
    runtime_exited,
)
from ..engine.invoke import SANDBOX, timed_invoke
from ..engine.lambda_env import CURRENT
from . import wire

OUT_OF_MEMORY = "Runtime.OutOfMemory"


def load(root: str, spec: FunctionSpec) -> Invocable:
    """Import the function with its own environment (its module set-up sees it). A
    failed init fails each call as on Lambda (and as in the Orchestrator's own heap),
    and is tried again at each: Lambda's error document."""
    environment = environment_of(root, spec)

    def init() -> Invocable:
        CURRENT.view = environment
        try:
            return LoadedFunction(spec, load_module(root, spec), environment,
                                  finish=wire.encode_value)
        finally:
            CURRENT.view = None

    return initialized(spec, init)


def _out_of_memory(error: StatesError) -> StatesError:
    """A function that ran out of its memory, as Lambda reports it."""
    try:
        request_id = json.loads(error.cause or "").get("requestId", "")  # no cause: no id
    except (ValueError, AttributeError):
        request_id = ""
    return runtime_exited("signal: killed", request_id, OUT_OF_MEMORY)


def _answer(function: Invocable, request: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Run one request; the reply and whether this process must be replaced after it."""
    if request.get("ping"):  # the Orchestrator waits for the import to be done
        return {"pong": True}, False
    os.environ.update(request.get("env") or {})
    trace.enabled = bool(request.get("trace"))
    trace.forget()
    recycle = False
    result, error = timed_invoke(request["state"], function, request["event"],
                                 request.get("timeout"), SANDBOX)
    deadline = request.get("deadline")
    if deadline is not None and time.monotonic() > deadline:
        # Returned past its Task's deadline: the caller reports the timeout, however
        # late a busy machine let it read this reply.
        return {"late": True, "trace": trace.take()}, False
    if error is not None and error.error == "MemoryError":
        error, recycle = _out_of_memory(error), True
    reply: dict[str, Any] = ({"value": result} if error is None
                             else {"error": error.error, "cause": error.cause})
    reply["trace"] = trace.take()
    if recycle:  # the caller waits for this process to end and starts another
        reply["recycled"] = True
    return reply, recycle


def _reply(selector: selectors.BaseSelector, connection: socket.socket,
           function: Invocable, request: dict[str, Any]) -> None:
    """Answer one request on its connection; SystemExit after the reply of a sandbox
    that must be replaced (out of memory)."""
    reply, recycle = _answer(function, request)
    payload = wire.encode_reply(reply)  # the value is encoded already
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        wire.send(connection, payload)
    except OSError:
        selector.unregister(connection)
        connection.close()
    if recycle:
        raise SystemExit(0)


def serve(listener: socket.socket, root: str, spec: FunctionSpec,
          trusted_filters: int) -> NoReturn:
    """The sandbox's life: its environment from the Orchestrator (the first message of
    the connection that started it; the zygote never holds it), the import, then
    requests until the zygote goes. Requests that come before the environment wait."""
    status = 0
    try:
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ)
        function: Invocable | None = None
        waiting: list[tuple[socket.socket, dict[str, Any]]] = []
        while True:
            for key, _ in selector.select():
                if key.fileobj is listener:
                    wire.admit(listener, selector, trusted_filters)
                    continue
                # Only sockets are registered (the listener and admitted peers).
                connection: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    request = wire.decode_request(wire.receive(connection))
                except (wire.PeerGone, OSError, ValueError, EOFError):
                    selector.unregister(connection)
                    connection.close()
                    continue
                if function is None:
                    if "init" not in request:
                        waiting.append((connection, request))
                        continue
                    environment = tuple((str(k), str(v)) for k, v in request["init"])
                    function = load(root, dataclasses.replace(spec, environment=environment))
                    sys.stdout.flush()
                    for early, held in waiting:
                        _reply(selector, early, function, held)
                    waiting.clear()
                    continue
                _reply(selector, connection, function, request)
    except SystemExit:
        pass
    except BaseException as exc:  # noqa: BLE001 - never unwind into the zygote's code
        status = 70
        sys.stderr.write(f"[faastlane] sandbox of {spec.name} failed: "
                         f"{type(exc).__name__}: {exc}\n")
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)
