"""One user function packaged as its own OpenWhisk action (the baselines' unit of work).

The action's ``__main__.py`` (written by :mod:`.action_pool`) builds a
:class:`FunctionAction` and exports its :meth:`~FunctionAction.main`. The function is
loaded and called by the same code Faastlane uses (``runtime/engine/functions.py``: a
real Lambda ``context``, Lambda's error shape), so the baselines and Faastlane run
identical user code.
Around it, the action does what a deployment with a payload limit must do: fetch the parts
of its event that arrived as S3 claim checks, and move a too-large result to S3.

Request ``{"event": ..., "limit": BYTES, "timeout": SECONDS|null}``; answer ``{"result": ...}``
or ``{"failure": {"Error", "Cause"}}``, with ``"compute": [start, end]`` (wall clock,
around the handler) and ``"external": [[start, end], ...]`` (its botocore calls).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from faastlane.runtime.asl.errors import StatesError
from faastlane.runtime.engine.functions import FunctionRegistry, FunctionSpec

from .. import claimcheck, external_calls

SPEC_FILE = "bench_function.json"


class FunctionAction:
    def __init__(self, root: str) -> None:
        with open(os.path.join(root, SPEC_FILE), encoding="utf-8") as handle:
            spec = FunctionSpec(**json.load(handle))
        self.function = FunctionRegistry(root, {spec.name: spec}).get(spec.name)
        self._store: claimcheck.S3Store | None = None
        external_calls.install()

    @property
    def store(self) -> claimcheck.S3Store:
        if self._store is None:
            self._store = claimcheck.S3Store()
        return self._store

    def main(self, params: dict[str, Any]) -> dict[str, Any]:
        event = params.get("event")
        if claimcheck.has_references(event):
            event = claimcheck.resolve(event, self.store)
        external_calls.take()
        start = time.time()
        try:
            with external_calls.recording():
                result = self.function.invoke(event, params.get("timeout"))
        except StatesError as err:
            return {"failure": {"Error": err.error, "Cause": err.cause},
                    "compute": [start, time.time()], "external": external_calls.take()}
        end = time.time()
        limit = params.get("limit")
        if limit and claimcheck.encoded_size(result) > limit:
            result = claimcheck.offload(result, limit, self.store)
        return {"result": result, "compute": [start, end], "external": external_calls.take()}
