#!/usr/bin/env python3
"""Regenerate tests/fixtures/aws_recorded/executions.json.gz: the Step Functions executions
LocalStack recorded on real AWS that need no AWS service, one compact fixture the test
suite replays in-process (tests/unit/test_aws_recorded_replay.py).

It needs a fetched copy of localstack/localstack (the bare git directory) and json5 (the
tests' templates are JSON5), neither of which the test suite needs::

    python3 -m venv /tmp/ls-venv && /tmp/ls-venv/bin/pip install json5
    /tmp/ls-venv/bin/python scripts/extract_aws_recorded.py --mirror LOCALSTACK_GIT_DIR

``scripts/localstack_asl_extract.py`` recovers the cases (its docstring says how); this
script packs its case folders into one gzip'd JSON document, keeping per execution only
what the replay compares: the definition and input texts, exactly as sent to AWS, and the
recorded outcome with the paths whose values the snapshot replaced.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "tests", "fixtures", "aws_recorded", "executions.json.gz")
EXPECTED_KEYS = ("status", "output", "error", "cause", "ignore", "patterns")


def pack(cases_dir: str) -> dict[str, Any]:
    """The fixture document made of extract's output folder."""
    with open(os.path.join(cases_dir, "index.json"), encoding="utf-8") as handle:
        index = json.load(handle)
    executions = []
    for name in sorted(os.listdir(cases_dir)):
        folder = os.path.join(cases_dir, name)
        if not os.path.isfile(os.path.join(folder, "expected.json")):
            continue
        with open(os.path.join(folder, "expected.json"), encoding="utf-8") as handle:
            expected = json.load(handle)
        texts = {}
        for part in ("workflow", "input"):
            with open(os.path.join(folder, f"{part}.json"), encoding="utf-8") as handle:
                texts[part] = handle.read()
        meta = expected.get("meta", {})
        executions.append({
            "name": name, "source": expected["source"],
            "query_language": meta.get("query_language", "JSONPath"),
            "workflow_type": meta.get("workflow_type", "STANDARD"),
            "definition": texts["workflow"], "input": texts["input"],
            "expected": {k: expected[k] for k in EXPECTED_KEYS if k in expected},
        })
    return {"localstack_commit": index["localstack_commit"],
            "source_folder": "tests/aws/services/stepfunctions/v2 (*.snapshot.json, test_*.py)",
            "license": "Apache-2.0 (LocalStack)", "executions": executions}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", required=True, help="bare git dir of localstack/localstack")
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--out", default=FIXTURE, help="the fixture to write")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="aws-recorded-") as cases_dir:
        subprocess.run([sys.executable, os.path.join(HERE, "localstack_asl_extract.py"),
                        "--mirror", args.mirror, "--rev", args.rev, "--out", cases_dir,
                        "--jobs", str(args.jobs)], check=True)
        document = pack(cases_dir)
    # mtime=0: the same cases give the same bytes, so a regeneration diffs only if they changed
    with open(args.out, "wb") as raw, \
            gzip.GzipFile("executions.json", "wb", fileobj=raw, mtime=0) as out:
        out.write(json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode())
    print(f"wrote {len(document['executions'])} executions from localstack "
          f"{document['localstack_commit'][:12]} to {os.path.relpath(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
