"""A Map's ToleratedFailureCount and ToleratedFailurePercentage (issue 18). AWS: "If you
specify both ToleratedFailurePercentage and ToleratedFailureCount, the Map Run fails when
it exceeds either threshold" (Developer Guide, failure thresholds for Distributed Map
states); the error is States.ExceedToleratedFailureThreshold with the cause "The specified
tolerated failure threshold was exceeded" (LocalStack's recorded
test_state_configuration snapshot, exceeds_tolerated_failure)."""

from __future__ import annotations

from typing import Any

import pytest

from faastlane.runtime.asl.errors import EXCEED_TOLERATED_FAILURE_THRESHOLD, StatesError
from faastlane.runtime.asl.model import machine_from_asl
from faastlane.runtime.engine.execution import Execution
from faastlane.runtime.engine.functions import FunctionRegistry
from faastlane.runtime.interpreter.states import run_machine
from faastlane.runtime.options import Options

# Items 0 to 9; an iteration fails (a Fail state) when its item is below the input's "fail".
MAP_STATE = {"Type": "Map", "ItemsPath": "$.items", "End": True, "ItemSelector": {
    "n.$": "$$.Map.Item.Value", "fail.$": "$.fail"}, "ItemProcessor": {
    "StartAt": "C", "States": {
        "C": {"Type": "Choice", "Choices": [{"Variable": "$.n", "NumericLessThanPath": "$.fail",
                                             "Next": "F"}], "Default": "P"},
        "F": {"Type": "Fail", "Error": "Item.Failed"},
        "P": {"Type": "Pass", "End": True}}}}


def run(thresholds: dict[str, Any], failing: int) -> Any:
    definition = {"StartAt": "M", "States": {"M": {**MAP_STATE, **thresholds}}}
    data = {"items": list(range(10)), "fail": failing}
    execution = Execution("wf", data, FunctionRegistry("/nonexistent", {}), Options())
    return run_machine(machine_from_asl(definition), data, execution)


@pytest.mark.parametrize("thresholds, failing, exceeded", [
    ({"ToleratedFailureCount": 2}, 2, False),
    ({"ToleratedFailureCount": 2}, 3, True),
    ({"ToleratedFailurePercentage": 30}, 3, False),
    ({"ToleratedFailurePercentage": 30}, 4, True),
    # both: within the count but over the percentage, and the other way round
    ({"ToleratedFailureCount": 5, "ToleratedFailurePercentage": 20}, 3, True),
    ({"ToleratedFailureCount": 1, "ToleratedFailurePercentage": 50}, 3, True),
    ({"ToleratedFailureCount": 3, "ToleratedFailurePercentage": 30}, 3, False),
    ({"ToleratedFailureCount": 0, "ToleratedFailurePercentage": 0}, 0, False),
])
def test_a_map_fails_when_it_exceeds_either_threshold(thresholds: dict, failing: int,
                                                      exceeded: bool) -> None:
    if not exceeded:
        output = run(thresholds, failing)
        assert [item.get("Error") for item in output[:failing]] == ["Item.Failed"] * failing
        return
    with pytest.raises(StatesError) as caught:
        run(thresholds, failing)
    assert caught.value.error == EXCEED_TOLERATED_FAILURE_THRESHOLD
    assert caught.value.cause == "The specified tolerated failure threshold was exceeded"
