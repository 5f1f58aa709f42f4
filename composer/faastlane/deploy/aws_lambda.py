"""The one module that talks to AWS: Lambda functions and layers, through boto3.

boto3 reads the usual AWS configuration: ``--profile``/``AWS_PROFILE``, ``--region``/
``AWS_DEFAULT_REGION``/the profile's region, credentials from the environment or
``~/.aws``, and ``AWS_ENDPOINT_URL`` (``AWS_ENDPOINT_URL_LAMBDA``) for another endpoint
such as a local emulator. Calls: ``get_function``, ``list_layer_versions`` then
``publish_layer_version`` (only for content that changed), ``create_function`` or
``update_function_code`` + ``update_function_configuration``, ``delete_layer_version``
(superseded versions this tool published), and ``invoke`` (``RequestResponse``). A
container-image function (``PackageType: Image``) names its image by ``ImageUri`` and has
no layers, runtime or handler of its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from . import limits
from .errors import ApiError, DeployError, InvocationFailed, MissingConfiguration

PLATFORM = "AWS Lambda"
T = TypeVar("T")
# What a new function gets unless --memory/--timeout say otherwise; an update keeps the
# function's own settings unless they are given.
DEFAULT_MEMORY_MB = 1024
DEFAULT_TIMEOUT_S = 300
MEMORY_MB_RANGE = (128, 10240)  # Lambda's bounds for MemorySize and Timeout
TIMEOUT_S_RANGE = (1, 900)


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    code: bytes
    runtime: str
    handler: str
    role: str | None
    layers: list[str]
    memory_mb: int | None = None  # None: the default for a new function, else kept
    timeout_s: int | None = None
    image_uri: str | None = None  # a container-image function: no zip, runtime or layers
    environment: dict[str, str] | None = None  # Environment.Variables; None: kept

    def code_and_package(self) -> dict[str, Any]:
        """CreateFunction's code arguments: a zip with its runtime, or an image."""
        if self.image_uri:
            return {"PackageType": "Image", "Code": {"ImageUri": self.image_uri}}
        return {"PackageType": "Zip", "Code": {"ZipFile": self.code}, "Runtime": self.runtime,
                "Handler": self.handler, "Layers": self.layers}


def _boto3() -> Any:
    try:
        import boto3  # noqa: PLC0415 (only deployments need it)
    except ImportError:
        raise MissingConfiguration("deploying to Lambda needs boto3: pip install "
                                   "'faastlane[deploy]'") from None
    return boto3


