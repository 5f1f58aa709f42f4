"""Problems said where they are: in the file that holds them, the root cause first, with
what was probably meant -- through the real CLI, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .apps import CLI_TIMEOUT, Completed, chain, faastlane, task, write_app

ECHO = """
def handler(event, context):
    return event
"""


def _package_function(app: Path, name: str, manifest: dict, modules: dict[str, str]) -> None:
    folder = app / "functions" / name
    folder.mkdir(parents=True)
    (folder / "function.json").write_text(json.dumps(manifest))
    for module, source in modules.items():
        (folder / module).write_text(textwrap.dedent(source))


def test_a_function_json_naming_a_missing_handler_is_refused_in_that_file(
        app_dir: Path) -> None:
    write_app(app_dir, chain(("Resize", task("resize"))), {})
    _package_function(app_dir, "resize", {"handler": "lambda_function.lambda_handlr"},
                      {"lambda_function.py": "def lambda_handler(event, context):\n"
                                             "    return event\n"})
    done = faastlane("validate", str(app_dir))
    assert done.code == 1
    manifest = app_dir / "functions" / "resize" / "function.json"
    assert done.stdout.splitlines() == [
        f"{manifest}: /handler: names 'lambda_function.lambda_handlr' but "
        "functions/resize/lambda_function.py defines no 'lambda_handlr'; did you mean "
        "'lambda_handler'?",
        f"1 problem in {manifest}",
    ]
    listed = faastlane("validate", str(app_dir), "--json").json
    assert [(p["file"], p["pointer"]) for p in listed] == [
        ("functions/resize/function.json", "/handler")]
    for command in (("compose", str(app_dir), "-o", str(app_dir.parent / "out")),
                    ("run", str(app_dir), "--input", "{}")):
        refused = faastlane(*command)
        assert refused.code == 3, refused.stderr  # an invalid workflow: nothing deployed
        assert refused.stdout == ""
        assert f"{manifest}: /handler: names 'lambda_function.lambda_handlr'" in refused.stderr
        assert "Traceback" not in refused.stderr
    assert not (app_dir.parent / "out").exists()


def test_settings_of_a_function_whose_file_is_broken_are_not_a_second_problem(
        app_dir: Path) -> None:
    """faastlane.json configuring a function whose function.json is wrong: the one
    problem is in function.json, not also "no function named" in faastlane.json."""
    write_app(app_dir, chain(("Resize", task("resize"))), {},
              {"functions": {"resize": {"environment": {"SIZE": "640"}}}})
    _package_function(app_dir, "resize", {"handler": "lambda_function.lambda_handlr"},
                      {"lambda_function.py": "def lambda_handler(event, context):\n"
                                             "    return event\n"})
    done = faastlane("validate", str(app_dir))
    assert done.code == 1
    manifest = app_dir / "functions" / "resize" / "function.json"
    assert done.stdout.splitlines() == [
        f"{manifest}: /handler: names 'lambda_function.lambda_handlr' but "
        "functions/resize/lambda_function.py defines no 'lambda_handlr'; did you mean "
        "'lambda_handler'?",
        f"1 problem in {manifest}",
    ]


def test_a_handler_bound_by_import_or_dynamically_is_not_refused(app_dir: Path) -> None:
    write_app(app_dir, chain(("A", task("imported")), ("B", task("dynamic"))), {})
    _package_function(app_dir, "imported", {"handler": "lambda_function.handle"}, {
        "lambda_function.py": "from impl import work as handle\n",
        "impl.py": "def work(event, context):\n    return {'n': event['n'] + 1}\n"})
    _package_function(app_dir, "dynamic", {"handler": "app.main"}, {
        "app.py": """
            def _make():
                return lambda params: {'n': params['n'] * 10}
            globals()['main'] = _make()
        """})
    assert faastlane("validate", str(app_dir)).code == 0
    done = faastlane("run", str(app_dir), "--input", '{"n": 1}')
    assert (done.code, done.stdout.strip()) == (0, '{"n": 20}'), done.stderr


def test_a_file_without_a_handler_says_so_not_add_the_file(app_dir: Path) -> None:
    write_app(app_dir, chain(("A", task("greet"))), {
        "greet": "def handle(event, context):\n    return event\n",
        "helpers": "GREETING = 'hello'\n"})  # a helper module no Task names: fine
    done = faastlane("validate", str(app_dir))
    assert done.code == 1
    assert done.stdout.splitlines() == [
        f"{app_dir / 'functions' / 'greet.py'}: defines no handler(event, context), "
        "lambda_handler(event, context) or main(params)",
        f"1 problem in {app_dir / 'functions' / 'greet.py'}",
    ]


def test_a_handler_its_platform_cannot_call_is_refused_before_it_runs(app_dir: Path
                                                                      ) -> None:
    # Lambda calls handler(event, context), OpenWhisk main(params): validate says so
    # instead of a run failing with TypeError.
    write_app(app_dir, chain(("A", task("one")), ("B", task("fine")), ("C", task("eager")),
                             ("D", task("whisk")), ("E", task("waits"))), {
        "one": "def handler(event):\n    return event\n",
        "fine": "def handler(event, context=None, *more):\n    return event\n",
        "eager": "def lambda_handler(event, context, *, token):\n    return event\n",
        "whisk": "def main(params, extra):\n    return params\n",
        "waits": "async def handler(event, context):\n    return event\n",
        "helper": "def main(a, b, c):\n    return a\n"})  # no Task names it: fine
    done = faastlane("validate", str(app_dir))
    assert done.code == 1
    functions = app_dir / "functions"
    assert sorted(done.stdout.splitlines()[:-1]) == sorted([
        f"{functions / 'one.py'}: handler() at line 1 takes 1 positional argument; "
        "Lambda calls it with 2: handler(event, context)",
        f"{functions / 'eager.py'}: lambda_handler() at line 1 needs keyword-only "
        "argument token, which Lambda never passes",
        f"{functions / 'whisk.py'}: main() at line 1 takes 2 positional arguments; "
        "OpenWhisk calls it with 1: main(params)",
        f"{functions / 'waits.py'}: handler() at line 1 is 'async def': Lambda's Python "
        "runtime calls it and does not await it",
    ]), done.stdout
    refused = faastlane("run", str(app_dir), "--input", "{}")
    assert refused.code == 3 and "takes 1 positional argument" in refused.stderr


def test_a_setting_of_the_right_type_but_no_meaning_is_refused_with_what_was_meant(
        app_dir: Path) -> None:
    write_app(app_dir, chain(("A", task("greet"))), {"greet": ECHO},
              settings={"isolation": "proces", "vcpus": 0})
    done = faastlane("validate", str(app_dir))
    settings = app_dir / "faastlane.json"
    assert done.code == 1
    assert done.stdout.splitlines() == [
        f"{settings}: /isolation: isolation 'proces' is not a mode; did you mean "
        "'process'? (one of mpk, process, none)",
        f"{settings}: /vcpus: vcpus must be at least 1, not 0",
        f"2 problems in {settings}"]
    # The suggestion, applied, validates (and runs).
    settings.write_text(json.dumps({"isolation": "process", "vcpus": 1}))
    assert faastlane("validate", str(app_dir)).code == 0
    assert faastlane("run", str(app_dir), "--input", '{"x": 1}').json == {"x": 1}


def _composed_then_handler_removed(app: Path, out: Path, workflow: dict,
                                   isolation: str = "none") -> Completed:
    """Compose, delete the handler from the action's copy of the function, run the action
    (``python OUT``, as the README runs a composed action)."""
    write_app(app, workflow, {"greet": ECHO})
    assert faastlane("compose", str(app), "-o", str(out), "--isolation", isolation).code == 0
    (out / "functions" / "greet.py").write_text("def other(event, context):\n    return 1\n")
    done = subprocess.run([sys.executable, str(out), "--input", "{}"], capture_output=True,
                          text=True, timeout=CLI_TIMEOUT)
    return Completed(done.returncode, done.stdout, done.stderr)


@pytest.mark.parametrize("isolation", ["none", "process"])
def test_a_handler_removed_after_compose_fails_its_state_as_on_lambda(
        tmp_path: Path, isolation: str) -> None:
    # In the Orchestrator's heap, and in the function's own sandbox (which once gave a
    # bare message as the cause instead of Lambda's error document).
    done = _composed_then_handler_removed(tmp_path / "app", tmp_path / "out",
                                          chain(("Greet", task("greet"))), isolation)
    assert done.code == 1  # a failed execution, reported as Step Functions reports it
    assert done.json["Error"] == "Runtime.HandlerNotFound"
    cause = json.loads(done.json["Cause"])
    assert (cause["errorType"], cause["errorMessage"], cause["stackTrace"]) == (
        "Runtime.HandlerNotFound", "Handler 'handler' missing on module 'greet'", [])
    assert ("faastlane: the execution failed in state 'Greet': Runtime.HandlerNotFound: "
            "Handler 'handler' missing on module 'greet'") in done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_handler_is_a_state_failure_that_catch_handles(tmp_path: Path) -> None:
    workflow = chain(("Greet", task("greet", Catch=[
        {"ErrorEquals": ["Runtime.HandlerNotFound"], "Next": "Caught"}])),
        ("Caught", {"Type": "Pass", "End": True}))
    workflow["States"]["Greet"] = {**workflow["States"]["Greet"], "End": True}
    workflow["States"]["Greet"].pop("Next")
    done = _composed_then_handler_removed(tmp_path / "app", tmp_path / "out", workflow)
    assert done.code == 0, done.stderr
    assert done.json["Error"] == "Runtime.HandlerNotFound"


def test_a_misspelt_next_is_the_first_problem_with_what_was_meant(app_dir: Path) -> None:
    names = ["Validate", "Charge", "Reserve", "Pack", "Ship", "Invoice", "Notify", "Audit",
             "Archive"]
    workflow = chain(*[(name, task("echo")) for name in names])
    workflow["States"]["Validate"]["Next"] = "Chrage"
    write_app(app_dir, workflow, {"echo": ECHO})
    done = faastlane("validate", str(app_dir))
    assert done.code == 1
    workflow_file = app_dir / "workflow.json"
    assert done.stdout.splitlines() == [
        f"{workflow_file}: /States/Validate/Next: no state named 'Chrage' in this state "
        "machine; did you mean 'Charge'? (and 8 states unreachable because of it)",
        f"1 problem in {workflow_file}",
    ]
    assert "unreachable from StartAt" not in done.stdout
    refused = faastlane("run", str(app_dir), "--input", "{}")
    assert refused.code == 3
    assert refused.stderr.splitlines()[0].startswith(
        f"{workflow_file}: /States/Validate/Next: no state named 'Chrage'")


def test_problems_in_faastlane_json_are_reported_under_faastlane_json(app_dir: Path) -> None:
    write_app(app_dir, chain(("A", task("echo", InputPath="nope"))), {"echo": ECHO},
              settings={"untrusted": ["ecko"], "isolaton": "process"})
    done = faastlane("validate", str(app_dir))
    assert done.code == 1
    settings, workflow_file = app_dir / "faastlane.json", app_dir / "workflow.json"
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{workflow_file}: /States/A/InputPath: 'nope' is not")
    assert lines[1].startswith(f"{settings}: /isolaton: unknown setting 'isolaton'; did you "
                               "mean 'isolation'?")
    assert lines[2] == f"{settings}: /untrusted/0: no function named 'ecko'; did you mean 'echo'?"
    assert lines[3] == f"3 problems: 1 in {workflow_file}, 2 in {settings}"
    listed = faastlane("validate", str(app_dir), "--json").json
    assert [p["file"] for p in listed] == ["workflow.json", "faastlane.json", "faastlane.json"]
    refused = faastlane("compose", str(app_dir), "-o", str(app_dir.parent / "out"))
    assert refused.code == 3
    assert f"faastlane: 3 problems: 1 in {workflow_file}, 2 in {settings}" in refused.stderr


def test_a_syntax_error_in_a_function_is_reported_at_its_line(app_dir: Path) -> None:
    write_app(app_dir, chain(("A", task("echo"))), {"echo": "def handler(event, context):\n"
                                                            "    return event +\n"})
    done = faastlane("validate", str(app_dir))
    assert done.code == 1
    assert done.stdout.splitlines()[0].startswith(
        f"{app_dir / 'functions' / 'echo.py'}:2: syntax error: ")
