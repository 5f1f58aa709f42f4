"""The hand-off domain's bookkeeping, natively (no keys: the same gates and heaps, no
PKRU writes). Under real keys: test_private_heaps_qemu.py's ``handoff`` probes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_seal_native import run

BODY = """
h = f.Domain(private_heap=True)
attempt("heapless", lambda: f.set_handoff(other))
f.set_handoff(h)
attempt("twice", lambda: f.set_handoff(f.Domain(private_heap=True)))
attempt("destroy", h.destroy)
with h:
    value = f.deep_copy_json({"s": "in-flight-" + str(10**9), "n": [10**20, 1.5, 7],
                              "t": ("x" + str(1),), "z": [True, None]})
leaves = [value["s"], value["n"][0], value["n"][1], value["t"][0]]
print("moved", all(f.slot_of(id(o)) == h.slot for o in [value, value["n"], *leaves]))
print("tuple", type(value["t"]).__name__, "immortal", f.slot_of(id(value["n"][2])))
facts = []
def function(event, extra):
    facts.extend([f.slot_of(id(event)) == mine.slot,
                  f.slot_of(id(event["s"])) == mine.slot, extra])
    attempt("sealed", lambda: f.set_handoff(h))
    event["s"] = "changed"
mine.run_sealed_on(value, function, 42)
print("copy", facts, value["s"] == "in-flight-" + str(10**9))
attempt("not-json", lambda: mine.run_sealed_on({"x": {1}}, function, 0))
handed_facts = []
def hands_off(event, extra):
    handed_facts.extend([f.hand_off({"seen": event["s"] + "!",
                                     "n": [len(event["s"]) / 2]}),
                         f.hand_off({"not": {1}})])
result, handed = mine.run_sealed_on(value, hands_off, 0)
print("hand_off", handed_facts, result, handed,
      all(f.slot_of(id(o)) == h.slot for o in (handed, handed["seen"], handed["n"][0])))
print("nothing", mine.run_sealed_on(value, lambda event: None), f.hand_off({}))
"""


def test_handoff_domain_is_set_once_kept_and_copied_across_the_entry_gate(
        runtime: str) -> None:
    out = run(BODY, runtime)
    assert "heapless ERROR DomainError the hand-off domain must be alive and have a " \
           "private heap" in out, out
    assert "twice ERROR DomainLimitError" in out and "set once per process" in out, out
    assert "destroy ERROR DomainLimitError" in out and "as long as the process" in out
    assert "moved True" in out and "tuple list immortal None" in out, out
    assert "copy [True, True, 42] True" in out, out
    assert "sealed SEALED" in out, out
    assert "not-json ERROR TypeError not a plain JSON value: set" in out, out
    # What the call hands off comes back beside its result, moved into the hand-off
    # heap; a value that is not plain JSON is not handed off (the last good one stays).
    assert f"hand_off [True, False] None {{'seen': 'in-flight-{10**9}!', 'n': [10.0]}} " \
           "True" in out, out
    assert "nothing (None, None) False" in out, out


LEAF_TWINS = """
h = f.Domain(private_heap=True)
f.set_handoff(h)
with h:
    value = f.deep_copy_json({"name": "leaf-" + str(10**9), "x": 2.5, "big": "b" * 5000})
    many = f.deep_copy_json(["m" + str(i) for i in range(6000)])
def held(container, key):  # beyond the container's and getrefcount's own reference
    return sys.getrefcount(container[key]) - 2
def held_all(container):
    return sum(held(container, i) for i in range(len(container)))
print("before", held(value, "name"), held(value, "x"))
kept, seen = [], []
def function(event):
    kept.append(event)
    seen.append([event["name"] == "leaf-" + str(10**9), f.slot_of(id(event["name"])),
                 id(event["name"]), id(event["x"]), id(event["big"])])
    event["name"] = "changed"   # its own copy: the next invocation gets the original
mine.run_sealed_on(value, function)
mine.run_sealed_on(value, function)
(ok1, slot1, *ids1), (ok2, slot2, *ids2) = seen
print("twins", ok1, ok2, slot1 == slot2 == mine.slot,
      [a == b for a, b in zip(ids1, ids2)], held(value, "name"), held(value, "x"))
copied = []
mine.run_sealed_on(many, lambda event: copied.append(event == many))
in_table = held_all(many)
print("bounded", copied, 0 < in_table <= 4096, held(value, "name"))
# The slot's next domain: the earlier twins went with the earlier heap.
slot, kept, seen = mine.slot, [], []
mine.destroy()
again = next(d for d in iter(lambda: f.Domain(private_heap=True), None) if d.slot == slot)
print("destroyed", held_all(many) == in_table)
again.run_sealed_on(value, function)
print("next", seen[0][:2] == [True, slot], held_all(many), held(value, "name"))
"""


def test_a_domain_copies_each_handoff_leaf_once_and_reuses_it(runtime: str) -> None:
    """A function's input leaves live in the hand-off heap: each is copied into the
    domain's heap once and the copy reused by its later invocations (a long string is
    copied every time); containers are always new. The table holding them is bounded,
    and the slot's next domain releases what the earlier one held without reading its
    (scrubbed) copies."""
    out = run(LEAF_TWINS, runtime)
    assert "before 0 0" in out, out
    # name and x: one copy, reused; big (5,000 characters): a new copy each time.
    assert "twins True True True [True, True, False] 1 1" in out, out
    # Emptied when half full (name's entry went with the first 4,096).
    assert "bounded [True] True 0" in out, out
    # Released when the slot's next domain first copies in, not at destroy.
    assert "destroyed True" in out and "next True 0 1" in out, out


SEALED_CALL_ARGUMENTS = """
h = f.Domain(private_heap=True)
f.set_handoff(h)
with h:  # what the engine computes while it handles data in flight
    timeout, name, box = float(10**9) + 0.5, "n-" + str(10**9), ["in", "flight"]
