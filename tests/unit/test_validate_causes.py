"""Root causes first: a misspelt name says what was probably meant, and the problems it
causes (states left unreachable) are folded into it rather than listed."""

from __future__ import annotations

from typing import Any

from faastlane.validation import validate


def _chain(names: list[str], first_next: str) -> dict[str, Any]:
    """Passes in a row, the first one's Next replaced by ``first_next``."""
    states: dict[str, Any] = {name: {"Type": "Pass", "Next": after}
                              for name, after in zip(names, names[1:], strict=False)}
    states[names[-1]] = {"Type": "Pass", "End": True}
    states[names[0]]["Next"] = first_next
    return {"StartAt": names[0], "States": states}


def test_a_misspelt_next_is_one_problem_naming_what_it_meant_and_what_it_cut_off() -> None:
    definition = _chain(["Start", "Charge", "Ship", "Notify", "Archive", "Done"], "Charg")
    problems = validate(definition)
    assert [(p.pointer, p.message) for p in problems] == [
        ("/States/Start/Next", "no state named 'Charg' in this state machine; did you mean"
         " 'Charge'? (and 5 states unreachable because of it)"),
    ]


def test_few_states_cut_off_are_named() -> None:
    definition = _chain(["A1", "B1"], "b1")  # another case only
    (problem,) = validate(definition)
    assert problem.message.endswith("did you mean 'B1'? (and state 'B1' unreachable because"
                                    " of it)")


def test_a_state_nothing_leads_to_is_still_reported_after_the_root_cause() -> None:
    definition = _chain(["Alpha", "Beta", "Gamma"], "Betta")
    definition["States"]["Orphan"] = {"Type": "Pass", "End": True}
    definition["States"]["Alpha"]["InputPath"] = "nope"
    problems = validate(definition)
    assert [p.pointer for p in problems] == [
        "/States/Alpha/InputPath", "/States/Alpha/Next", "/States/Orphan"]
    assert "did you mean 'Beta'? (and states 'Beta', 'Gamma' unreachable" in problems[1].message
    assert problems[2].secondary and not problems[0].secondary


def test_a_name_close_to_nothing_gets_no_suggestion_and_no_folding() -> None:
    definition = _chain(["Alpha", "Beta"], "Xyzzy")
    problems = validate(definition)
    assert [p.pointer for p in problems] == ["/States/Alpha/Next", "/States/Beta"]
    assert "did you mean" not in problems[0].message


def test_misspelt_choice_default_and_catch_next_fold_their_states() -> None:
    definition = {
        "StartAt": "Pick",
        "States": {
            "Pick": {"Type": "Choice", "Default": "Lefft",
                     "Choices": [{"Variable": "$.x", "IsPresent": True, "Next": "Work"}]},
            "Work": {"Type": "Task", "Resource": "work", "End": True,
                     "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Recovr"}]},
            "Left": {"Type": "Succeed"},
            "Recover": {"Type": "Fail"},
        },
    }
    problems = validate(definition)
    assert [p.pointer for p in problems] == ["/States/Pick/Default", "/States/Work/Catch/0/Next"]
    assert all("unreachable because of it" in p.message for p in problems)


def test_misspelt_field_type_and_function_names_say_what_was_meant() -> None:
    definition = {"StartAt": "A", "States": {
        "A": {"Type": "Task", "Resource": "valdate", "Nxt": "B", "End": True},
        "B": {"Type": "pass", "End": True}}}
    messages = {p.pointer: p.message for p in validate(definition, functions={"validate"})}
    assert "did you mean 'Next'?" in messages["/States/A/Nxt"]
    assert "did you mean 'Pass'?" in messages["/States/B/Type"]
    assert "no function code for 'valdate'; did you mean 'validate'?" in messages[
        "/States/A/Resource"]


def test_misspelt_start_at_says_what_was_meant() -> None:
    (problem,) = validate({"StartAt": "Frist", "States": {"First": {"Type": "Succeed"}}})
    assert problem.pointer == "/StartAt"
    assert problem.message.endswith("did you mean 'First'?")
