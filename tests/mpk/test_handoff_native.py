"""The hand-off domain's bookkeeping, natively (no keys: the same gates and heaps, no
PKRU writes). Under real keys: test_private_heaps_qemu.py's ``handoff`` probes."""

from __future__ import annotations

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
