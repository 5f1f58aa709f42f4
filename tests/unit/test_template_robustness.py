"""Whatever a template holds, reading it gives problems (or one clear error), never a
traceback: property-based, over arbitrary values where the reader looks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from faastlane.app.sources import load_app
from faastlane.compose.action import check_app
from faastlane.errors import FaastlaneError

INTRINSICS = ["Ref", "Fn::GetAtt", "Fn::Sub", "Fn::Join", "Fn::Select", "Fn::Split",
              "Fn::If", "Fn::Equals", "Fn::FindInMap", "Fn::Base64", "Fn::GetAZs",
              "Fn::ToJsonString", "Fn::Length", "Fn::ImportValue", "Condition", "Fn::Not"]
NAMES = st.sampled_from(["Fn", "Machine", "Table", "Stage", "AWS::Region", "AWS::NoValue",
                         "Arn", "x", "", "Fn.Arn", "${Stage}", "${Fn.Arn}", "IsProd",
                         "code/", "app.handler", "python3.12"])
# Keys the reader looks for, in functions, tables and definitions.
KEYS = st.sampled_from(["CodeUri", "Handler", "Runtime", "Environment", "Variables",
                        "Timeout", "MemorySize", "PrimaryKey", "TableName", "StartAt",
                        "States", "Type", "Resource", "End", "Name"])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), NAMES)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(NAMES, KEYS, st.sampled_from(INTRINSICS)), inner,
                        max_size=4)),
    max_leaves=12)


# A function the reader gets far into: its code is there, the rest is anything.
functions = st.one_of(values, st.fixed_dictionaries(
    {"CodeUri": st.just("code/"), "Handler": st.just("app.handler")},
    optional={"Runtime": values, "Environment": values, "Timeout": values,
              "MemorySize": values}))


def _template(definition: Any, function: Any, table: Any, condition: Any) -> dict:
    return {
        "Parameters": {"Stage": {"Type": "String", "Default": "dev"}},
        "Conditions": {"IsProd": condition},
        "Resources": {
            "Machine": {"Type": "AWS::Serverless::StateMachine",
                        "Properties": {"Definition": definition,
                                       "DefinitionSubstitutions": {"A": function}}},
            "Fn": {"Type": "AWS::Serverless::Function", "Properties": function},
            "Table": {"Type": "AWS::Serverless::SimpleTable", "Properties": table,
                      "Condition": "IsProd"},
        }}


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values, functions, values, values)
@example({"StartAt": [], "States": {"Fn": None}}, None, None, None)  # found by it once
def test_any_template_gives_problems_not_a_traceback(tmp_path: Path, definition: Any,
                                                     function: Any, table: Any,
                                                     condition: Any) -> None:
    (tmp_path / "code").mkdir(exist_ok=True)
    (tmp_path / "code" / "app.py").write_text("def handler(event, context):\n    pass\n")
    path = tmp_path / "template.json"
    path.write_text(json.dumps(_template(definition, function, table, condition)))
    try:
        app = load_app(str(path))
    except FaastlaneError:
        return  # one clear line at the CLI
    check_app(app)
