"""Every Step Functions execution LocalStack recorded on real AWS that needs no AWS service
(tests/fixtures/aws_recorded/, README.md there), replayed in-process through the engine
``faastlane run`` uses: the definition checked as ``faastlane compose`` checks it, modelled,
and run by an :class:`Orchestrator` with no functions; its result made into the JSON the
CLI prints. Each must reproduce AWS's answer exactly -- the output, or the error and the
cause in AWS's words -- except the few listed in ``KNOWN_DIFFERENCES``, each with why.

A newly failing execution fails the test by name, and so does a known difference that
starts to pass, so the list stays true. The figures by query language are printed in
the test run's output.
"""

from __future__ import annotations

import collections
import gzip
import json
import math
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from asl_acceptance import refusals

from faastlane.runtime.asl.model import machine_from_asl
from faastlane.runtime.orchestrator import Orchestrator
from faastlane.validation.load import load_definition

FIXTURE = Path(__file__).parents[1] / "fixtures" / "aws_recorded" / "executions.json.gz"

# name prefix -> why Faastlane differs from the recorded answer on purpose.
KNOWN_DIFFERENCES = {
    "error_handling_test_states_errors.TestStatesErrors.test_start_large_input":
        "AWS refuses state data over 256 KiB (States.DataLimitExceeded); Faastlane's data "
        "stays in one process and has no such limit",
    "express_test_express_sync.TestExpressSync.test_query_runtime_memory_start_execution_"
    "sync_response":
        "an EXPRESS execution's context object has an express: ARN and no RedriveCount; "
        "Faastlane runs every workflow as a STANDARD one",
}


def load_fixture() -> dict[str, Any]:
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as handle:
        return json.load(handle)


# ------------------------------------------------------------------ running one execution


def replay(execution: dict[str, Any], root: str) -> Any:
    """The JSON ``faastlane run`` prints for the execution: the output, or {Error, Cause}."""
    definition, _ = load_definition(execution["definition"])
    orchestrator = Orchestrator(execution["name"][:80], machine_from_asl(definition), {}, root)
    try:
        result = orchestrator.execute(json.loads(execution["input"]))
    finally:
        orchestrator.close()
    return result.status, json.loads(json.dumps(result.to_json()))


# ------------------------------------------------------------------ comparing with AWS
# Values LocalStack's snapshot replaced (ARNs, dates, uuids) are named by normalized
# paths, $['output']['a'][0]: "ignore" ones only have to exist, "patterns" ones match.

_PATH_TOKEN = re.compile(r"\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]")


def parse_path(path: str) -> tuple[str | int, ...]:
    out: list[str | int] = []
    pos = 1
    while pos < len(path):
        match = _PATH_TOKEN.match(path, pos)
        assert match, f"not a normalized path: {path!r}"
        if match.group(1) is not None:
            out.append(int(match.group(1)))
        else:
            out.append(json.loads('"' + match.group(2).replace("\\'", "'")
                                  .replace('"', '\\"') + '"'))
        pos = match.end()
    return tuple(out)


def _same_scalar(got: Any, want: Any) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):  # true is not 1
        return type(got) is type(want) and got == want
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):  # 1 is 1.0
        both_nan = isinstance(got, float) and math.isnan(got) and math.isnan(want)
        return both_nan or got == want
    return type(got) is type(want) and got == want


def difference(got: Any, want: Any, path: tuple, ignore: set, patterns: dict) -> str | None:
    """None if ``got`` is the recorded ``want``, else where and how they first differ."""
    if path in ignore:
        return None
    if path in patterns:
        if isinstance(got, str) and re.fullmatch(patterns[path], got, flags=re.S):
            return None
        return f"{path}: {got!r:.140} does not match the recorded {want!r:.140}"
    if isinstance(want, dict):
        if not isinstance(got, dict) or got.keys() != want.keys():
            return f"{path}: got {got!r:.200}, want {want!r:.200}"
        return next((d for k in want if (d := difference(got[k], want[k], path + (k,),
                                                         ignore, patterns))), None)
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{path}: got {got!r:.200}, want {want!r:.200}"
        return next((d for i, (g, w) in enumerate(zip(got, want, strict=True))
                     if (d := difference(g, w, path + (i,), ignore, patterns))), None)
    return None if _same_scalar(got, want) else f"{path}: got {got!r:.200}, want {want!r:.200}"


def judge(expected: dict[str, Any], status: str, got: Any) -> str | None:
    """None when the replay gave AWS's answer, else why not."""
    ignore = {parse_path(p) for p in expected.get("ignore", [])}
    patterns = {parse_path(p): rx for p, rx in expected.get("patterns", {}).items()}
    if expected["status"] == "SUCCEEDED":
        if status != "SUCCEEDED":
            return f"failed with {got!r:.300}, AWS succeeded"
        return difference(got, expected["output"], ("output",), ignore, patterns)
    if status != "FAILED":
        return f"succeeded with {got!r:.200}, AWS failed with {expected.get('error')}"
    if got.get("Error") != expected.get("error"):
        return f"Error {got.get('Error')!r} != {expected.get('error')!r}"
    want_cause, got_cause = expected.get("cause"), got.get("Cause")
    if want_cause is None:
        return None if got_cause is None else f"Cause {got_cause!r:.200}, AWS gave none"
    if isinstance(want_cause, (dict, list)):  # AWS's cause was a JSON text
        try:
            got_cause = json.loads(got_cause)
        except (TypeError, ValueError):
            return f"Cause is not JSON: {got_cause!r:.200}; want {want_cause!r:.200}"
    return difference(got_cause, want_cause, ("cause",), ignore, patterns)


# ------------------------------------------------------------------ the tests


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    return load_fixture()


def test_validate_accepts_every_definition_aws_accepted(recorded: dict[str, Any]) -> None:
    refused = {e["name"]: problems for e in recorded["executions"]
               if (problems := refusals(e["definition"]))}
    assert not refused, "\n".join(f"{name}: {problems}" for name, problems in refused.items())


def test_every_recorded_execution_reproduces(recorded: dict[str, Any],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    executions = recorded["executions"]
    tally: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    failing: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="aws-recorded-") as root:
        for execution in executions:
            try:
                status, got = replay(execution, root)
            except Exception as exc:  # noqa: BLE001 - named with the execution, below
                why: str | None = f"the replay raised {exc!r}"
            else:
                why = judge(execution["expected"], status, got)
            for key in (execution["query_language"], "all"):
                tally[key][0] += why is None
                tally[key][1] += 1
            if why is not None:
                failing[execution["name"]] = why
    with capsys.disabled():  # the figures belong in every run's output, not only on failure
        print(f"\nAWS-recorded executions (LocalStack {recorded['localstack_commit'][:12]}) "
              "reproduced exactly: " + ", ".join(
                  f"{key} {tally[key][0]}/{tally[key][1]}"
                  for key in ("JSONPath", "JSONata", "mixed", "all") if key in tally))
    known = {name: why for name, why in failing.items()
             if any(name.startswith(prefix) for prefix in KNOWN_DIFFERENCES)}
    new = {name: why for name, why in failing.items() if name not in known}
    stale = [prefix for prefix in KNOWN_DIFFERENCES
             if not any(name.startswith(prefix) for name in known)]
    assert not new, f"{len(new)} recorded executions no longer reproduce:\n" + "\n".join(
        f"  {name}: {why}" for name, why in sorted(new.items()))
    assert not stale, f"known differences that now reproduce (drop them): {stale}"