theirs = f.Domain(private_heap=True)
with theirs:
    secret = "s-" + str(10**9)
print("where", [f.slot_of(id(o)) == h.slot for o in (timeout, name, box)])
got = []
def function(t, n):
    got.extend([t == float(10**9) + 0.5, n == "n-" + str(10**9),
                f.slot_of(id(t)) == f.slot_of(id(n)) == mine.slot])
mine.run_sealed(function, timeout, name)
print("copied", got)
attempt("container", lambda: mine.run_sealed(len, box))
attempt("theirs", lambda: mine.run_sealed(len, secret))
attempt("beside-input", lambda: mine.run_sealed_on({}, lambda event, b: None, box))
"""


def test_a_sealed_calls_arguments_are_checked_at_the_gate(runtime: str) -> None:
    """The arguments beside a sealed call's input cross the entry gate too: a number
    or string the engine made in the hand-off heap (a timeout) is copied into the
    domain; a container in flight or an object of another domain's heap is refused
    before anything runs -- not handed to code that would fault on it."""
    out = run(SEALED_CALL_ARGUMENTS, runtime)
    assert "where [True, True, True]" in out, out
    assert "copied [True, True, True]" in out, out
    refusal = "ERROR TypeError argument 1 of a sealed call ({}) lives in another " \
              "domain's private heap"
    assert "container " + refusal.format("list") in out, out
    assert "theirs " + refusal.format("str") in out, out
    assert "beside-input " + refusal.format("list") in out, out


# Runs a composed mpk action in-process and reports where its state data lives.
WHERE_DATA_LIVES = """
import json, sys, _faastlane
sys.path.insert(0, sys.argv[1])
import orchestrator
from faastlane_runtime.isolation import handoff
result = orchestrator.ORCHESTRATOR.execute(json.loads(sys.argv[2]))
slot = handoff._domain.slot if handoff.active() else None
def slots(value):
    yield _faastlane.slot_of(id(value))
    for item in (value.values() if isinstance(value, dict) else
                 value if isinstance(value, list) else ()):
        yield from slots(item)
print(json.dumps({"status": result.status, "handoff": slot,
                  "output": sorted(set(map(str, slots(result.output)))),
                  "output_value": result.output}))
"""

APP_WORKFLOW = {"StartAt": "Produce", "States": {
    "Produce": {"Type": "Task", "Resource": "Produce", "ResultPath": "$.made",
                "Next": "Shape"},
    "Shape": {"Type": "Pass", "Parameters": {"text.$": "$.made.text", "n.$": "$.n"},
              "Next": "Consume"},
    "Consume": {"Type": "Task", "Resource": "Consume", "End": True}}}
APP_FUNCTIONS = {
    "Produce": "def handler(event, context):\n"
               "    return {'text': 'secret-' + str(event['n'] * 1000003)}\n",
    "Consume": "def handler(event, context):\n"
               "    return {'seen': event['text'] + '!', 'n': event['n'] + 10**12}\n",
}


def test_a_workflows_data_in_flight_lives_in_the_handoff_heap(
        runtime: str, tmp_path: Path) -> None:
    """Under mpk every container and leaf of an execution's output (made by the runtime
    from a function's promoted result) is in the hand-off domain's heap, not key 0;
    under none (the control) there is no hand-off domain and all of it is shared."""
    app = tmp_path / "app"
    (app / "functions").mkdir(parents=True)
    (app / "workflow.json").write_text(json.dumps(APP_WORKFLOW))
    for name, source in APP_FUNCTIONS.items():
        (app / "functions" / f"{name}.py").write_text(source)
    seen = {}
    for isolation in ("mpk", "none"):
        action = tmp_path / isolation
        composed = subprocess.run([sys.executable, "-m", "faastlane", "compose", str(app),
                                   "-o", str(action), "--isolation", isolation],
                                  capture_output=True, text=True, timeout=120)
        assert composed.returncode == 0, composed.stderr
        done = subprocess.run([runtime, "-c", WHERE_DATA_LIVES, str(action), '{"n": 7}'],
                              capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, FAASTLANE_MPK="off"))
        assert done.returncode == 0, done.stderr
        seen[isolation] = json.loads(done.stdout.splitlines()[-1])
    mpk, none = seen["mpk"], seen["none"]
    expected = {"seen": f"secret-{7 * 1000003}!", "n": 7 + 10**12}
    assert mpk["status"] == none["status"] == "SUCCEEDED", seen
    assert mpk["output_value"] == none["output_value"] == expected
    assert mpk["handoff"] is not None and mpk["output"] == [str(mpk["handoff"])], mpk
    assert none["handoff"] is None and none["output"] == ["None"], none
