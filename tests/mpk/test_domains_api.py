"""``faastlane.runtime.isolation.domains``: the Python API the Orchestrator calls.

Snippets run in fresh runtime processes (the package is found through PYTHONPATH, as
it is inside a composed action), with and without ``_faastlane`` importable.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest
from probe_runs import REPO
from test_domains_native import host_has_pku

from faastlane.runtime.isolation import domains

# A None entry in sys.modules makes ``import _faastlane`` raise ImportError.
BLOCK_NATIVE = "import sys; sys.modules['_faastlane'] = None\n"


def run_snippet(
    runtime: str, code: str, block_native: bool = False, **env: str
) -> dict[str, object]:
    """Run ``code`` (which prints one JSON object) in the runtime; return the object."""
    code = (BLOCK_NATIVE if block_native else "") + textwrap.dedent(code)
    # The package first; keep a PYTHONPATH that provides _faastlane (see conftest).
    path = os.pathsep.join(filter(None, [str(REPO / "composer"), os.environ.get("PYTHONPATH")]))
    environ = dict(os.environ, PYTHONPATH=path, **env)
    proc = subprocess.run(
        [runtime, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_without_native_module_reports_why_and_refuses_domains(runtime: str) -> None:
    out = run_snippet(
        runtime,
        block_native=True,
        code="""
        import json
        from faastlane.runtime.isolation import domains as d
        s = d.status()
        try:
            d.keys_enabled("on"); on = None
        except d.IsolationUnavailableError as exc:
            on = str(exc)
        try:
            d.ProtectionDomain("f"); create = None
        except d.IsolationUnavailableError as exc:
            create = type(exc).__name__
        print(json.dumps({"available": s.available, "reason": s.reason,
                          "implementation": s.implementation, "auto": d.keys_enabled("auto"),
                          "on": on, "create": create, "current": d.current_domain(),
                          "counters": d.gate_counters(),
                          "gate_error": issubclass(d.GateError, d.DomainError)}))
        """,
    )
    assert out["available"] is False and out["implementation"] == "missing"
    assert "_faastlane module is not built into this interpreter" in str(out["reason"])
    assert out["auto"] is False
    assert "FAASTLANE_MPK=on" in str(out["on"]) and "_faastlane" in str(out["on"])
    assert out["create"] == "IsolationUnavailableError"
    assert out["current"] is None and out["counters"] == {} and out["gate_error"] is True


def test_status_matches_the_native_module_on_the_runtime(runtime: str) -> None:
    out = run_snippet(
        runtime,
        """
        import json, _faastlane
        from faastlane.runtime.isolation import domains as d
        s = d.status()
        print(json.dumps({"api": [s.available, s.reason, s.implementation],
                          "native": [_faastlane.available(), _faastlane.unavailable_reason()]}))
        """,
        FAASTLANE_MPK="auto",  # the host's own detection
    )
    assert out["api"] == [*out["native"], "keys" if host_has_pku() else "no-keys"]  # type: ignore[misc]
    assert out["native"][0] is host_has_pku()  # type: ignore[index]


def test_protection_domain_lifecycle_on_the_runtime(runtime: str) -> None:
    out = run_snippet(
        runtime,
        """
        import json
        from faastlane.runtime.isolation import domains as d
        f = d.ProtectionDomain("resize")
        g = d.ProtectionDomain("classify")
        before = d.current_domain()
        with f.entered() as inside:
            current = d.current_domain()
            try:
                with g.entered():
                    nested = None
            except d.GateError:
                nested = "GateError"
        after = d.current_domain()
        try:
            with f.entered():
                raise KeyError("boom")
        except KeyError:
            pass
        left_after_error = d.current_domain() is None
        f.destroy()
        try:
            with f.entered():
                pass
            reentered = None
        except d.GateError:
            reentered = "GateError"
        print(json.dumps({"before": before, "same": current is f and inside is f,
                          "nested": nested, "after": after, "left": left_after_error,
                          "reentered": reentered, "alive": f.alive, "g_alive": g.alive,
                          "repr": repr(f), "counters": d.gate_counters()}))
        """,
    )
    assert out["before"] is None and out["after"] is None
    assert out["same"] is True
    assert out["nested"] == "GateError"
    assert out["left"] is True
    assert out["reentered"] == "GateError"
    assert (out["alive"], out["g_alive"]) == (False, True)
    assert out["repr"] == "<ProtectionDomain 'resize' destroyed>"
    counters = out["counters"]
    assert isinstance(counters, dict)
    assert (counters["created"], counters["destroyed"], counters["live"]) == (2, 1, 1)
    assert counters["enters"] == counters["exits"] == 2


def test_keys_off_setting_is_honoured_by_module_and_api(runtime: str) -> None:
    out = run_snippet(
        runtime,
        """
        import json
        from faastlane.runtime.isolation import domains as d
        print(json.dumps({"enabled": d.keys_enabled(), "status": d.status().reason}))
        """,
        FAASTLANE_MPK="off",
    )
    assert out == {"enabled": False, "status": "protection keys disabled by FAASTLANE_MPK=off"}


@pytest.mark.parametrize(
    ("setting", "expected"),
    [("", "auto"), ("auto", "auto"), ("ON", "on"), (" off ", "off")],
)
def test_requested_mode_reads_the_setting(setting: str, expected: str) -> None:
    assert domains.requested_mode({"FAASTLANE_MPK": setting}) == expected


def test_requested_mode_rejects_unknown_values() -> None:
    with pytest.raises(ValueError, match="FAASTLANE_MPK='yes'"):
        domains.requested_mode({"FAASTLANE_MPK": "yes"})
    assert domains.requested_mode({}) == "auto"


def test_keys_on_fails_closed_where_keys_are_missing(runtime: str) -> None:
    out = run_snippet(
        runtime,
        """
        import json
        from faastlane.runtime.isolation import domains as d
        try:
            print(json.dumps({"enabled": d.keys_enabled("on")}))
        except d.IsolationUnavailableError as exc:
            print(json.dumps({"error": str(exc)}))
        """,
        FAASTLANE_MPK="auto",  # the host's own detection
    )
    if host_has_pku():
        assert out == {"enabled": True}
    else:
        assert "required (FAASTLANE_MPK=on) but unavailable" in str(out["error"])
        assert "pku" in str(out["error"])


def test_copy_json_copies_containers_into_the_callers_heap_and_shares_leaves(
        runtime: str) -> None:
    """A function's private input copy (``_faastlane.copy_json``)."""
    got = run_snippet(runtime, """
        import json, threading, _faastlane
        text, number = "x" * 50, 10 ** 30
        value = {"a": [text, number, 1.5, True, None, {"b": []}], "n": 1}
        copy = _faastlane.copy_json(value)
        out = {"equal": copy == value,
               "containers_new": copy is not value and copy["a"] is not value["a"]
                                 and copy["a"][5]["b"] is not value["a"][5]["b"],
               "leaves_shared": copy["a"][0] is text and copy["a"][1] is number}
        for bad in ({"t": (1, 2)}, [set()], {(1,): 2}):
            try:
                _faastlane.copy_json(bad)
                out.setdefault("refused", []).append(None)
            except TypeError as exc:
                out.setdefault("refused", []).append(str(exc))
        deep = []
        for _ in range(100_000):
            deep = [deep]
        try:
            _faastlane.copy_json(deep)
        except RecursionError:
            out["deep"] = "RecursionError"
        domain = _faastlane.Domain(private_heap=True)
        def inside():
            with domain:
                c = _faastlane.copy_json(value)
                out["inside"] = [_faastlane.slot_of(id(x)) == domain.slot
                                 for x in (c, c["a"], c["a"][5])]
                out["leaf_outside"] = _faastlane.slot_of(id(c["a"][0]))
        thread = threading.Thread(target=inside)
        thread.start()
        thread.join()
        print(json.dumps(out))
        """)
    assert got["equal"] and got["containers_new"] and got["leaves_shared"]
    assert got["refused"] == ["not a JSON value: tuple", "not a JSON value: set",
                              "not a JSON key: tuple"]
    assert got["deep"] == "RecursionError"
    assert got["inside"] == [True, True, True] and got["leaf_outside"] is None


