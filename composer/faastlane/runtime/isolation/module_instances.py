"""Per-function instances of modules whose globals hold a default made on first use.

``boto3.client()`` makes, on its first call, the module's default session --
credentials, loaders, service models, event hooks -- and stores it in the module global
``DEFAULT_SESSION``; every later client reuses it and writes into it (the last region
used, user-agent features). Shared by every function, that session would end up
holding each function's private objects: an escape, and a protection-key fault for the
next function that makes a client.

So under ``--isolation mpk`` each function that imports such a module gets its own
instance of it, made in its heap the first time it imports it: a new module object with
the same classes and constants, whose plain functions are re-bound to the instance's own
globals and whose lazily made defaults start unset. The default session a function's
``boto3.client()`` makes is then private, reused by its next invocation (the warm
pattern), and never seen by another function. The code and every submodule
(``boto3.session``, botocore) stay shared: they hold no per-caller state at module level
that is not kept per function (stdlib_caches, library_caches).

Routing is by ``import`` statement: inside a function's domain, ``import boto3`` and
``from boto3 import client`` give the function's instance (``builtins.__import__`` is
wrapped, once, by ``engine.own_modules``: ~0.2 us more per executed import statement). Known limit,
documented: ``importlib.import_module("boto3")`` and a shared helper module's own
``import boto3`` give the shared module, whose default session would be shared.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from types import FunctionType, ModuleType
from typing import Any

from ..engine import own_modules

# Module -> its globals holding a default that its functions make on first use, and the
# value each starts from (the module's own initial value).
PER_FUNCTION: dict[str, dict[str, Any]] = {
    "boto3": {"DEFAULT_SESSION": None},
}

def instance_of(module: ModuleType, defaults: Mapping[str, Any]) -> ModuleType:
    """A new instance of ``module``: its namespace copied, its plain functions re-bound to
    the copy, ``defaults`` reset. Made by the caller's allocator (inside a domain: in the
    function's heap)."""
    instance = ModuleType(module.__name__, module.__doc__)
    namespace = instance.__dict__
    shared = module.__dict__
    namespace.update(shared)
    for name, value in shared.items():
        if type(value) is FunctionType and value.__globals__ is shared:
            namespace[name] = _rebound(value, namespace)
    namespace.update(defaults)
    if "__getattr__" not in shared:
        # A submodule imported after the copy (``import boto3.s3.inject`` later on)
        # is an attribute of the shared package only: found there.
        namespace["__getattr__"] = partial(getattr, module)
    return instance


def _rebound(function: FunctionType, namespace: dict[str, Any]) -> FunctionType:
    copy = FunctionType(function.__code__, namespace, function.__name__,
                        function.__defaults__, function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    copy.__doc__ = function.__doc__
    copy.__dict__.update(function.__dict__)
    return copy


class InstanceRouter:
    """What the one ``import`` wrapper (``engine.own_modules.FunctionImporter``) calls
    after an import it did not route to a function's own modules: gives the running
    function its module instances.

    ``instances`` is called on every ``import`` statement of a per-function module and
    returns the running function's table of instances (name -> module, a dict in its
    heap) or None when the thread runs no function -- then, and for every other module,
    the import is the interpreter's own.
    """

    def __init__(self, instances: Callable[[], dict[str, ModuleType] | None],
                 per_function: Mapping[str, Mapping[str, Any]] = PER_FUNCTION) -> None:
        self._instances = instances
        self._per_function = per_function

    def __call__(self, imported: ModuleType, name: str, fromlist: Any,
                 level: int) -> ModuleType:
        if level or (fromlist and "." in name):
            return imported  # a submodule itself: shared
        top = name.partition(".")[0]
        defaults = self._per_function.get(top)
        if defaults is None:
            return imported
        table = self._instances()
        if table is None:
            return imported
        # `import boto3`, `import boto3.session` and `from boto3 import x` all returned
        # the package: that is what the function gets its instance of.
        instance = table.get(top)
        if instance is None:
            instance = table[top] = instance_of(imported, defaults)
        return instance


def install(instances: Callable[[], dict[str, ModuleType] | None]) -> None:
    """Route ``import`` statements through :class:`InstanceRouter` (once), in the one
    wrapper of ``builtins.__import__`` (``engine.own_modules``)."""
    wrapper = own_modules.importer()
    if not isinstance(wrapper.after, InstanceRouter):
        wrapper.after = InstanceRouter(instances)
