"""The files of a new app: a small order workflow (validate, then a Choice on the amount,
a Parallel of two functions for large orders, a Catch to a Fail) that shows the parts a
Faastlane app uses and runs on a plain ``pip install``."""

from __future__ import annotations

import json
from typing import Any

VALIDATE = '''"""Check an order and compute its total."""


class InvalidOrder(Exception):
    pass


def handler(event, context):
    items = event.get("items") or []
    if not items:
        raise InvalidOrder("an order needs at least one item")
    total = sum(item["price"] * item.get("quantity", 1) for item in items)
    return {"order_id": event.get("order_id", "unnamed"), "total": round(total, 2),
            "items": len(items)}
'''

REVIEW = '''"""Large orders: a risk score (a stand-in for a fraud model)."""


def handler(event, context):
    return {"risk": "high" if event["total"] > 1000 else "low"}
'''

RECEIPT = '''"""Every order: the receipt text."""


def handler(event, context):
    order = event.get("order", event)
    return {"receipt": f"order {order['order_id']}: {order['items']} item(s), "
                       f"total {order['total']:.2f}"}
'''

FUNCTIONS = {"ValidateOrder": VALIDATE, "ReviewLargeOrder": REVIEW, "MakeReceipt": RECEIPT}


def _task(function: str, resource: str, **fields: object) -> dict[str, Any]:
    return {"Type": "Task", "Resource": resource.format(function=function), **fields}


def workflow(resource: str) -> dict[str, Any]:
    """The workflow; ``resource`` is how a Task names its function (an ARN pattern for
    the folder form, a definition substitution for SAM)."""
    return {
        "Comment": "A new Faastlane app: validate an order, review large ones while the "
                   "receipt is made, fail cleanly on bad input.",
        "StartAt": "ValidateOrder",
        "States": {
            "ValidateOrder": _task("ValidateOrder", resource, ResultPath="$.order",
                                   Next="IsLarge", Catch=[{
                                       "ErrorEquals": ["InvalidOrder"],
                                       "ResultPath": "$.error", "Next": "Rejected"}]),
            "IsLarge": {"Type": "Choice", "Choices": [
                {"Variable": "$.order.total", "NumericGreaterThan": 100,
                 "Next": "ReviewAndReceipt"}], "Default": "Receipt"},
            "ReviewAndReceipt": {
                "Type": "Parallel", "Branches": [
                    {"StartAt": "ReviewLargeOrder", "States": {
                        "ReviewLargeOrder": _task("ReviewLargeOrder", resource,
                                                  InputPath="$.order", End=True)}},
                    {"StartAt": "MakeLargeReceipt", "States": {
                        "MakeLargeReceipt": _task("MakeReceipt", resource, End=True)}}],
                "ResultSelector": {"risk.$": "$[0].risk", "receipt.$": "$[1].receipt"},
                "End": True},
            "Receipt": _task("MakeReceipt", resource, End=True),
            "Rejected": {"Type": "Fail", "Error": "InvalidOrder",
                         "Cause": "the order has no items"},
        },
    }


INPUT = {"order_id": "A-1001", "items": [{"name": "keyboard", "price": 49.5, "quantity": 2},
                                         {"name": "monitor", "price": 189.0}]}

SETTINGS = {"untrusted": ["ReviewLargeOrder"]}


def readme(name: str, sam: bool) -> str:
    run = (f"faastlane run {name} --input-file {name}/input.json" if not sam else
           f"faastlane run {name}/template.yaml --input-file {name}/input.json")
    layout = ("workflow.json (Amazon States Language), functions/NAME.py (one handler "
              "each), faastlane.json (ReviewLargeOrder is marked untrusted: it runs in "
              "its own sandboxed process) and input.json" if not sam else
              "template.yaml (an AWS::Serverless::StateMachine and its functions), "
              "statemachine/workflow.asl.json and functions/NAME/app.py")
    return f"""# {name}

A Faastlane app made by `faastlane init`: {layout}.

It validates an order, then (Choice) reviews orders over 100 while their receipt is
made (Parallel), or just makes the receipt; an order without items fails (Catch).

    {run}
    faastlane graph {name if not sam else name + '/template.yaml'} -o workflow.svg
    faastlane serve {name if not sam else name + '/template.yaml'}

Change the functions and the workflow; `faastlane validate` lists every problem.
"""


def folder_files(name: str) -> dict[str, str]:
    resource = "arn:aws:lambda:us-east-1:123456789012:function:{function}"
    files = {"workflow.json": json.dumps(workflow(resource), indent=2) + "\n",
             "faastlane.json": json.dumps({"name": name, **SETTINGS}, indent=2) + "\n",
             "input.json": json.dumps(INPUT, indent=2) + "\n",
             "README.md": readme(name, sam=False)}
    for function, source in FUNCTIONS.items():
        files[f"functions/{function}.py"] = source
    return files


def _logical(function: str) -> str:
    return f"{function}Function"


def sam_files(name: str) -> dict[str, str]:
    resource = "${{{function}FunctionArn}}"
    functions = "".join(f"""
  {_logical(f)}:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/{f}/
      Handler: app.handler
      Runtime: python3.12
""" for f in FUNCTIONS)
    substitutions = "".join(f"\n          {_logical(f)}Arn: !GetAtt {_logical(f)}.Arn"
                            for f in FUNCTIONS)
    policies = "".join(f"\n        - LambdaInvokePolicy:\n            FunctionName: "
                       f"!Ref {_logical(f)}" for f in FUNCTIONS)
    template = f"""AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Description: {name}, a Faastlane app made by faastlane init (SAM form)

Resources:
  StateMachine:
    Type: AWS::Serverless::StateMachine
    Properties:
      Name: {name}
      DefinitionUri: statemachine/workflow.asl.json
      DefinitionSubstitutions:{substitutions}
      Policies:{policies}
{functions}"""
    files = {"template.yaml": template,
             "statemachine/workflow.asl.json": json.dumps(workflow(resource), indent=2) + "\n",
             "input.json": json.dumps(INPUT, indent=2) + "\n",
             "README.md": readme(name, sam=True)}
    for function, source in FUNCTIONS.items():
        files[f"functions/{function}/app.py"] = source
    return files
