"""Retry and Catch: retriers, catchers and their ErrorEquals lists."""

from __future__ import annotations

from typing import Any

from faastlane.runtime.asl.errors import ALL as STATES_ALL

from . import fields as F
from .checker import Checker, json_type
from .problem import child

# Limits from the Step Functions developer guide ("Handling errors").
MAX_INTERVAL = 99_999_999
MAX_DELAY_SECONDS = 31_622_400


class ErrorHandlingChecks(Checker):
    """Checks for the Retry and Catch fields of Task, Parallel and Map states."""

    def error_equals(self, node: dict[str, Any], where: str, last: bool) -> None:
        if "ErrorEquals" not in node:
            self.report(where, "ErrorEquals is required")
            return
        names, at = node["ErrorEquals"], child(where, "ErrorEquals")
        if not isinstance(names, list) or not names:
            self.report(at, "ErrorEquals must be a non-empty array of error names")
            return
        for index, name in enumerate(names):
            if not isinstance(name, str):
                self.report(
                    child(at, index), f"an error name must be a string, not {json_type(name)}"
                )
        if STATES_ALL in names:
            if len(names) > 1:
                self.report(at, "States.ALL must appear alone in ErrorEquals")
            if not last:
                self.report(at, "a retrier or catcher with States.ALL must be the last one")

    def retry(self, retriers: Any, where: str) -> None:
        if not isinstance(retriers, list):
            self.report(where, f"Retry must be an array of retriers, not {json_type(retriers)}")
            return
        for index, retrier in enumerate(retriers):
            at = child(where, index)
            if not self.expect_object(retrier, at, "a retrier"):
                continue
            self.check_plain_fields(retrier, at, F.RETRIER, "a retrier")
            self.check_string(retrier, "Comment", at)
            self.error_equals(retrier, at, last=index == len(retriers) - 1)
            self.check_number(retrier, "IntervalSeconds", at, minimum=1, maximum=MAX_INTERVAL)
            self.check_number(retrier, "MaxAttempts", at, minimum=0, maximum=MAX_INTERVAL)
            self.check_number(retrier, "BackoffRate", at, integer=False, minimum=1.0)
            self.check_number(retrier, "MaxDelaySeconds", at, minimum=1, maximum=MAX_DELAY_SECONDS)
            if "JitterStrategy" in retrier and retrier["JitterStrategy"] not in ("FULL", "NONE"):
                self.report(child(at, "JitterStrategy"), "JitterStrategy must be FULL or NONE")

    def catch(self, catchers: Any, where: str, language: str, names: frozenset[str]) -> None:
        if not isinstance(catchers, list):
            self.report(where, f"Catch must be an array of catchers, not {json_type(catchers)}")
            return
        for index, catcher in enumerate(catchers):
            at = child(where, index)
            if not self.expect_object(catcher, at, "a catcher"):
                continue
            self.check_fields(catcher, at, F.CATCHER, language, f"a {language} catcher")
            self.check_string(catcher, "Comment", at)
            self.error_equals(catcher, at, last=index == len(catchers) - 1)
            if "Next" in catcher:
                self.target(catcher["Next"], child(at, "Next"), names)
            else:
                self.report(at, "a catcher needs Next")
            if language == F.JSONPATH:
                self.result_path(catcher, at)
            elif "Output" in catcher:
                self.jsonata_value(catcher["Output"], child(at, "Output"))
            self.assign(catcher, at, language)
