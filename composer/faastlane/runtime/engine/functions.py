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
from typing import Any, Protocol

from ..asl.errors import RUNTIME, StatesError
from ..asl.jsonvalue import NotJSONSerializable, detach
from .lambda_context import LambdaContext

LAMBDA = "lambda"
OPENWHISK = "openwhisk"
EXIT_ERROR = "Runtime.ExitError"
HANDLER_NOT_FOUND = "Runtime.HandlerNotFound"
MARSHAL_ERROR = "Runtime.MarshalError"
# The runtime package (this file is in its engine/): its frames are left out of stack traces.
_RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


# The app folder a local run was composed from (``faastlane run``): stack traces then name
# the user's own files, not the temporary action folder's copies of them.
_SOURCE_ROOT: str | None = None
_ACTION_ROOT = ""


def show_sources_from(app_root: str) -> None:
    """Make stack traces name ``app_root``'s files (the action's root is this runtime's
    parent folder)."""
    global _SOURCE_ROOT, _ACTION_ROOT
    _SOURCE_ROOT = os.path.abspath(app_root)
    _ACTION_ROOT = os.path.dirname(_RUNTIME_DIR.rstrip(os.sep)) + os.sep


def _source_of(filename: str) -> str:
    if _SOURCE_ROOT is None or not filename.startswith(_ACTION_ROOT):
        return filename
    original = os.path.join(_SOURCE_ROOT, filename[len(_ACTION_ROOT):])
    return original if os.path.exists(original) else filename


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
            raise StatesError(HANDLER_NOT_FOUND, handler_not_found(spec))
        self.entry: Callable[..., Any] = entry

    def invoke(self, event: Any, timeout_seconds: float | None = None) -> Any:
        """Call the function on the current thread and return its result, detached.

        Every failure becomes the StatesError Step Functions reports for a Lambda task:
        named after the exception class (Lambda's ``errorType``), with Lambda's error
        document as the cause.
        """
        context = LambdaContext(self.spec.name, timeout_seconds)
        try:
            return detach(call_entry(self.entry, self.spec.style, event, context))
        except StatesError:
            raise
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - any failure of user code
            raise failure(self.spec.name, exc, context.aws_request_id) from None


def handler_not_found(spec: FunctionSpec) -> str:
    """Lambda's words (awslambdaric) for a module without the handler it was given:
    the module as the handler string names it (``lambda_function``, ``pkg.mod``)."""
    module = os.path.splitext(os.path.relpath(spec.module_file, spec.search_path))[0]
    return f"Handler '{spec.entry}' missing on module '{module.replace(os.sep, '.')}'"


class MissingHandler:
    """A function whose module has no such handler (deleted after compose, say): every
    invocation fails as on Lambda, with ``Runtime.HandlerNotFound`` -- the module's
    set-up has run, as Lambda's init does."""

    def __init__(self, spec: FunctionSpec) -> None:
        self.spec = spec

    def invoke(self, event: Any, timeout_seconds: float | None = None) -> Any:
        context = LambdaContext(self.spec.name, timeout_seconds)
        raise lambda_error(HANDLER_NOT_FOUND, handler_not_found(self.spec),
                           context.aws_request_id)


def call_entry(entry: Callable[..., Any], style: str, event: Any,
               context: LambdaContext) -> Any:
    """Call a function as its platform does: ``main(params)`` or ``handler(event, context)``."""
    if style == OPENWHISK:
        return entry(event)
    return entry(event, context)


def failure(function: str, exc: BaseException, request_id: str) -> StatesError:
    """The StatesError Step Functions reports when ``exc`` ended a Lambda task: named
    after the exception class (Lambda's ``errorType``), Lambda's error document as cause."""
    if isinstance(exc, NotJSONSerializable):
        # awslambdaric's wording; where in the result it failed goes to the log.
        sys.stderr.write(f"[faastlane] {function}: result not JSON serializable "
                         f"at {exc.where}\n")
        return lambda_error(MARSHAL_ERROR, f"Unable to marshal response: {exc.message}",
                            request_id)
    if isinstance(exc, SystemExit):
        # What Lambda's runtime reports for a handler that exits the process.
        return lambda_error(EXIT_ERROR, f"RequestId: {request_id} Error: Runtime exited "
                                        f"with error: exit status {exc.code}", request_id)
    # The stack from the function's entry point down: the runtime's frames are dropped.
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(_RUNTIME_DIR)]
    if _SOURCE_ROOT is not None:
        for frame in frames:
            frame.filename = _source_of(frame.filename)
    return lambda_error(type(exc).__name__, str(exc), request_id,
                        traceback.format_list(frames))


