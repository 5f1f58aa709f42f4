"""Apps for the deployment tests; the CLI runs through ``integration.apps.faastlane``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from integration.apps import write_app
from integration.examples import EXAMPLES

FINRA = EXAMPLES / "finra"
# A small pure-Python wheel the test environment does not have: importing it inside the
# action proves it was vendored into the package.
VENDORED_REQUIREMENT = "inflection==0.5.1"


SMALL_WORKFLOW = {
    "Comment": "Check the input, then greet in two ways at once",
    "StartAt": "Check",
    "States": {
        "Check": {"Type": "Task", "Resource": "check", "Next": "Greet"},
        "Greet": {
            "Type": "Parallel",
            "Branches": [
                {"StartAt": "Hello", "States": {"Hello": {"Type": "Task", "Resource": "hello",
                                                          "End": True}}},
                {"StartAt": "Shout", "States": {"Shout": {"Type": "Task", "Resource": "shout",
                                                          "End": True}}},
            ],
            "ResultSelector": {"hello.$": "$[0]", "shout.$": "$[1]"},
            "End": True,
        },
    },
}

SMALL_FUNCTIONS = {
    "check": """
        import os

        CALLS = []  # module state: survives between activations only in a warm process


        def handler(event, context):
            CALLS.append(1)
            if event.get("fail"):
                raise ValueError("asked to fail: " + str(event["fail"]))
            print("check: ok", flush=True)
            return dict(event, calls=len(CALLS), pid=os.getpid(),
                        activation=os.environ.get("__OW_ACTIVATION_ID"),
                        request=getattr(context, "aws_request_id", None))
    """,
    "hello": """
        def main(params):
            return {"text": "hello " + params["name"]}
    """,
    "shout": """
        import inflection  # vendored from requirements.txt


        def handler(event, context):
            return {"text": inflection.titleize(event["name"]) + "!", "calls": event["calls"],
                    "activation": event["activation"]}
    """,
}


def write_small_app(root: Path, big_string: int = 0) -> Path:
    """The small app; ``big_string`` bytes of padding in a function make a big package."""
    write_app(root, SMALL_WORKFLOW, SMALL_FUNCTIONS)
    (root / "requirements.txt").write_text(VENDORED_REQUIREMENT + "\n")
    if big_string:
        # Incompressible bytes, so the zip is as big as the data.
        (root / "functions" / "blob.bin").write_bytes(os.urandom(big_string))
    return root


def expected_small_output(name: str, calls: int = 1,
                          activation: str | None = None) -> dict[str, Any]:
    return {"hello": {"text": f"hello {name}"},
            "shout": {"text": f"{name.title()}!", "calls": calls, "activation": activation}}
