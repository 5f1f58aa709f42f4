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
import signal
import sys
import threading
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

from ..asl.errors import RUNTIME, StatesError
from ..asl.jsonvalue import NotJSONSerializable, detach
from . import flight, inherited, lambda_env, own_modules
from .lambda_context import LambdaContext

LAMBDA = "lambda"
OPENWHISK = "openwhisk"
EXIT_ERROR = "Runtime.ExitError"
# What Lambda reports for an invocation that outlived its function's timeout, and Step
# Functions then fails the Task with (its errorType).
TIMED_OUT = "Sandbox.Timedout"
# A function's timeout when faastlane.json sets none. Lambda's own default is 3 s, which
# a function's configuration raises as needed; here a default that stops a function
# that never returns, yet does not kill the bundled examples' slowest invocations on a
# slow machine (ml-predict's Predict, the sentiment scorers under QEMU, ...).
DEFAULT_TIMEOUT_SECONDS = 60.0
HANDLER_NOT_FOUND = "Runtime.HandlerNotFound"
IMPORT_MODULE_ERROR = "Runtime.ImportModuleError"
SYNTAX_ERROR = "Runtime.UserCodeSyntaxError"
MARSHAL_ERROR = "Runtime.MarshalError"
# The runtime package (this file is in its engine/): its frames are left out of stack traces.
_RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


# The app folder a local run was composed from (``faastlane run``): stack traces then name
# the user's own files, not the temporary action folder's copies of them.
_SOURCE_ROOT: str | None = None
_ACTION_ROOT = ""
# A template's functions: their folder in the action -> their code folder (CodeUri).
_SOURCE_FOLDERS: dict[str, str] = {}
_FUNCTIONS = "functions"  # an app folder's functions, copied into the action's


def show_sources_from(app_root: str, folders: dict[str, str] | None = None) -> None:
    """Make stack traces name ``app_root``'s files (the action's root is this runtime's
    parent folder), and those of ``folders`` (action-relative folder -> source folder)."""
    global _SOURCE_ROOT, _ACTION_ROOT
    inherited.remember(__name__, "show_sources_from", app_root, folders)
    _SOURCE_ROOT = os.path.abspath(app_root)
    _ACTION_ROOT = os.path.dirname(_RUNTIME_DIR.rstrip(os.sep)) + os.sep
    _SOURCE_FOLDERS.update((folder.strip("/") + "/", os.path.abspath(source))
                           for folder, source in (folders or {}).items())


def _source_of(filename: str) -> str:
    if _SOURCE_ROOT is None or not filename.startswith(_ACTION_ROOT):
        return filename
    relative = filename[len(_ACTION_ROOT):]
    original = os.path.join(_SOURCE_ROOT, relative)
    # The functions' code is copied from the app as it is: its source is there. (A
    # sandbox could not check: the app's folder is not in its view.)
    copied = relative.startswith(_FUNCTIONS + "/")
    for folder, source in _SOURCE_FOLDERS.items():
        if relative.startswith(folder):
            original, copied = os.path.join(source, relative[len(folder):]), True
    return original if copied or os.path.exists(original) else filename


def current_function() -> str | None:
    """What this thread is running (``execution.timed_invoke`` sets it), or None (the
    Orchestrator)."""
    return lambda_env.CURRENT.label


@dataclass(frozen=True)
class FunctionSpec:
    """Where a function's code is, relative to the action folder, and how to call it."""

    name: str
    module_file: str  # e.g. "functions/validate.py" or "functions/resize/lambda_function.py"
    entry: str  # the callable's name in that module
    style: str  # LAMBDA or OPENWHISK
    search_path: str = "functions"  # put on sys.path, as Lambda puts its task root there
    # faastlane.json "functions": {NAME: {...}}: as Lambda's function configuration.
    environment: tuple[tuple[str, str], ...] = ()  # Environment.Variables
    timeout: float | None = None  # seconds; None: DEFAULT_TIMEOUT_SECONDS
    memory: int | None = None  # MB, reported to the function (context, environment)

    @property
    def own_folder(self) -> str | None:
        """The folder of the function's own modules (``functions/NAME``), relative to the
        action; None for a single-file function (its folder, ``functions/``, is shared)."""
        return self.search_path if "/" in self.search_path.strip("/") else None


def handler_name(spec: FunctionSpec) -> str:
    """Lambda's ``_HANDLER``: the module, dotted from the function's task root, and the
    entry point (``lambda_function.lambda_handler``)."""
    relative = os.path.relpath(spec.module_file, spec.search_path)
    return os.path.splitext(relative)[0].replace(os.sep, ".") + "." + spec.entry


