"""Micro-benchmark of one call of a warm sandboxed function (issue 22's hand-off goal).

An echo function (it returns its event) is called with payloads of 1 KB and 1 MB, in
three ways measured side by side in one process:

- ``thread``: on the Orchestrator's thread, as ``--isolation none`` runs it (the event
  copied as a hand-off copies it, the result detached);
- ``sandbox``: in its warm sandbox process (``--isolation process``), request and reply
  over the sandbox's socket, round trip;
- ``fork``: one forked process per call (``-P``, and ``--isolation process`` before the
  sandboxes), round trip;
- ``hand-off``: one direction, from the call to the sandboxed function's first line (a
  function that returns ``time.perf_counter()`` as it starts: the monotonic clock is
  the same in every process).
 Payloads: ``1KB`` (a 1 KB string
field), ``1MB-str`` (a 1 MiB string field, as an image in base64 travels), ``1MB-rows``
(25,000 small objects, ~1.2 MB of JSON). Medians over ``--calls`` calls; nothing is
asserted:

    python bench/sandbox_handoff.py [--calls 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from faastlane.runtime.asl.jsonvalue import copy_event
from faastlane.runtime.engine.forking import run_forked
from faastlane.runtime.engine.functions import LAMBDA, FunctionSpec, LoadedFunction, load_module
from faastlane.runtime.sandbox.host import Sandboxes

PAYLOADS: dict[str, Any] = {
    "1KB": {"data": "x" * 1000},
    "1MB-str": {"data": "x" * (1 << 20)},
    "1MB-rows": {"rows": [{"id": i, "price": i * 1.5, "symbol": f"S{i}"} for i in range(25000)]},
}


def _median_ms(call: Callable[[], Any], count: int) -> float:
    times = []
    for _ in range(count):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sandbox-handoff-") as root:
        _measure(root, args.calls)


def _measure(root: str, calls: int) -> None:
    """The echo and stamp functions in ``root``, measured side by side."""
    os.makedirs(os.path.join(root, "functions"))
    with open(os.path.join(root, "functions", "echo.py"), "w", encoding="utf-8") as handle:
        handle.write("def handler(event, context):\n    return event\n")
    with open(os.path.join(root, "functions", "stamp.py"), "w", encoding="utf-8") as handle:
        handle.write("import time\n\n\ndef handler(event, context):\n"
                     "    return time.perf_counter()\n")
    spec = FunctionSpec("echo", "functions/echo.py", "handler", LAMBDA)
    stamp = FunctionSpec("stamp", "functions/stamp.py", "handler", LAMBDA)
    sandboxes = Sandboxes(root, [spec, stamp], slots=1)
    sandboxes.warm()
    sandboxes.ready()
    loaded = LoadedFunction(spec, load_module(root, spec))
    print(f"{'payload':10} {'thread ms':>10} {'sandbox ms':>11} {'fork ms':>9} "
          f"{'hand-off ms':>12}  (round trips, then one way; medians of {calls} calls)")
    try:
        for name, event in PAYLOADS.items():
            def in_sandbox(event: Any = event) -> Any:
                return sandboxes.call("echo", {"state": "echo", "event": event,
                                               "timeout": None, "env": {}}, None)["value"]

            assert in_sandbox() == event  # the payload made the whole trip
            thread = _median_ms(lambda e=event: loaded.invoke(copy_event(e)), calls)
            sandbox = _median_ms(in_sandbox, calls)
            fork = _median_ms(lambda e=event: run_forked([lambda: loaded.invoke(e)], 1),
                              max(10, calls // 10))
            one_way = []
            for _ in range(calls):
                began = time.perf_counter()
                entered = sandboxes.call("stamp", {"state": "stamp", "event": event,
                                                   "timeout": None, "env": {}}, None)["value"]
                one_way.append(entered - began)
            handoff = statistics.median(one_way) * 1000
            print(f"{name:10} {thread:10.3f} {sandbox:11.3f} {fork:9.3f} {handoff:12.3f}")
    finally:
        sandboxes.close()


if __name__ == "__main__":
    main()