def lambda_error(error_type: str, message: str, request_id: str,
                 stack_trace: list[str] | None = None) -> StatesError:
    """A failed Lambda invocation as Step Functions reports it: Lambda's error document."""
    cause = {"errorMessage": message, "errorType": error_type, "requestId": request_id,
             "stackTrace": stack_trace or []}
    return StatesError(error_type, json.dumps(cause))


def module_name(spec: FunctionSpec, prefix: str = "faastlane_fn_") -> str:
    """The private name a function's module is imported under (two functions may share
    a file name)."""
    return prefix + "".join(c if c.isalnum() else "_" for c in spec.name)


def load_module(root: str, spec: FunctionSpec, name: str | None = None) -> ModuleType:
    """Import a function's module under ``name`` (default :func:`module_name`)."""
    search = os.path.join(root, spec.search_path)
    if search not in sys.path:
        sys.path.insert(0, search)
    path = os.path.join(root, spec.module_file)
    module_name_ = name or module_name(spec)
    import_spec = importlib.util.spec_from_file_location(module_name_, path)
    if import_spec is None or import_spec.loader is None:
        raise StatesError("Runtime.ImportModuleError", f"cannot load {path}")
    module = importlib.util.module_from_spec(import_spec)
    sys.modules[module_name_] = module
    try:
        import_spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - reported as Lambda reports an init error
        del sys.modules[module_name_]
        raise StatesError("Runtime.ImportModuleError",
                          f"Unable to import module '{spec.module_file}': "
                          f"{type(exc).__name__}: {exc}") from None
    return module


class Invocable(Protocol):
    """A loaded function: shared (:class:`LoadedFunction`) or in its own private heap
    (``private_heaps.DomainFunction``)."""

    spec: FunctionSpec

    def invoke(self, event: Any, timeout_seconds: float | None = None) -> Any: ...


PrivateLoader = Callable[[str, FunctionSpec, bool], Invocable]


class FunctionRegistry:
    """Every function of a workflow, pre-imported when the Orchestrator loads.

    ``private_loader(root, spec, keep_escapes)`` loads a function into its own private
    heap (``isolation.private_heaps.load``, handed in by the Orchestrator: only mpk mode
    on the cpython-mpk runtime needs it).
    """

    def __init__(self, root: str, specs: dict[str, FunctionSpec],
                 private_loader: PrivateLoader | None = None) -> None:
        self.root = root
        self.specs = specs
        self._private_loader = private_loader
        self._loaded: dict[str, Invocable] = {}
        self._private: dict[str, Invocable] = {}

    def preload(self, private: bool = False, kept_escapes: tuple[str, ...] = ()) -> None:
        """Run every function's module-level set-up once per container, as on Lambda;
        ``private``: each inside its own private heap (``--isolation mpk``)."""
        for name in self.specs:
            self.get(name, private, name in kept_escapes)

    def _spec(self, name: str) -> FunctionSpec:
        spec = self.specs.get(name)
        if spec is None:
            raise StatesError("Lambda.ResourceNotFoundException", f"Function not found: {name}")
        return spec

    def get(self, name: str, private: bool = False, keep_escapes: bool = False) -> Invocable:
        """The function, imported on first use: shared, or in its private heap."""
        if private:
            found = self._private.get(name)
            if found is None:
                if self._private_loader is None:
                    raise StatesError(RUNTIME, "isolation mpk: this Orchestrator was made "
                                               "without a private-heap loader")
                found = self._private[name] = _or_missing(
                    self._spec(name),
                    lambda: self._private_loader(self.root, self._spec(name), keep_escapes))
            return found
        loaded = self._loaded.get(name)
        if loaded is None:
            loaded = self._loaded[name] = _or_missing(
                self._spec(name),
                lambda: LoadedFunction(self._spec(name), load_module(self.root, self._spec(name))))
        return loaded


def _or_missing(spec: FunctionSpec, load: Callable[[], Invocable]) -> Invocable:
    """The loaded function; one without its handler fails the states that call it."""
    try:
        return load()
    except StatesError as error:
        if error.error != HANDLER_NOT_FOUND:
            raise
        return MissingHandler(spec)
