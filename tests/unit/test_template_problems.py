"""What cannot be resolved in a template is a problem in its file, at its pointer and
line, every one listed, the root cause first; what makes the command itself wrong
(several state machines and none chosen) is one clear error."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from faastlane.app.folder import App
from faastlane.app.project.parameters import ProjectOptions
from faastlane.app.sources import load_app
from faastlane.compose.action import check_app
from faastlane.errors import AppError
from faastlane.validation.problem import Problem

MACHINE = """\
  Machine:
    Type: AWS::Serverless::StateMachine
    Properties:
      DefinitionUri: machine.asl.json
      DefinitionSubstitutions:
        CheckArn: !GetAtt Check.Arn
"""
CHECK = """\
  Check:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: check/
      Handler: app.lambda_handler
      Runtime: python3.12
"""
DEFINITION = """{
  "StartAt": "Check",
  "States": {
    "Check": {"Type": "Task", "Resource": "${CheckArn}", "End": true}
  }
}
"""
HANDLER = "def lambda_handler(event, context):\n    return event\n"


def _project(tmp_path: Path, resources: str, definition: str = DEFINITION,
             head: str = "", options: ProjectOptions | None = None) -> App:
    (tmp_path / "check").mkdir(exist_ok=True)
    (tmp_path / "check" / "app.py").write_text(HANDLER)
    (tmp_path / "machine.asl.json").write_text(definition)
    template = tmp_path / "template.yaml"
    template.write_text(textwrap.dedent(head) + "Resources:\n" + resources)
    return load_app(str(template), options)


def _problems(app: App) -> list[Problem]:
    return check_app(app)[1]


def _line(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_valid_template_has_no_problems_and_its_functions_are_specs(tmp_path: Path) -> None:
    app = _project(tmp_path, MACHINE + CHECK)
    assert _problems(app) == []
    spec = app.functions["Check"]
    assert (spec.module_file, spec.entry, spec.search_path) == (
        "functions/Check/app.py", "lambda_handler", "functions/Check")
    assert app.code == {"functions/Check": str(tmp_path / "check")}
    assert '"Resource": "arn:aws:lambda:us-east-1:123456789012:function:Check"' \
        in app.workflow_text


def test_a_placeholder_without_substitution_is_a_problem_at_its_line(tmp_path: Path) -> None:
    definition = DEFINITION.replace("${CheckArn}", "${CheckerArn}")
    problems = _problems(_project(tmp_path, MACHINE + CHECK, definition))
    first = problems[0]
    assert (first.file, first.pointer, first.line) == (
        "machine.asl.json", "/States/Check/Resource", 4)
    assert "${CheckerArn} is not in the state machine's DefinitionSubstitutions (it has: " \
           "CheckArn); did you mean 'CheckArn'?" in first.message
    # What the validator says about the same Resource follows, as a consequence.
    assert all(p.secondary for p in problems[1:]) and len(problems) == 2


def test_a_ref_to_nothing_is_a_problem_at_its_line_in_the_template(tmp_path: Path) -> None:
    resources = MACHINE + "        Table: !Ref Tabel\n" + CHECK
    problems = _problems(_project(tmp_path, resources))
    assert [(p.file, p.pointer, p.line) for p in problems] == [
        ("template.yaml", "/Resources/Machine/Properties/DefinitionSubstitutions/Table/Ref",
         _line(tmp_path / "template.yaml", "!Ref Tabel"))]
    assert "Ref to 'Tabel': no parameter or resource of that name" in problems[0].message


def test_an_attribute_not_modelled_is_a_problem(tmp_path: Path) -> None:
    resources = MACHINE + "        Bad: !GetAtt Check.Nope\n" + CHECK
    problem, = _problems(_project(tmp_path, resources))
    assert "Fn::GetAtt Check.Nope cannot be resolved (it has Arn)" in problem.message
    assert problem.line == _line(tmp_path / "template.yaml", "Check.Nope")


def test_import_value_cannot_be_resolved_locally(tmp_path: Path) -> None:
    resources = MACHINE + "        Shared: !ImportValue other-stack-table\n" + CHECK
    problem, = _problems(_project(tmp_path, resources))
    assert problem.message.startswith("Fn::ImportValue cannot be resolved locally")


def test_a_parameter_without_default_or_override_is_a_problem(tmp_path: Path) -> None:
    head = "Parameters:\n  Stage:\n    Type: String\n"
    problem, = _problems(_project(tmp_path, MACHINE + CHECK, head=head))
    assert (problem.pointer, problem.line) == ("/Parameters/Stage", 2)
    assert "--parameter-overrides Stage=VALUE" in problem.message
    options = ProjectOptions(parameter_overrides=("Stage=dev",))
    assert _problems(_project(tmp_path, MACHINE + CHECK, head=head, options=options)) == []


def test_a_value_outside_allowed_values_is_a_problem(tmp_path: Path) -> None:
    head = "Parameters:\n  Stage:\n    Type: String\n    AllowedValues: [dev, prod]\n"
    options = ProjectOptions(parameter_overrides=("Stage=test",))
    problem, = _problems(_project(tmp_path, MACHINE + CHECK, head=head, options=options))
    assert "'test' is not one of its AllowedValues" in problem.message


def test_a_function_in_another_runtime_is_a_problem_where_a_task_calls_it(
        tmp_path: Path) -> None:
    app = _project(tmp_path, MACHINE + CHECK.replace("python3.12", "nodejs20.x"))
    problem, = _problems(app)
    assert (problem.file, problem.pointer) == ("template.yaml",
                                               "/Resources/Check/Properties/Runtime")
    assert problem.line == _line(tmp_path / "template.yaml", "nodejs20.x")
    assert "Faastlane runs Python functions only" in problem.message


def test_an_unused_function_in_another_runtime_is_no_problem(tmp_path: Path) -> None:
    other = CHECK.replace("Check:", "Api:").replace("python3.12", "nodejs20.x")
    assert _problems(_project(tmp_path, MACHINE + CHECK + other)) == []


@pytest.mark.parametrize("change, words", [
    (("Handler: app.lambda_handler", "Handler: main.lambda_handler"),
     "Handler main.lambda_handler: no check/main.py"),
    (("Handler: app.lambda_handler", "Handler: app.handle"),
     "Handler app.handle: check/app.py defines no 'handle'"),
    (("CodeUri: check/", "CodeUri: chek/"), "CodeUri chek/: no folder chek"),
    (("CodeUri: check/", "CodeUri: {Bucket: b, Key: k}"), "CodeUri must name a local folder"),
    (("Runtime: python3.12", "Runtime: python3.12\n      Timeout: 901"),
     "Timeout must be a number of seconds from 1 to 900"),
    (("Runtime: python3.12", "Runtime: python3.12\n      MemorySize: big"),
     "MemorySize 'big' is not a number"),
])
def test_function_problems(tmp_path: Path, change: tuple[str, str], words: str) -> None:
    problem, = _problems(_project(tmp_path, MACHINE + CHECK.replace(*change)))
    assert problem.file == "template.yaml" and words in problem.message, problem


def test_a_missing_definition_file_is_a_problem(tmp_path: Path) -> None:
    app = _project(tmp_path, MACHINE.replace("machine.asl.json", "missing.asl.json") + CHECK)
    problem, = _problems(app)
    assert problem.pointer == "/Resources/Machine/Properties/DefinitionUri"
    assert "cannot read missing.asl.json" in problem.message


def test_a_definition_file_with_a_syntax_error_is_a_problem_at_its_line(
        tmp_path: Path) -> None:
    problem, = _problems(_project(tmp_path, MACHINE + CHECK, DEFINITION.replace("true", "tru")))
    assert (problem.file, problem.line) == ("machine.asl.json", 4)


def test_a_template_with_a_syntax_error_is_a_problem_at_its_line(tmp_path: Path) -> None:
    problem, = _problems(_project(tmp_path, MACHINE + "  Bad: [\n"))
    assert problem.file == "template.yaml" and problem.line is not None


def test_every_problem_is_listed(tmp_path: Path) -> None:
    resources = (MACHINE + "        A: !Ref Nothing\n        B: !GetAtt Check.Nope\n"
                 + CHECK.replace("python3.12", "java21"))
    problems = _problems(_project(tmp_path, resources))
    assert len(problems) == 3


def test_several_state_machines_need_a_choice_and_the_error_lists_them(
        tmp_path: Path) -> None:
    other = MACHINE.replace("Machine:", "Other:")
    with pytest.raises(AppError, match="has 2 state machines: Machine, Other; choose one "
                                       "with --state-machine ID"):
        _project(tmp_path, MACHINE + other + CHECK)
    chosen = _project(tmp_path, MACHINE + other + CHECK,
                      options=ProjectOptions(state_machine="Other"))
    assert chosen.name == "Other"
    with pytest.raises(AppError, match="no such state machine in template.yaml; did you "
                                       "mean 'Other'"):
        _project(tmp_path, MACHINE + other + CHECK,
                 options=ProjectOptions(state_machine="Othr"))


def test_a_template_without_a_state_machine_is_a_problem(tmp_path: Path) -> None:
    problem, = _problems(_project(tmp_path, CHECK))
    assert "the template has no state machine" in problem.message


def test_settings_in_metadata_are_checked_where_they_are(tmp_path: Path) -> None:
    resources = MACHINE.replace("    Properties:\n", "    Metadata:\n      Faastlane:\n"
                                "        untrusted: [Check, Chek]\n"
                                "        isolation: process\n    Properties:\n", 1) + CHECK
    app = _project(tmp_path, resources)
    assert app.settings.untrusted == ("Check", "Chek") and app.settings.isolation == "process"
    problem, = _problems(app)
    assert (problem.file, problem.pointer) == (
        "template.yaml", "/Resources/Machine/Metadata/Faastlane/untrusted/1")
    assert problem.line == _line(tmp_path / "template.yaml", "untrusted:")
    assert "no function named 'Chek'; did you mean 'Check'?" in problem.message


def test_a_definition_given_instead_of_a_template_says_what_to_give(tmp_path: Path) -> None:
    (tmp_path / "workflow.json").write_text(DEFINITION)
    problem, = _problems(load_app(str(tmp_path / "workflow.json")))
    assert problem.message.startswith("not a SAM or CloudFormation template: it has no "
                                      "Resources: this is a state machine definition")


def test_an_ssm_parameter_needs_its_value_given(tmp_path: Path) -> None:
    head = ("Parameters:\n  Key:\n    Type: AWS::SSM::Parameter::Value<String>\n"
            "    Default: /shop/key\n")
    problem, = _problems(_project(tmp_path, MACHINE + CHECK, head=head))
    assert "read from SSM Parameter Store" in problem.message
    options = ProjectOptions(parameter_overrides=("Key=secret",))
    assert _problems(_project(tmp_path, MACHINE + CHECK, head=head, options=options)) == []



def test_a_misspelt_logical_id_gets_a_suggestion(tmp_path: Path) -> None:
    machine = MACHINE.replace("!GetAtt Check.Arn", "!GetAtt Chek.Arn")
    topic = """\
  Topic:
    Type: AWS::SNS::Topic
    Properties:
      TopicName: !Ref Chekc
"""
    messages = [p.message for p in _problems(_project(tmp_path, machine + CHECK + topic))]
    assert any("no resource 'Chek'; did you mean 'Check'?" in m for m in messages), messages
    assert any("Ref to 'Chekc'" in m and "did you mean 'Check'?" in m
               for m in messages), messages
