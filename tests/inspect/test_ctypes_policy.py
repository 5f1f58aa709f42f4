"""ctypes in ``mpk`` mode, natively: libraries may load it outside functions, function
code may not use it at all.

cpython-mpk's patch 0009 makes every foreign call and every memory access through a
ctypes object raise an audit event (stock CPython audits neither a call through a
prototype made from an integer nor a read through ``c_char_p(address).value``), and
``activate(libraries_ffi=True)`` refuses every ``ctypes.*`` event raised by function
code.  Each case runs in a fresh child (hooks are permanent), with a control.
"""

from __future__ import annotations

import pytest
from test_hardening import activated, child

# Every test here runs cpython-mpk (patch 0009); tier: tests/conftest.py.
pytestmark = pytest.mark.mpk

# Each: a ctypes path stock CPython does not audit, as one expression over `ctypes`,
# `libc_getpid` (the address of libc's getpid) and `secret` (a bytes object).
UNAUDITED_PATHS = {
    "call_from_address": "ctypes.CFUNCTYPE(ctypes.c_int)(libc_getpid)() == os.getpid()",
    "memmove": "ctypes.memmove(target, source, 4) and bytes(target.raw[:4])",
    "char_p_value": "ctypes.c_char_p(id(secret) + 32).value",
    "union_pointer": "punned(id(secret) + 32)",
    "pointer_index": "ctypes.pointer(ctypes.c_char(b'x'))[0]",
    "contents": "ctypes.pointer(ctypes.c_int(7)).contents.value",
    "memoryview": "bytes(memoryview(target))[:4]",
    "reduce": "target.__reduce__()[1][1][1][:4]",
    "resize": "ctypes.resize(target, 64) or ctypes.sizeof(target)",
    "refcount": "__import__('_ctypes').Py_INCREF(secret) is secret",
}
# The event each path raises (patch 0009); the rest raise ctypes.cdata/access.
EVENTS = {"call_from_address": "ctypes.call_function", "memmove": "ctypes.call_function",
          "refcount": "ctypes.refcount"}
SETUP = """
import ctypes, os
libc_getpid = ctypes.cast(ctypes.CDLL(None).getpid, ctypes.c_void_p).value
secret = b"private-data-of-function-A"
target = ctypes.create_string_buffer(16)
source = ctypes.create_string_buffer(b"abcd")
class Pun(ctypes.Union):
    _fields_ = [("address", ctypes.c_void_p),
                ("chars", ctypes.POINTER(ctypes.c_char * 26))]
def punned(address):
    pun = Pun()
    pun.address = address
    return bytes(pun.chars.contents)
"""


def _expression_lines(label: str, expression: str) -> str:
    return f"attempt({label!r}, lambda: {expression})\n"


@pytest.mark.parametrize("path", sorted(UNAUDITED_PATHS))
def test_patch_0009_raises_an_audit_event_on_every_ctypes_path(path: str) -> None:
    """A hook records the events each path raises: a foreign call is
    ctypes.call_function, a memory access ctypes.cdata/access, a reference count
    changed by hand ctypes.refcount."""
    body = SETUP + f"""
events = []
sys.addaudithook(lambda event, args: event.startswith("ctypes.") and events.append(event))
{_expression_lines(path, UNAUDITED_PATHS[path])}
print("events", sorted(set(events)))
"""
    out = child(body, harden=False)
    assert f"{path} DONE" in out, out  # the path works: this is not a refusal
    events = out.split("events ")[1]
    assert EVENTS.get(path, "ctypes.cdata/access") in events, out


def test_function_code_can_use_no_ctypes_path_that_libraries_loaded() -> None:
    body = SETUP + "".join(
        f"with function_scope('thief'):\n    {_expression_lines(path, expression)}"
        f"{_expression_lines('outside-' + path, expression)}"
        for path, expression in sorted(UNAUDITED_PATHS.items())) + """
with function_scope("thief"):
    attempt("import-cached", lambda: __import__("ctypes").__name__)
    attempt("import-new", lambda: __import__("_ctypes_test"))
"""
    out = child(body, refuse_ctypes=True, refuse_ffi_in_functions=True)
    for path in UNAUDITED_PATHS:
        assert f"{path} REFUSED function 'thief': ctypes (ctypes." in out, out
        assert f"outside-{path} DONE" in out, out  # the control: libraries still can
    assert "private-data" not in out.split("outside-char_p_value")[0]
    # Already imported by a library: importing it again is a lookup, and harmless,
    # since nothing in it can be used; a module not loaded yet is refused.
    assert "import-cached DONE ctypes" in out
    assert "import-new REFUSED function 'thief': importing _ctypes_test" in out


def test_libraries_ffi_activation_accepts_ctypes_loaded_before() -> None:
    """The strict policy fails closed when ctypes is loaded (test_hardening.py);
    ``libraries_ffi`` accepts it, refusing it to functions only."""
    out = activated("""
    print("flags", activation.refuse_ffi, activation.libraries_ffi)
    print("outside", kept.value)
    with function_scope("thief"):
        attempt("value", lambda: kept.value)
        attempt("mem", lambda: open("/proc/self/mem", "rb"))
    """, before="import ctypes\nkept = ctypes.c_int(5)\n", libraries_ffi=True)
    assert "flags True True" in out and "outside 5" in out
    assert "value REFUSED IsolationViolation False function 'thief': ctypes " \
        "(ctypes.cdata/access)" in out
    assert "mem REFUSED" in out
