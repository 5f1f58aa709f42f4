"""Task Resource spellings, as Step Functions accepts them for Lambda."""

import pytest

from faastlane.runtime.asl.resources import UnsupportedResource, task_target


@pytest.mark.parametrize("resource", [
    "checkout",
    "arn:aws:lambda:us-east-1:123456789012:function:checkout",
    "arn:aws:lambda:eu-west-1:123456789012:function:checkout:prod",
])
def test_names_and_function_arns(resource: str) -> None:
    target = task_target(resource, None)
    assert (target.function, target.invoke_shape) == ("checkout", False)


@pytest.mark.parametrize("name", ["checkout", "checkout:1", "123456789012:function:checkout",
                                  "arn:aws:lambda:us-east-1:123456789012:function:checkout"])
def test_lambda_invoke_integration(name: str) -> None:
    target = task_target("arn:aws:states:::lambda:invoke", {"FunctionName": name})
    assert (target.function, target.invoke_shape) == ("checkout", True)


def test_lambda_invoke_with_a_dynamic_function_name() -> None:
    target = task_target("arn:aws:states:::lambda:invoke", {"FunctionName.$": "$.fn"})
    assert (target.function, target.invoke_shape) == (None, True)


@pytest.mark.parametrize("resource, parameters", [
    ("arn:aws:states:::dynamodb:scan", {}),  # not an optimised integration
    ("arn:aws:sns:us-east-1:123456789012:topic", {}),  # not a Task resource at all
    ("arn:aws:states:::lambda:invoke.waitForTaskToken", {"FunctionName": "f"}),
    ("arn:aws:states:::lambda:invoke", {}),
    ("arn:aws:states:::lambda:invoke", None),
])
def test_other_resources_are_refused(resource: str, parameters: object) -> None:
    with pytest.raises(UnsupportedResource):
        task_target(resource, parameters)
