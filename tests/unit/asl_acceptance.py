"""What ``faastlane compose`` and ``faastlane validate`` say against a definition text,
for tests that need to know whether a workflow is accepted."""

from __future__ import annotations

from collections.abc import Collection

from faastlane.validation.load import load_definition
from faastlane.validation.unsupported import unsupported_features
from faastlane.validation.validate import validate


def refusals(definition_text: str, functions: Collection[str] = ()) -> list[str]:
    """The problems found, as the CLI prints them (none: the definition is accepted)."""
    definition, problems = load_definition(definition_text)
    if not problems:
        problems = (validate(definition, functions=set(functions))
                    or unsupported_features(definition))
    return [str(problem) for problem in problems]