_VIEWS: dict[str, dict[str, str | None]] = {}


def environment_of(root: str, spec: FunctionSpec) -> dict[str, str | None]:
    """The function's own environment variables (``lambda_env``), made once per process
    (under mpk: before its domain is entered, in the shared heap)."""
    view = _VIEWS.get(spec.name)
    if view is None:
        lambda_env.install_environ()
        lambda_env.install_logging()
        view = _VIEWS[spec.name] = lambda_env.function_variables(
            spec.name, os.path.join(root, spec.search_path), handler_name(spec),
            spec.memory, dict(spec.environment))
    return view


class LoadedFunction:
    """A function module imported once per container, like a warm Lambda."""

    def __init__(self, spec: FunctionSpec, module: ModuleType,
                 environment: dict[str, str | None] | None = None,
                 finish: Callable[[Any], Any] = detach) -> None:
        self.spec = spec
        self.module = module
        self.environment = environment
        # What a result becomes: detached here; in a sandbox, encoded for the wire once.
        self.finish = finish
        entry = getattr(module, spec.entry, None)
        if not callable(entry):
            raise init_failure(HANDLER_NOT_FOUND, handler_not_found(spec))
        self.entry: Callable[..., Any] = entry
        # How the platform calls it, fixed now: a Lambda handler is called as it is.
        self.call = entry_caller(entry, spec.style)

    def invoke(self, event: Any, timeout_seconds: float | None = None) -> Any:
        """Call the function on the current thread and return its result, finished
        (detached, or encoded for the wire).

        Every failure becomes the StatesError Step Functions reports for a Lambda task:
        named after the exception class (Lambda's ``errorType``), with Lambda's error
        document as the cause.
        """
        context = LambdaContext(self.spec.name, timeout_seconds)
        current = lambda_env.CURRENT
        outer = current.view, current.context
        current.view, current.context = self.environment, context
        try:
            return self.finish(self.call(event, context))
        except StatesError:
            raise
        except USER_FAILURES as exc:  # noqa: BLE001 - any failure of user code
            raise failure(self.spec.name, exc, context.aws_request_id) from None
        finally:
            current.view, current.context = outer


def timed_out(seconds: float, request_id: str | None = None) -> StatesError:
    """The error of an invocation stopped at its function's timeout, as Lambda's runtime
    API reports it (``RequestId: ... Error: Task timed out after 3.00 seconds``)."""
    request_id = request_id or str(uuid.uuid4())
    message = f"RequestId: {request_id} Error: Task timed out after {seconds:.2f} seconds"
    return StatesError(TIMED_OUT, json.dumps({"errorType": TIMED_OUT,
                                              "errorMessage": message}))


def handler_module(spec: FunctionSpec) -> str:
    """The module as the function's handler string names it (``lambda_function``,
    ``pkg.mod``): the name Lambda's messages use."""
    module = os.path.splitext(os.path.relpath(spec.module_file, spec.search_path))[0]
    return module.replace(os.sep, ".")


def handler_not_found(spec: FunctionSpec) -> str:
    """Lambda's words (awslambdaric) for a module without the handler it was given."""
    return f"Handler '{spec.entry}' missing on module '{handler_module(spec)}'"


class InitError(StatesError):
    """A function's init failed: its module raised while it was imported, or has no
    such handler. The error and cause are Lambda's (:func:`init_failure`)."""


def init_failure(error_type: str, message: str,
                 stack_trace: list[str] | None = None) -> InitError:
    """An init error with Lambda's error document (awslambdaric gives it no request id)."""
    document = lambda_error(error_type, message, "", stack_trace)
    return InitError(document.error, document.cause)


def import_failure(spec: FunctionSpec, exc: BaseException) -> InitError:
    """What Lambda reports for a module that raised ``exc`` during its import
    (awslambdaric's ``_get_handler``; any other exception as the init's fault)."""
    module = handler_module(spec)
    if isinstance(exc, ImportError):
        return init_failure(IMPORT_MODULE_ERROR, f"Unable to import module '{module}': {exc}")
    if isinstance(exc, SyntaxError):
        where = _source_of(exc.filename) if exc.filename else "<unknown>"
        return init_failure(SYNTAX_ERROR, f"Syntax error in module '{module}': {exc}",
                         [f'  File "{where}" Line {exc.lineno}\n    {exc.text}'])
    if isinstance(exc, (SystemExit, KeyboardInterrupt)):
        error = failure(spec.name, exc, str(uuid.uuid4()))
        return init_failure(EXIT_ERROR, json.loads(error.cause or "{}").get("errorMessage", ""))
    return init_failure(type(exc).__name__, str(exc), traceback.format_list(_user_frames(exc)))


