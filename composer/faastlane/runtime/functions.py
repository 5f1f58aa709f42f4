"""Loading the user's functions, unmodified, and calling them as their platform would.

A Lambda handler is called as ``handler(event, context)``; an OpenWhisk action as
``main(params)``. A function that raises becomes the ASL error named after its exception
class, with the cause Step Functions reports for a failed Lambda task: a JSON object with
``errorMessage``, ``errorType``, ``requestId`` and ``stackTrace``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .errors import StatesError
from .jsonvalue import NotJSONSerializable, detach
from .lambda_context import LambdaContext

LAMBDA = "lambda"
OPENWHISK = "openwhisk"
EXIT_ERROR = "Runtime.ExitError"
MARSHAL_ERROR = "Runtime.MarshalError"


@dataclass(frozen=True)
class FunctionSpec:
    """Where a function's code is, relative to the action folder, and how to call it."""

    name: str
    module_file: str  # e.g. "functions/validate.py" or "functions/resize/lambda_function.py"
    entry: str  # the callable's name in that module
    style: str  # LAMBDA or OPENWHISK
    search_path: str = "functions"  # put on sys.path, as Lambda puts its task root there


class LoadedFunction:
    """A function module imported once per container, like a warm Lambda."""

    def __init__(self, spec: FunctionSpec, module: ModuleType) -> None:
        self.spec = spec
        self.module = module
        entry = getattr(module, spec.entry, None)
        if not callable(entry):
            raise StatesError("Runtime.HandlerNotFound",
                              f"{spec.module_file} has no callable {spec.entry!r}")
        self.entry: Callable[..., Any] = entry

    def invoke(self, event: Any, timeout_seconds: float | None = None) -> Any:
        """Call the function on the current thread and return its result, detached.

        Every failure becomes the StatesError Step Functions reports for a Lambda task:
        named after the exception class (Lambda's ``errorType``), with Lambda's error
        document as the cause.
        """
        context = LambdaContext(self.spec.name, timeout_seconds)
        request_id = context.aws_request_id
        try:
            if self.spec.style == OPENWHISK:
                result = self.entry(event)
            else:
                result = self.entry(event, context)
        except StatesError:
            raise
        except SystemExit as exc:
            # What Lambda's runtime reports for a handler that exits the process.
            raise lambda_error(EXIT_ERROR, f"RequestId: {request_id} Error: Runtime exited "
                                           f"with error: exit status {exc.code}",
                               request_id) from None
        except Exception as exc:  # noqa: BLE001 - any failure of user code is reported
            frames = traceback.extract_tb(exc.__traceback__)[1:]  # drop this frame
            raise lambda_error(type(exc).__name__, str(exc), request_id,
                               traceback.format_list(frames)) from None
        try:
            return detach(result)
        except NotJSONSerializable as exc:
            # awslambdaric's wording; where in the result it failed goes to the log.
            sys.stderr.write(f"[faastlane] {self.spec.name}: result not JSON serializable "
                             f"at {exc.where}\n")
            raise lambda_error(MARSHAL_ERROR, f"Unable to marshal response: {exc.message}",
                               request_id) from None


def lambda_error(error_type: str, message: str, request_id: str,
                 stack_trace: list[str] | None = None) -> StatesError:
    """A failed Lambda invocation as Step Functions reports it: Lambda's error document."""
    cause = {"errorMessage": message, "errorType": error_type, "requestId": request_id,
             "stackTrace": stack_trace or []}
    return StatesError(error_type, json.dumps(cause))


def load_module(root: str, spec: FunctionSpec) -> ModuleType:
    """Import a function's module under a private name (two functions may share a file name)."""
    search = os.path.join(root, spec.search_path)
    if search not in sys.path:
        sys.path.insert(0, search)
    path = os.path.join(root, spec.module_file)
    module_name = "faastlane_fn_" + "".join(c if c.isalnum() else "_" for c in spec.name)
    import_spec = importlib.util.spec_from_file_location(module_name, path)
    if import_spec is None or import_spec.loader is None:
        raise StatesError("Runtime.ImportModuleError", f"cannot load {path}")
    module = importlib.util.module_from_spec(import_spec)
    sys.modules[module_name] = module
    try:
        import_spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - reported as Lambda reports an init error
        del sys.modules[module_name]
        raise StatesError("Runtime.ImportModuleError",
                          f"Unable to import module '{spec.module_file}': "
                          f"{type(exc).__name__}: {exc}") from None
    return module


class FunctionRegistry:
    """Every function of a workflow, pre-imported when the Orchestrator loads."""

    def __init__(self, root: str, specs: dict[str, FunctionSpec]) -> None:
        self.root = root
        self.specs = specs
        self._loaded: dict[str, LoadedFunction] = {}

    def preload(self) -> None:
        """Run every function's module-level set-up once per container, as on Lambda."""
        for name in self.specs:
            self.get(name)

    def get(self, name: str) -> LoadedFunction:
        loaded = self._loaded.get(name)
        if loaded is None:
            spec = self.specs.get(name)
            if spec is None:
                raise StatesError("Lambda.ResourceNotFoundException",
                                  f"Function not found: {name}")
            loaded = LoadedFunction(spec, load_module(self.root, spec))
            self._loaded[name] = loaded
        return loaded
