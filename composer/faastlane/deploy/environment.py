"""``deploy --env NAME[=VALUE]``: the deployed action's own environment.

Each function already carries its ``faastlane.json`` variables inside the action. These
are the platform's variables of the whole action (the process's environment, seen by
every function under its own variables): on Lambda the function configuration's
``Environment.Variables``; on OpenWhisk the action's parameters marked ``init``, which
the invoker hands to the container's ``/init`` as its ``env`` (OpenWhisk's
``Parameters.initParameters``) and keeps out of the activation's input. Given, they
replace the action's variables; not given, an update keeps the ones it has (as Lambda's
UpdateFunctionConfiguration and OpenWhisk's updateWhiskAction do).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from faastlane.app.folder import LAMBDA_RESERVED_VARIABLES, VARIABLE_NAME
from faastlane.runtime.engine.functions import FunctionSpec

from .errors import DeployError

LAMBDA_ENVIRONMENT_BYTES = 4096  # Lambda: "Total size of environment variables 4 KB"


def parse_environment(given: Sequence[str] | None, target: str,
                      shell: Mapping[str, str]) -> dict[str, str] | None:
    """``--env`` values as variables (None when none was given). ``NAME`` alone takes
    this shell's value; a name Lambda reserves is refused for Lambda (the role and the
    runtime set them there), the size over Lambda's limit too."""
    if not given:
        return None
    variables: dict[str, str] = {}
    for item in given:
        name, has_value, value = item.partition("=")
        if not VARIABLE_NAME.match(name):
            raise DeployError(f"--env {item}: a variable's name is letters, digits and _, "
                              "starting with a letter (NAME=VALUE, or NAME for this "
                              "shell's value)")
        if not has_value:
            if name not in shell:
                raise DeployError(f"--env {name}: {name} is not set in this shell; give "
                                  f"its value as --env {name}=VALUE")
            value = shell[name]
        if target == "lambda" and name in LAMBDA_RESERVED_VARIABLES:
            raise DeployError(f"--env {name}: Lambda reserves {name} (its runtime and the "
                              "execution role set it)")
        variables[name] = value
    size = sum(len(k.encode()) + len(v.encode()) for k, v in variables.items())
    if target == "lambda" and size > LAMBDA_ENVIRONMENT_BYTES:
        raise DeployError(f"--env: the variables take {size} bytes, over Lambda's limit "
                          f"of {LAMBDA_ENVIRONMENT_BYTES} bytes for a function's "
                          "environment")
    return variables


def describe(variables: Mapping[str, str]) -> str:
    """For the report: the names, never the values (they may be secrets)."""
    return ", ".join(sorted(variables)) if variables else "none"


def shadowed(variables: Mapping[str, str] | None,
             functions: Mapping[str, FunctionSpec]) -> list[str]:
    """Warnings for ``--env`` variables some function's own faastlane.json variable of
    the same name hides from it (the function's own value wins)."""
    lines = []
    for name in sorted(variables or {}):
        hidden = sorted(f for f, spec in functions.items()
                        if name in dict(spec.environment))
        if hidden:
            one = len(hidden) == 1
            lines.append(f"warning: --env {name} is not what function"
                         f"{'' if one else 's'} {', '.join(hidden)} "
                         f"see{'s' if one else ''}: faastlane.json gives "
                         f"{'it' if one else 'them'} {name} of "
                         f"{'its' if one else 'their'} own, which wins; "
                         "change it there to change it")
    return lines
