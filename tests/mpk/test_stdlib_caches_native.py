"""The standard library's caches, per function (``mpk_caches.c``), natively.

Two domains with private heaps stand for two functions; each calls a shared
``lru_cache``, ``re.compile`` and ``struct`` and reads ``linecache``. Once
``caches_per_function`` and ``PerFunctionDict`` are installed, each gets entries made in
its own slot (so does a thread it starts), the shared caches stay as the code outside left
them, and function code finds no way to the shared dict behind a ``PerFunctionDict``. The
control runs the same calls without the redirect: the second domain is handed the first
one's private object (under keys, a fault; here its slot shows it). Placement is the same
with or without keys, so this runs on any host; under keys:
tests/integration/test_isolation_mpk_qemu.py.
"""

from __future__ import annotations

import json
import subprocess
import textwrap

SCRIPT = """
import functools, gc, json, linecache, os, re, struct, sys, threading, _faastlane as f
REDIRECT = sys.argv[1] == "redirect"

@functools.lru_cache(maxsize=8)
def made(key):
    return [key]

@functools.lru_cache(maxsize=None)
def unbounded(key):
    return {"key": key}

made("outside")  # a shared entry, made before any function ran
if REDIRECT:
    f.caches_per_function(functools._lru_cache_wrapper, sys.modules["_struct"])
    re._cache2 = f.PerFunctionDict(re._cache2)
    re._cache = f.PerFunctionDict(re._cache)
    linecache.cache = f.PerFunctionDict(linecache.cache)
shared_cache2 = dict(re._cache2)
a, b = f.Domain(private_heap=True), f.Domain(private_heap=True)
slot = lambda obj: f.slot_of(id(obj))
LINES = os.path.join(os.path.dirname(os.__file__), "colorsys.py")

def function(domain, label):
    got = {"made": made("shared-key"), "again": made("shared-key"),
           "unbounded": unbounded("k"), "outside": made("outside"),
           "pattern": re.compile(r"(x+)(y+)z"), "line": linecache.getline(LINES, 1)}
    # A thread the function starts is born in its domain: the same copies.
    from_thread = []
    thread = threading.Thread(target=lambda: from_thread.append(made("shared-key")))
    thread.start()
    thread.join()
    got["thread"] = from_thread[0]
    report({label: {"slots": {k: slot(v) == domain.slot for k, v in got.items()},
            "same_again": got["made"] is got["again"] is got["thread"],
            "info": list(made.cache_info()),
            "unpacked": list(struct.unpack("<3H5x", struct.pack("<3H5x", 1, 2, 3))),
            "calcsize": struct.calcsize("<3H5x"),
            "referents": len(gc.get_referents(re._cache2)),
            "ids": [id(got["made"]), id(got["pattern"])]}})

def report(part):
    print(json.dumps(part), flush=True)  # results made inside stay inside: printed

a.run_sealed(function, a, "a")
b.run_sealed(function, b, "b")
a.run_sealed(function, a, "a_again")
report({"outside": {"info": list(made.cache_info()),
                    "cache2_unchanged": dict(re._cache2) == shared_cache2,
                    "outside_entry_shared": slot(made("outside")) is None}})
# A PerFunctionDict behaves as the dict it stands for.
def dict_ops():
    d = f.PerFunctionDict({"k": 1})
    d["n"] = 2
    return {"len": len(d), "in": "n" in d, "get": d.get("k"), "pop": d.pop("n"),
            "keys": sorted(d), "eq": d == {"k": 1}, "setdefault": d.setdefault("s", 3)}
report({"dict_ops": dict_ops()})
a.run_sealed(lambda: report({"dict_ops_inside": dict_ops()}))
os._exit(0)  # a live domain's private objects fault the interpreter's teardown
"""


def run(runtime: str, mode: str) -> dict:
    proc = subprocess.run([runtime, "-c", textwrap.dedent(SCRIPT), mode],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out: dict = {}
    for line in proc.stdout.splitlines():
        out.update(json.loads(line))
    return out


def test_each_function_fills_its_own_copy_of_the_stdlib_caches(runtime: str) -> None:
    out = run(runtime, "redirect")
    # Every cached object a function got was made in its own heap, even for a key the
    # code outside had cached (an lru_cache's copy starts empty).
    mine = dict.fromkeys(("made", "again", "unbounded", "outside", "pattern", "line",
                          "thread"), True)
    for name in ("a", "b", "a_again"):
        assert out[name]["slots"] == mine, (name, out[name])
        assert out[name]["same_again"]  # cached: the second call hit
        assert out[name]["unpacked"] == [1, 2, 3] and out[name]["calcsize"] == 11
        assert out[name]["referents"] == 0  # no way to the shared dict behind it
    assert out["a"]["ids"] != out["b"]["ids"]  # b was never handed a's objects
    assert out["a_again"]["ids"] == out["a"]["ids"]  # warm across invocations
    # cache_info is the caller's own: hits, misses, maxsize, size.
    assert out["a"]["info"] == [2, 2, 8, 2] and out["a_again"]["info"] == [6, 2, 8, 2]
    # The shared caches are as the code outside left them.
    assert out["outside"] == {"info": [0, 1, 8, 1], "cache2_unchanged": True,
                              "outside_entry_shared": True}
    expected_ops = {"len": 2, "in": True, "get": 1, "pop": 2, "keys": ["k"], "eq": True,
                    "setdefault": 3}
    assert out["dict_ops"] == out["dict_ops_inside"] == expected_ops


def test_control_without_the_redirect_a_function_gets_anothers_entry(runtime: str
                                                                     ) -> None:
    out = run(runtime, "shared")
    # b was handed the list and the pattern a made (in a's slot): under keys, a fault.
    assert out["a"]["slots"]["made"] and out["a"]["slots"]["pattern"]
    assert not out["b"]["slots"]["made"] and not out["b"]["slots"]["pattern"]
    assert out["b"]["ids"] == out["a"]["ids"]
