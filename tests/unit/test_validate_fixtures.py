"""The asl-validator definitions (tests/fixtures/asl): valid-* pass, invalid-* do not.

Where a fixture's verdict disagrees with the Step Functions documentation, the
documented verdict wins; ``DOCUMENTED`` lists each such case and why.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from faastlane.validation import load_definition, validate

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "asl"

# fixture -> (documented verdict: True = valid, why the fixture's own name is wrong)
DOCUMENTED: dict[str, tuple[bool, str]] = {
    "invalid-json-surround-syntax-extra-spaces.json": (
        True,
        (
            "JSONata is whitespace-insensitive and Step Functions only asks that the string"
            " start with '{%' and end with '%}'; a newline inside the delimiters is legal"
        ),
    ),
    "invalid-jsonata-surround-syntax-no-spaces.json": (
        True,
        (
            "'{%10%}' starts with '{%' and ends with '%}'; the documented form"
            " '{% <JSONata expression> %}' does not make the inner spaces significant"
        ),
    ),
    "valid-map-with-item-batcher-jsonata.json": (
        False,
        (
            "a state sets QueryLanguage JSONPath under a JSONata top level: 'If JSONata is"
            " specified at the top level, JSONPath cannot be used in the state machine"
            " definition' (Step Functions QueryLanguage reference)"
        ),
    ),
    "valid-task-intrisic-function.json": (
        False,
        (
            "Resource holds CloudFormation objects (Fn::GetAtt, Ref): ASL requires a string"
            " (a URI); they only work inside a CloudFormation template, not in workflow.json"
        ),
    ),
    "valid-current-value-predicate.json": (
        False,
        (
            "the filter compares with an unquoted word (@.OutputKey == FooBar); Step Functions"
            " evaluates paths with Jayway JsonPath, whose filter literals must be quoted"
        ),
    ),
    "valid-path-array-context.json": (
        False,
        (
            "'$[(@.length-1)]' is a Goessner script expression; Jayway JsonPath, which Step"
            " Functions paths follow, has none (use '$[-1]')"
        ),
    ),
}


def _problems(path: Path) -> list:
    definition, problems = load_definition(path.read_text(encoding="utf-8"))
    return problems + validate(definition)


def _cases() -> list:
    return [pytest.param(path, id=path.name) for path in sorted(FIXTURES.glob("*.json"))]


def test_all_fixtures_are_present() -> None:
    # 62 valid + 50 invalid definitions, as the fixture README states.
    names = [path.name for path in FIXTURES.glob("*.json")]
    assert sum(name.startswith("valid-") for name in names) == 62
    assert sum(name.startswith("invalid-") for name in names) == 50
    assert set(DOCUMENTED) <= set(names)


@pytest.mark.parametrize("path", _cases())
def test_fixture_verdict(path: Path) -> None:
    expected_valid, _why = DOCUMENTED.get(path.name, (path.name.startswith("valid-"), ""))
    problems = _problems(path)
    if expected_valid:
        assert problems == []
    else:
        assert problems, "expected at least one problem"


# Exact pointers for a sample of invalid fixtures, worked out from the definitions.
EXPECTED_POINTERS: dict[str, set[str]] = {
    "invalid-inexistant-state.json": {"/States/Start State/Next", "/States"},
    "invalid-unreachable-state.json": {"/States/Finished Choice"},
    "invalid-map-ob-link.json": {"/States/Map/Iterator/States/ChoiceState/Choices/1/Next"},
    "invalid-parallel-ob-link.json": {
        "/States/Parallel/Branches/1/States/ChoiceState/Choices/1/Next"
    },
    "invalid-json-path.json": {f"/States/Invalid{i}/ResultPath" for i in range(1, 5)},
    "invalid-wait-duration.json": {
        "/States/wait_using_seconds/SecondsPath",
        "/States/wait_using_timestamp/TimestampPath",
    },
    "invalid-fail-dupe-cause.json": {"/States/Hello/CausePath"},
    "invalid-fail-dupe-error.json": {"/States/Hello/ErrorPath"},
    "invalid-next-with-end.json": {"/States/Send SNS Message"},
    "invalid-map-dupe-state.json": {"/States/Map/Iterator/States/Final State"},
    "invalid-duplicate-fields-nested.json": {
        "/States/Publish to Slack/Parameters/slackMessage/blocks/0/text/type.$"
    },
    "invalid-task-alias-function.json": {
        "/States/MissingAlias/Resource",
        "/States/InvalidAlias/Resource",
    },
    "invalid-assign.asl.json": {"/States/ProvideTestData/Assign/top-level/array/0/child-1"},
    "invalid-jsonata-fields.json": {
        "/States/EmptyState/Parameters",
        "/States/EmptyState/ResultPath",
    },
    "invalid-missing-terminal-parallel.json": {
        "/States/Parallel/Branches/0/States",
        "/States/Parallel/Branches/0/States/Wait 20s",
    },
    "invalid-error-equals-type.json": {"/StartAt", "/States/Testing/Catch/0/ErrorEquals/0"},
    "invalid-state-name-too-long.json": {
        (
            "/States/This is an exceptionally long state name that I know will fail when I try"
            " to deploy to AWS"
        )
    },
    "invalid-variable-result-path.json": {"/States/Fin/ResultPath"},
    "invalid-task-credentials-null.json": {"/States/X/Credentials"},
    "invalid-map-items.asl.json": {"/States/ProcessAnimals/ItemsPath"},
    "invalid-choice-state.json": {
        "/States/ChoiceState/Choices/0",
        "/States/ChoiceState/Choices/0/End",
    },
    "invalid-jsonata-syntax-mismatched-parens.json": {"/States/X/Output"},
    "invalid-map-tolerated-value.json": {"/States/Map/ToleratedFailurePercentage"},
    "invalid-cfn-definition-substitutions.json": {"/States/X/Resource"},
    "invalid-exercise-ajv-additional-properties.asl.json": {"/States/PassState/bugInputPath"},
}


@pytest.mark.parametrize("name", sorted(EXPECTED_POINTERS))
def test_fixture_pointers(name: str) -> None:
    assert {problem.pointer for problem in _problems(FIXTURES / name)} == EXPECTED_POINTERS[name]
