"""Worker processes: each system under test runs in its own process tree.

The harness starts ``python -m faastlane_bench.worker SPEC_JSON``; the worker builds the
system of ``faastlane_bench.systems`` the spec names (a Faastlane action, the
OpenWhisk-style controller and its action processes, moto's Step Functions engine, or
Faastlane on several containers), loads the app's inputs once, and answers requests, one
JSON line each way. Requests may overlap (throughput runs): each is served on its own
thread and answered with its ``id``. Responses go to a private pipe, because the
functions' own prints (fd 1) belong on standard error, as on a real platform.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future
from typing import IO, Any

from .systems.base import RunResult, System


def build_system(spec: dict[str, Any]) -> System:
    """The system ``spec["system"]`` names (a worker imports only its own system's module)."""
    kind = spec["system"]
    if kind == "faastlane":
        from .systems.faastlane import FaastlaneSystem
        return FaastlaneSystem(spec)
    if kind == "openwhisk":
        from .systems.openwhisk import OpenWhiskSystem
        return OpenWhiskSystem(spec)
    if kind == "faastlane-containers":
        from .systems.spilling import SpillingSystem
        return SpillingSystem(spec)
    if kind == "stepfunctions":
        from .systems.step_functions import StepFunctionsSystem
        return StepFunctionsSystem(spec)
    raise ValueError(f"unknown system {kind!r}")


def serve(spec: dict[str, Any]) -> int:
    responses = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # from here on, prints (the functions' logs) go to standard error
    sys.stdout = sys.stderr
    lock = threading.Lock()

    def answer(message: dict[str, Any]) -> None:
        line = json.dumps(message)
        with lock:
            responses.write(line + "\n")
            responses.flush()

    inputs = {}
    for name, path in spec["inputs"].items():
        with open(path, encoding="utf-8") as handle:
            inputs[name] = json.load(handle)
    try:
        system = build_system(spec)
    except Exception as exc:  # noqa: BLE001 - reported to the harness, which stops
        answer({"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        raise
    answer({"ready": True, "pid": os.getpid()})

    def handle_request(request: dict[str, Any]) -> None:
        try:
            result = system.run(inputs[request["input"]], request.get("traced", True))
            answer({"id": request["id"], **result.to_json(request.get("output", False))})
        except Exception as exc:  # noqa: BLE001 - a harness failure, not a workflow's
            answer({"id": request["id"], "failure": f"{type(exc).__name__}: {exc}"})

    threads = []
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("op") == "quit":
            break
        thread = threading.Thread(target=handle_request, args=(request,), daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    system.close()
    return 0


class WorkerError(RuntimeError):
    """The worker failed to start or to run a request (not a failed workflow)."""


class WorkerClient:
    """The harness's handle on one worker process."""

    def __init__(self, spec: dict[str, Any], log: IO[str], env: dict[str, str] | None = None,
                 start_timeout: float = 300.0) -> None:
        self.spec = spec
        # The worker's own temporary folder (TMPDIR for it, its action servers and its
        # functions), removed by close(): nothing is left even when the worker had to be
        # killed before it could clean up after itself.
        self.tmpdir = tempfile.mkdtemp(prefix="faastlane-bench-worker-")
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "faastlane_bench.worker", json.dumps(spec)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                env={**(os.environ if env is None else env), "TMPDIR": self.tmpdir},
                start_new_session=True)
        except BaseException:
            shutil.rmtree(self.tmpdir, ignore_errors=True)
            raise
        try:
            self._start(start_timeout)
        except BaseException:  # a failed start, or the harness interrupted meanwhile
            self.close()
            raise

    def _start(self, start_timeout: float) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self._requests = self.process.stdin
        self._responses = self.process.stdout
        self._pending: dict[int, Future[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._next = 0
        ready: Future[dict[str, Any]] = Future()
        self._pending[-1] = ready
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            hello = ready.result(timeout=start_timeout)
        except TimeoutError:
            hello = {"ready": False, "error": f"no answer in {start_timeout:g} s"}
        if not hello.get("ready"):
            raise WorkerError(f"{self.spec['system']} worker did not start: "
                              f"{hello.get('error')}")
        self.pid = int(hello["pid"])

    def _read(self) -> None:
        for line in self._responses:
            message = json.loads(line)
            key = -1 if "ready" in message else message["id"]
            with self._lock:
                future = self._pending.pop(key, None)
            if future is not None:
                future.set_result(message)
        with self._lock:
            pending, self._pending = self._pending, {}
        for future in pending.values():
            future.set_result({"failure": "the worker exited", "ready": False})

    def submit(self, input_name: str, traced: bool = True,
               output: bool = False) -> Future[dict[str, Any]]:
        future: Future[dict[str, Any]] = Future()
        with self._lock:
            self._next += 1
            request_id = self._next
            self._pending[request_id] = future
            self._requests.write(json.dumps({"id": request_id, "input": input_name,
                                             "traced": traced, "output": output}) + "\n")
            self._requests.flush()
        return future

    def run(self, input_name: str, traced: bool = True, output: bool = False) -> RunResult:
        message = self.submit(input_name, traced, output).result()
        if "failure" in message:
            raise WorkerError(f"{self.spec['system']}: {message['failure']}")
        return RunResult.from_json(message)

    def close(self) -> None:
        try:
            self._requests.write(json.dumps({"op": "quit"}) + "\n")
            self._requests.flush()
            self._requests.close()
            self.process.wait(timeout=60)
        except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        # The worker ran in its own session: end whatever of it is left (the action
        # servers of a worker that failed half-way), and nothing else.
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        shutil.rmtree(self.tmpdir, ignore_errors=True)


def main() -> int:
    return serve(json.loads(sys.argv[1]))


if __name__ == "__main__":
    sys.exit(main())
