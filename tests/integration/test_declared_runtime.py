"""A template function whose code this Python cannot parse, but whose declared
``Runtime`` is a newer Python: ``validate`` keeps it with a warning naming both versions
(its code may use the newer syntax), and a local run fails only its Tasks, with Lambda's
``Runtime.UserCodeSyntaxError``. Declared as this Python, the same file is a problem."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .apps import faastlane

TEMPLATE = """\
Transform: AWS::Serverless-2016-10-31
Resources:
  Machine:
    Type: AWS::Serverless::StateMachine
    Properties:
      Definition:
        StartAt: Parse
        States:
          Parse:
            Type: Task
            Resource: !GetAtt ParseFunction.Arn
            Catch:
              - ErrorEquals: [Runtime.UserCodeSyntaxError]
                ResultPath: $.error
                Next: Done
            End: true
          Done:
            Type: Pass
            End: true
  ParseFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: parse/
      Handler: app.handler
      Runtime: {runtime}
"""

# Not Python in any version this test runs on: it stands for syntax newer than the host.
NEWER_SYNTAX = "def handler(event, context):\n    return match event:: case\n"


def _project(root: Path, runtime: str) -> Path:
    (root / "parse").mkdir(parents=True)
    (root / "parse" / "app.py").write_text(NEWER_SYNTAX)
    template = root / "template.yaml"
    template.write_text(TEMPLATE.format(runtime=runtime))
    return template


def test_code_for_a_newer_declared_runtime_is_a_warning_and_fails_only_its_task(
        tmp_path: Path) -> None:
    host = f"{sys.version_info.major}.{sys.version_info.minor}"
    newer = f"python{sys.version_info.major}.{sys.version_info.minor + 1}"
    template = _project(tmp_path / "newer", newer)
    checked = faastlane("validate", str(template))
    assert checked.code == 0, checked.stdout + checked.stderr
    warning = next(line for line in checked.stderr.splitlines() if "parse/app.py" in line)
    assert f"on this Python ({host}), which is older than the function's Runtime {newer}" \
        in warning
    assert ":2:" in warning  # at the line of the syntax error
    done = faastlane("run", str(template), "--input", "{}", "--isolation", "process")
    assert done.code == 0, done.stderr
    error = done.json["error"]
    assert error["Error"] == "Runtime.UserCodeSyntaxError"
    cause = json.loads(error["Cause"])
    assert cause["errorMessage"].startswith("Syntax error in module 'app': ")
    assert "Line 2" in cause["stackTrace"][0]


def test_the_same_code_declared_for_this_python_is_a_syntax_error(tmp_path: Path) -> None:
    this = f"python{sys.version_info.major}.{sys.version_info.minor}"
    template = _project(tmp_path / "same", this)
    checked = faastlane("validate", str(template))
    assert checked.code != 0
    assert "syntax error" in checked.stdout and "older than" not in checked.stdout