class FailedInit:
    """A function whose init failed. Each invocation first runs the init again, as
    Lambda starts a new execution environment after a failed init; while it keeps
    failing, the invocation fails with the init's error (Retry and Catch apply) and the
    workflow's other functions run. ``load`` None: the init is not tried again (a
    private heap keeps its protection key after a failed import)."""

    def __init__(self, spec: FunctionSpec, error: StatesError,
                 load: Callable[[], Invocable] | None) -> None:
        self.spec = spec
        self.error = error
        self._load = load
        self._loaded: Invocable | None = None
        self._lock = threading.Lock()

    def invoke(self, event: Any, timeout_seconds: float | None = None) -> Any:
        loaded = self._loaded
        if loaded is None and self._load is not None:
            with self._lock:  # concurrent Map iterations: one init at a time
                loaded = self._loaded
                if loaded is None:
                    try:
                        loaded = self._loaded = self._load()
                    except InitError as error:
                        self.error = error
        if loaded is None:
            raise StatesError(self.error.error, self.error.cause)
        return loaded.invoke(event, timeout_seconds)


def call_entry(entry: Callable[..., Any], style: str, event: Any,
               context: LambdaContext) -> Any:
    """Call a function as its platform does: ``main(params)`` or ``handler(event, context)``."""
    return entry_caller(entry, style)(event, context)


def entry_caller(entry: Callable[..., Any], style: str
                 ) -> Callable[[Any, LambdaContext], Any]:
    """``entry`` as a callable of (event, context), called as its platform calls it:
    ``main(params)`` or ``handler(event, context)``."""
    if style == OPENWHISK:
        return lambda event, context: entry(event)
    return entry


# What function code may raise that its Task reports as the function's failure (as
# Lambda does), rather than ending the Orchestrator: a handler's SystemExit and
# KeyboardInterrupt end only its own Lambda runtime.
USER_FAILURES = (Exception, SystemExit, KeyboardInterrupt)


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
        return runtime_exited(f"exit status {exc.code}", request_id)
    if isinstance(exc, KeyboardInterrupt):
        # Uncaught, it ends a Python process by SIGINT: so Lambda reports the runtime.
        return runtime_exited("signal: interrupt", request_id)
    return lambda_error(type(exc).__name__, str(exc), request_id,
                        traceback.format_list(_user_frames(exc)))


def _user_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """The stack from the function's code down: the runtime's frames are dropped, and
    a local run's frames name the user's own files."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(_RUNTIME_DIR)]
    if _SOURCE_ROOT is not None:
        for frame in frames:
            frame.filename = _source_of(frame.filename)
    return frames


def runtime_exited(how: str, request_id: str, error_type: str = EXIT_ERROR) -> StatesError:
    """What Lambda reports for a runtime process that ended during an invocation;
    ``how`` in the words of Go's os/exec, as Lambda's: ``exit status 3``,
    ``signal: killed`` (:func:`exit_words`)."""
    return lambda_error(error_type, f"RequestId: {request_id} Error: Runtime exited "
                                    f"with error: {how}", request_id)


def exit_words(status: int) -> str:
    """A wait status as Go's os/exec words it (``exit status 3``, ``signal: segmentation
    fault``): the words of Lambda's ``Runtime exited with error``."""
    if os.WIFSIGNALED(status):
        return f"signal: {signal.strsignal(os.WTERMSIG(status)) or os.WTERMSIG(status)}".lower()
    return f"exit status {os.WEXITSTATUS(status)}"


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


def own_namespace(root: str, spec: FunctionSpec, name: str) -> None:
    """Give the code of ``spec``'s function, its entry module imported as ``name``, its
    own helper modules (``own_modules``): those of its folder, or for a single-file
    function those beside it in ``functions/`` -- each function its own copy, as each
    Lambda function has its own task root."""
    own_modules.register(spec.name, os.path.join(root, spec.own_folder or spec.search_path),
                         name)


def load_module(root: str, spec: FunctionSpec, name: str | None = None) -> ModuleType:
    """Import a function's module under ``name`` (default :func:`module_name`)."""
    search = os.path.join(root, spec.search_path)
    if search not in sys.path:
        sys.path.insert(0, search)
    path = os.path.join(root, spec.module_file)
    module_name_ = name or module_name(spec)
    own_namespace(root, spec, module_name_)
    import_spec = importlib.util.spec_from_file_location(module_name_, path)
    if import_spec is None or import_spec.loader is None:
        raise init_failure(IMPORT_MODULE_ERROR, f"Unable to import module "
                                                f"'{handler_module(spec)}': cannot load {path}")
    module = importlib.util.module_from_spec(import_spec)
    sys.modules[module_name_] = module
    try:
        import_spec.loader.exec_module(module)
    except USER_FAILURES as exc:  # noqa: BLE001 - reported as Lambda reports an init error
        del sys.modules[module_name_]
        raise import_failure(spec, exc) from None
    return module


