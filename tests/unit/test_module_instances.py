"""Per-function module instances (runtime/isolation/module_instances.py), with the real import
system: a module whose functions make a default on first use, imported through
:class:`InstanceRouter`, in the one ``import`` wrapper (``engine.own_modules``), by two
"functions" (two instance tables)."""

from __future__ import annotations

import builtins
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from faastlane.runtime.engine.own_modules import FunctionImporter
from faastlane.runtime.isolation.module_instances import InstanceRouter, instance_of

LAZY_DEFAULT = '''
"""A library with a default made by its first call, as boto3 makes its session."""
import itertools

DEFAULT = None
MADE = itertools.count()
LIMIT = 3


def setup_default():
    global DEFAULT
    DEFAULT = {"made": next(MADE)}


def get_default():
    if DEFAULT is None:
        setup_default()
    return DEFAULT


def with_keywords(*, scale=LIMIT):
    return scale * 2


class Helper:
    def default(self):
        return get_default()
'''


@pytest.fixture
def lazydefault(tmp_path: Path) -> Iterator[ModuleType]:
    package = tmp_path / "lazydefault"
    package.mkdir()
    (package / "__init__.py").write_text(LAZY_DEFAULT)
    (package / "sub.py").write_text("VALUE = 7\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import lazydefault  # type: ignore[import-not-found]

        yield lazydefault
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("lazydefault", "lazydefault.sub"):
            sys.modules.pop(name, None)


def test_an_instance_makes_its_own_default_and_leaves_the_module_alone(
    lazydefault: ModuleType,
) -> None:
    one = instance_of(lazydefault, {"DEFAULT": None})
    two = instance_of(lazydefault, {"DEFAULT": None})
    assert one.get_default() is one.get_default()  # made once, reused
    assert one.get_default() is not two.get_default()
    assert lazydefault.DEFAULT is None  # the shared module never made one
    assert one.__name__ == "lazydefault" and one.Helper is lazydefault.Helper
    assert one.with_keywords() == 6 and one.with_keywords(scale=1) == 2
    assert one.get_default.__qualname__ == "get_default"
    assert one.get_default.__globals__ is vars(one)
    # A class's methods are the shared module's code and read its globals.
    assert one.Helper().default() is lazydefault.get_default()
    # A submodule imported after the instance was made is found through the module.
    import lazydefault.sub  # type: ignore[import-not-found]

    assert one.sub is lazydefault.sub and one.sub.VALUE == 7


def test_the_importer_gives_each_function_its_instance(lazydefault: ModuleType) -> None:
    tables: dict[str, dict[str, ModuleType]] = {"a": {}, "b": {}}
    running: list[str | None] = [None]

    def instances() -> dict[str, ModuleType] | None:
        return None if running[0] is None else tables[running[0]]

    importer = FunctionImporter(builtins.__import__)
    importer.after = InstanceRouter(instances, {"lazydefault": {"DEFAULT": None}})

    def import_(name: str, fromlist: tuple[str, ...] = ()) -> ModuleType:
        return importer(name, {}, {}, fromlist, 0)

    running[0] = "a"
    a = import_("lazydefault")
    assert a is not lazydefault and import_("lazydefault") is a
    assert import_("lazydefault", ("get_default",)) is a  # from lazydefault import ...
    assert import_("lazydefault.sub") is a  # `import lazydefault.sub` binds the package
    assert import_("lazydefault.sub", ("VALUE",)) is sys.modules["lazydefault.sub"]
    running[0] = "b"
    b = import_("lazydefault")
    assert b is not a and b.get_default() is not a.get_default()
    running[0] = None  # no function on this thread: the module itself
    assert import_("lazydefault") is lazydefault
    assert import_("json") is sys.modules["json"]
    assert tables["a"] == {"lazydefault": a} and tables["b"] == {"lazydefault": b}