def test_promote_json_copies_private_values_into_the_shared_heap(runtime: str) -> None:
    """A function's result promoted at its exit gate (``_faastlane.promote_json`` under
    ``call_shared``): equal to the JSON round trip, nothing of it left in the slot,
    shared leaves kept; anything but a plain JSON value refused (the runtime then
    falls back to json)."""
    got = run_snippet(runtime, """
        import decimal, json, threading, _faastlane
        shared_text = "shared" * 10
        domain = _faastlane.Domain(private_heap=True)
        out = {}

        def walk(value):
            yield value
            if isinstance(value, dict):
                for k, v in value.items():
                    yield k
                    yield from walk(v)
            elif isinstance(value, list):
                for v in value:
                    yield from walk(v)

        def inside():
            with domain:
                value = {"text": "private-" + str(12345), "big": int("1" * 30) + 7,
                         "float": float("7.5") * 3, "shared": shared_text, "flags": (True, None),
                         "k" + str(7): [{"n": -3}, [], "x" * 300]}
                out["private"] = [_faastlane.slot_of(id(x)) == domain.slot
                                  for x in (value["text"], value["big"], value["float"])]
                copy = _faastlane.call_shared(_faastlane.promote_json, value)
                out["equal"] = copy == json.loads(json.dumps(value))
                out["in_slot"] = sum(_faastlane.slot_of(id(x)) is not None
                                     for x in walk(copy))
                out["shared_kept"] = copy["shared"] is shared_text
                out["tuple_as_list"] = copy["flags"] == [True, None]
                refused = []
                for bad in ({1: 2}, [decimal.Decimal("1.5")], {"s": {1}},
                            [type("S", (str,), {})("sub")]):
                    try:
                        _faastlane.promote_json(bad)
                        refused.append(None)
                    except TypeError as exc:
                        refused.append(str(exc))
                out["refused"] = refused
                cycle = []
                cycle.append(cycle)
                try:
                    _faastlane.promote_json(cycle)
                except RecursionError:
                    out["cycle"] = "RecursionError"
        thread = threading.Thread(target=inside)
        thread.start()
        thread.join()
        print(json.dumps(out))
        """)
    assert got["private"] == [True, True, True]
    assert got["equal"] and got["in_slot"] == 0
    assert got["shared_kept"] and got["tuple_as_list"]
    assert got["refused"] == ["not a str key: int", "not a plain JSON value: decimal.Decimal",
                              "not a plain JSON value: set", "not a plain JSON value: S"]
    assert got["cycle"] == "RecursionError"