class Invocable(Protocol):
    """A loaded function: shared (:class:`LoadedFunction`) or in its own private heap
    (``private_heaps.DomainFunction``)."""

    spec: FunctionSpec

    def invoke(self, event: Any, timeout_seconds: float | None = None) -> Any: ...


PrivateLoader = Callable[[str, FunctionSpec, bool], Invocable]


class Sandboxed(Protocol):
    """The functions that run in their own warm sandboxed processes (``--isolation
    process``; ``sandbox.host.Sandboxes``)."""

    def holds(self, function: str) -> bool: ...

    def names(self) -> frozenset[str]:
        """The functions that have a sandbox."""
        ...

    def call(self, function: str, request: dict[str, Any], limit: float | None
             ) -> dict[str, Any]: ...


class NoSandboxes:
    """Process isolation where no function is isolated (faastlane.json marks every one
    trusted): all run as threads, none is forked per call."""

    def holds(self, function: str) -> bool:
        return False

    def names(self) -> frozenset[str]:
        return frozenset()

    def call(self, function: str, request: dict[str, Any], limit: float | None
             ) -> dict[str, Any]:
        raise StatesError(RUNTIME, f"function '{function}' has no sandbox")


class FunctionRegistry:
    """Every function of a workflow, pre-imported when the Orchestrator loads.

    ``private_loader(root, spec, keep_escapes)`` loads a function into its own private
    heap (``isolation.private_heaps.load``, handed in by the Orchestrator: only mpk mode
    on the cpython-mpk runtime needs it). ``sandboxes``: the functions that run in their
    own processes (never imported here), for every execution that uses this registry.
    """

    def __init__(self, root: str, specs: dict[str, FunctionSpec],
                 private_loader: PrivateLoader | None = None,
                 sandboxes: Sandboxed | None = None) -> None:
        self.root = root
        self.specs = specs
        self.sandboxes = sandboxes
        self._private_loader = private_loader
        self._loaded: dict[str, Invocable] = {}
        self._private: dict[str, Invocable] = {}

    def preload(self, private: bool = False, kept_escapes: tuple[str, ...] = ()) -> None:
        """Run every function's module-level set-up once per container, as on Lambda;
        ``private``: each inside its own private heap (``--isolation mpk``). Functions
        in sandboxes import there, never here."""
        for name in self.specs:
            if self.sandboxes is None or not self.sandboxes.holds(name):
                flight.running("", name)
                try:
                    self.get(name, private, name in kept_escapes)
                finally:
                    flight.finished()

    def spec(self, name: str) -> FunctionSpec:
        spec = self.specs.get(name)
        if spec is None:
            raise StatesError("Lambda.ResourceNotFoundException", f"Function not found: {name}")
        return spec

    def _load(self, spec: FunctionSpec) -> LoadedFunction:
        """Import a function's module in the shared heap; its module set-up sees its own
        environment (``lambda_env``)."""
        environment = environment_of(self.root, spec)
        current = lambda_env.CURRENT
        outer = current.view
        current.view = environment
        try:
            module = load_module(self.root, spec)
        finally:
            current.view = outer
        return LoadedFunction(spec, module, environment)

    def get(self, name: str, private: bool = False, keep_escapes: bool = False) -> Invocable:
        """The function, imported on first use: shared, or in its private heap."""
        if private:
            found = self._private.get(name)
            if found is None:
                loader = self._private_loader
                if loader is None:
                    raise StatesError(RUNTIME, "isolation mpk: this Orchestrator was made "
                                               "without a private-heap loader")
                # A failed import keeps its private heap and key: not tried again.
                found = self._private[name] = initialized(
                    self.spec(name), lambda: loader(self.root, self.spec(name), keep_escapes),
                    retry=False)
            return found
        loaded = self._loaded.get(name)
        if loaded is None:
            spec = self.spec(name)
            loaded = self._loaded[name] = initialized(spec, lambda: self._load(spec))
        return loaded


def initialized(spec: FunctionSpec, load: Callable[[], Invocable],
                retry: bool = True) -> Invocable:
    """The loaded function; one whose init failed fails the states that call it
    (:class:`FailedInit`), trying the init again at each call where ``retry``."""
    try:
        return load()
    except InitError as error:
        return FailedInit(spec, error, load if retry else None)
