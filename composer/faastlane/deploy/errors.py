"""What can go wrong packaging and deploying: each one line at the CLI, saying how to fix it."""

from __future__ import annotations

from faastlane.errors import FaastlaneError


class DeployError(FaastlaneError):
    """Packaging or deployment failed."""


class MissingConfiguration(DeployError):
    """No credentials, API host, region or role: nothing was sent anywhere."""


class TooLarge(DeployError):
    """A payload or package is over a platform's limit: refused before upload."""


class VendoringFailed(DeployError):
    """``pip install`` of a requirements file failed."""


class RuntimeNotBuilt(DeployError):
    """The cpython-mpk runtime a custom-runtime package needs has not been built."""


class ApiError(DeployError):
    """The platform answered with an error: its status and message, as it said them."""

    exit_code = 1

    def __init__(self, platform: str, operation: str, status: int | str, message: str) -> None:
        super().__init__(f"{platform} {operation}: {status}: {message}")
        self.status = status
        self.message = message


class InvocationFailed(DeployError):
    """The deployed workflow ran and failed; its error result is printed, exit 1."""

    exit_code = 1

    def __init__(self, result: object) -> None:
        super().__init__("the workflow failed")
        self.result = result
