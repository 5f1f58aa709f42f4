"""``faastlane bench APP`` and ``faastlane cost APP`` on an app of the user's own, in a
folder outside the checkout, with the user's input: every system runs it, agrees on the
output, and the terminal shows progress (plain lines: stderr is not a terminal here), a
summary with ratios against both baselines, and the price.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from faastlane_bench.catalogue import mpk_system

pytestmark = pytest.mark.integration

TIMEOUT = 600
WORKFLOW = {"StartAt": "Double", "States": {
    "Double": {"Type": "Task", "Resource": "double", "Next": "Both"},
    "Both": {"Type": "Parallel", "End": True, "Branches": [
        {"StartAt": "AddOne",
         "States": {"AddOne": {"Type": "Task", "Resource": "add_one", "End": True}}},
        {"StartAt": "Square",
         "States": {"Square": {"Type": "Task", "Resource": "square", "End": True}}}]}}}
FUNCTIONS = {"double": "def handler(event, context):\n    return {'n': event['n'] * 2}\n",
             "add_one": "def handler(event, context):\n    return event['n'] + 1\n",
             "square": "def main(params):\n    return params['n'] ** 2\n"}
# The workers run on this interpreter: MPK is measured where it is cpython-mpk (with
# keys on a CPU that has them, else unenforced and labelled so).
MPK_ROW, MPK_NOTE = mpk_system()
SYSTEMS = ["Faastlane-NS", "Faastlane (process)", *([MPK_ROW.name] if MPK_ROW else []),
           "OpenWhisk-style", "StepFunctions-style"]


def write_app(root: Path) -> Path:
    (root / "functions").mkdir(parents=True)
    (root / "workflow.json").write_text(json.dumps(WORKFLOW))
    for name, code in FUNCTIONS.items():
        (root / "functions" / f"{name}.py").write_text(code)
    return root


def faastlane(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "faastlane", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=TIMEOUT)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("user")
    write_app(work / "myapp")
    (work / "input.json").write_text('{"n": 3}')
    return work


@pytest.fixture(scope="module")
def bench(work: Path) -> subprocess.CompletedProcess[str]:
    return faastlane("bench", "myapp", "--input-file", "input.json", "--rounds", "6",
                     "-o", "results", cwd=work)


def test_bench_prints_a_summary_against_both_baselines(bench, work: Path) -> None:
    assert bench.returncode == 0, bench.stderr[-3000:]
    lines = bench.stdout.splitlines()
    assert lines[0].startswith("myapp: 6 rounds per system, interleaved")
    header = lines[1].split()
    assert header[:3] == ["system", "median", "ms"]
    rows = {line.split("  ")[0]: line for line in lines[3:3 + len(SYSTEMS)]}
    assert sorted(rows) == sorted(SYSTEMS)
    for row in rows.values():
        assert row.rstrip().endswith("same"), row  # every system computed [7, 36]
        assert row.count("x ") + row.rstrip().count("x") >= 2  # two ratios on each row
    assert any(line.startswith("machine: ") and "load average" in line for line in lines)
    if MPK_NOTE:  # not measured, or measured without keys: said
        assert f"note: {MPK_NOTE}" in bench.stdout
    assert "| myapp |" in bench.stdout and "Step Functions Standard" in bench.stdout


def test_progress_is_plain_lines_when_stderr_is_not_a_terminal(bench) -> None:
    progress = [line for line in bench.stderr.splitlines() if line.startswith("faastlane: ")]
    step = f"faastlane: bench myapp: {len(SYSTEMS)} systems x 6 rounds"
    assert progress[0] == f"{step} ..."
    assert any("round 6/6" in line for line in progress)
    assert progress[-2].startswith(f"{step}: done in")
    assert "\x1b[" not in bench.stderr  # no terminal control codes in a log


def test_results_json_holds_every_system_and_cost_prices_it(bench, work: Path) -> None:
    document = json.loads((work / "results" / "results.json").read_text())
    (workload,) = document["workloads"]
    assert sorted(workload["systems"]) == sorted(SYSTEMS)
    assert workload["outputs_agree"]
    assert all(s["failed_runs"] == 0 for s in workload["systems"].values())
    priced = faastlane("cost", "--results", "results/results.json", "--json", cwd=work)
    assert priced.returncode == 0, priced.stderr
    (row,) = json.loads(priced.stdout)["rows"]
    assert row["workload"] == "myapp" and row["transitions"] == 4 and row["lambda_calls"] == 3
    assert row["faastlane_usd"] > 0 and row["standard_usd"] > row["faastlane_usd"]


def test_cost_app_measures_then_prices(work: Path) -> None:
    done = faastlane("cost", "myapp", "--input", '{"n": 5}', "--rounds", "3", "--json",
                     cwd=work)
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = json.loads(done.stdout)["rows"]  # stdout is the JSON alone
    assert row["workload"] == "myapp" and row["transitions"] == 4
    assert "myapp: 3 rounds per system" in done.stderr  # what was measured, beside it


def test_bad_input_is_one_line(work: Path) -> None:
    missing = faastlane("bench", "nope", "--input", "{}", cwd=work)
    assert (missing.returncode, missing.stderr.strip()) == \
        (2, "faastlane: error: no app folder at nope")
    not_json = faastlane("bench", "myapp", "--input", "{n: 3}", cwd=work)
    assert not_json.returncode == 2 and len(not_json.stderr.strip().splitlines()) == 1
    assert "--input" in not_json.stderr
    mixed = faastlane("bench", "myapp", "--placement", cwd=work)
    assert (mixed.returncode, mixed.stderr.strip()) == \
        (2, "faastlane: error: --placement is for the examples' benchmark, not with APP")


def test_the_apps_own_local_endpoints_stay_its_own(tmp_path: Path, monkeypatch) -> None:
    # As after `eval "$(examples/local-aws/start)"`: a service's endpoint of the user's
    # (healthcare's Comprehend Medical stand-in) is kept; the claim-check store gets
    # the bench's S3, and nothing but dummy credentials reaches boto3.
    from faastlane_bench.claimcheck import S3Store
    from faastlane_bench.own_app import local_s3

    monkeypatch.setenv("AWS_ENDPOINT_URL_COMPREHENDMEDICAL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "a-real-looking-secret")
    with local_s3(tmp_path):
        assert os.environ["AWS_ENDPOINT_URL_COMPREHENDMEDICAL"] == "http://127.0.0.1:9"
        assert "AWS_ENDPOINT_URL" not in os.environ  # the user's endpoints only
        assert os.environ["AWS_SECRET_ACCESS_KEY"] == "testing"
        store = S3Store()
        assert store.get(store.put(b"claim")) == b"claim"  # on the bench's moto S3
    assert os.environ["AWS_SECRET_ACCESS_KEY"] == "a-real-looking-secret"