class LambdaClient:
    def __init__(self, profile: str | None = None, region: str | None = None) -> None:
        boto3 = _boto3()
        from botocore.exceptions import NoRegionError, ProfileNotFound  # noqa: PLC0415
        try:
            session = boto3.session.Session(profile_name=profile, region_name=region)
            self.client = session.client("lambda")
        except ProfileNotFound as err:
            raise MissingConfiguration(f"no AWS profile {err.kwargs.get('profile')!r} in "
                                       f"~/.aws/config or ~/.aws/credentials") from None
        except NoRegionError:
            raise MissingConfiguration("no AWS region configured: export AWS_DEFAULT_REGION, "
                                       "pass --region, or set region in ~/.aws/config") from None

    def _call(self, operation: str, call: Callable[..., T], **kwargs: Any) -> T:
        from botocore.exceptions import (  # noqa: PLC0415
            BotoCoreError,
            ClientError,
            EndpointConnectionError,
            NoCredentialsError,
        )
        try:
            return call(**kwargs)
        except NoCredentialsError:
            raise MissingConfiguration("no AWS credentials: export AWS_ACCESS_KEY_ID and "
                                       "AWS_SECRET_ACCESS_KEY, or pass --profile") from None
        except EndpointConnectionError as err:
            raise DeployError(f"cannot reach AWS Lambda at {err.kwargs.get('endpoint_url')}"
                              ) from None
        except ClientError as err:
            error = err.response.get("Error", {})
            status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "?")
            raise ApiError(PLATFORM, operation, f"{status} {error.get('Code', '')}".strip(),
                           error.get("Message", str(err))) from None
        except BotoCoreError as err:
            raise DeployError(f"{PLATFORM} {operation}: {err}") from None

    def publish_layer(self, name: str, code: bytes, runtime: str,
                      description: str = "Faastlane runtime library and dependencies") -> str:
        """A new version of layer ``name``; its ARN."""
        answer = self._call(f"PublishLayerVersion {name}", self.client.publish_layer_version,
                            LayerName=name, Content={"ZipFile": code},
                            CompatibleRuntimes=[runtime], Description=description)
        arn: str = answer["LayerVersionArn"]
        return arn

    def layer_versions(self, name: str) -> list[dict[str, Any]]:
        """Every version of layer ``name``, newest first (none if there is no such layer)."""
        versions: list[dict[str, Any]] = []
        marker: str | None = None
        while True:
            page = self._call(f"ListLayerVersions {name}", self.client.list_layer_versions,
                              LayerName=name, **({"Marker": marker} if marker else {}))
            versions += page.get("LayerVersions", [])
            marker = page.get("NextMarker")
            if not marker:
                return sorted(versions, key=lambda v: v["Version"], reverse=True)

    def delete_layer_version(self, name: str, version: int) -> None:
        self._call(f"DeleteLayerVersion {name}:{version}", self.client.delete_layer_version,
                   LayerName=name, VersionNumber=version)

    def configuration(self, name: str) -> dict[str, Any] | None:
        """The function's configuration, or None if there is no such function."""
        try:
            answer = self._call(f"GetFunction {name}", self.client.get_function,
                                FunctionName=name)
        except ApiError as err:
            if "ResourceNotFoundException" in str(err.status):
                return None
            raise
        configuration: dict[str, Any] = answer.get("Configuration", {})
        return configuration

    def exists(self, name: str) -> bool:
        return self.configuration(name) is not None

    def create_function(self, spec: FunctionSpec) -> dict[str, Any]:
        if not spec.role:
            raise MissingConfiguration(
                f"creating Lambda function {spec.name} needs an execution role: pass --role "
                f"arn:aws:iam::ACCOUNT:role/NAME (or export FAASTLANE_LAMBDA_ROLE)")
        return self._call(f"CreateFunction {spec.name}", self.client.create_function,
                          FunctionName=spec.name, Role=spec.role,
                          MemorySize=spec.memory_mb or DEFAULT_MEMORY_MB,
                          Timeout=spec.timeout_s or DEFAULT_TIMEOUT_S, Publish=True,
                          Description="Faastlane: a whole workflow as one function",
                          **spec.code_and_package(), **_environment(spec))

    def update_function(self, spec: FunctionSpec) -> dict[str, Any]:
        code = {"ImageUri": spec.image_uri} if spec.image_uri else {"ZipFile": spec.code}
        updated: dict[str, Any] = self._call(
            f"UpdateFunctionCode {spec.name}", self.client.update_function_code,
            FunctionName=spec.name, **code)
        self._wait_updated(spec.name)
        # Memory and time limit only when given: a redeploy keeps what the function has.
        settings: dict[str, Any] = {key: value for key, value in (
            ("MemorySize", spec.memory_mb), ("Timeout", spec.timeout_s)) if value}
        settings.update(_environment(spec))  # likewise the variables
        # An image function's runtime, handler and layers are in its image.
        if not spec.image_uri:
            settings.update(Runtime=spec.runtime, Handler=spec.handler, Layers=spec.layers)
        if spec.role:
            settings["Role"] = spec.role
        if not settings:  # an image function redeployed with nothing else to change
            return updated
        return self._call(f"UpdateFunctionConfiguration {spec.name}",
                          self.client.update_function_configuration,
                          FunctionName=spec.name, **settings)

    def _wait_updated(self, name: str) -> None:
        """A function takes its next update only once the last one finished."""
        waiter = self.client.get_waiter("function_updated_v2")
        self._call(f"wait for {name}", waiter.wait, FunctionName=name,
                   WaiterConfig={"Delay": 1, "MaxAttempts": 120})

    def invoke(self, name: str, payload: Any) -> Any:
        """A synchronous invocation's result; InvocationFailed with Lambda's error shape."""
        body = json.dumps(payload).encode()
        limits.LAMBDA_SYNC_PAYLOAD.check(len(body), "the invocation payload")
        answer = self._call(f"Invoke {name}", self.client.invoke, FunctionName=name,
                            InvocationType="RequestResponse", Payload=body)
        raw = answer["Payload"].read()
        try:
            result = json.loads(raw or b"null")
        except ValueError:  # not JSON (or not UTF-8): say what came back, on one line
            failed = answer.get("FunctionError")
            what = f"the function failed ({failed}) and its" if failed else "the function's"
            raise ApiError(PLATFORM, f"Invoke {name}", answer.get("StatusCode", "?"),
                           f"{what} answer is not JSON ({len(raw)} bytes): "
                           f"{_excerpt(raw)}") from None
        if answer.get("FunctionError"):
            raise InvocationFailed(result)
        return result


def _environment(spec: FunctionSpec) -> dict[str, Any]:
    """The ``Environment`` argument, when the deployment gives variables."""
    if spec.environment is None:
        return {}
    return {"Environment": {"Variables": dict(spec.environment)}}


def _excerpt(raw: bytes, limit: int = 200) -> str:
    """The start of an answer, as one line."""
    text = raw[:limit].decode("utf-8", "replace")
    return repr(text) + ("..." if len(raw) > limit else "")
