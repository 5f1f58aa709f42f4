"""The apps of issue 17's Python-level attacks (test_guard_workflows.py natively,
test_isolation_mpk_qemu.py under emulated keys): a thief function and the data it is
after, each app with the isolation-independent parts only."""

from __future__ import annotations

import textwrap
from pathlib import Path

from .apps import chain, task, write_app

SECRET = "victim-secret-4711"


def sequence(*names: str) -> dict:
    return chain(*((f"{name}{i}", task(name, ResultPath=f"$.r{i}"))
                   for i, name in enumerate(names)))


VICTIM = f"""
    import json

    SECRET = {SECRET!r}

    def handler(event, context):
        return {{"sealed": json.dumps({{"secret": SECRET}})[:4]}}
    """

# Class 1: plant a wrapper of json.dumps that keeps what it is given; read it back later.
PLANT = """
    import json

    def handler(event, context):
        if not hasattr(json, "_kept"):
            json._kept = []
            original = json.dumps
            def dumps(value, *args, **kwargs):
                json._kept.append(value)
                return original(value, *args, **kwargs)
            json.dumps = dumps
            return {"planted": True}
        return {"stolen": repr(json._kept)}
    """

# Class 3: from its own frames down, and every other thread's, search everything their
# locals reach (attributes, containers, partials) for the other function's data.
FRAMES = f"""
    import functools, sys

    def reachable(roots):
        seen, todo = set(), [(root, 0) for root in roots]
        while todo:
            value, depth = todo.pop()
            if id(value) in seen or depth > 8:
                continue
            seen.add(id(value))
            if isinstance(value, str):
                yield value
                continue
            if isinstance(value, dict):
                items = list(value.keys()) + list(value.values())
            elif isinstance(value, (list, tuple, set, frozenset)):
                items = list(value)
            elif isinstance(value, functools.partial):
                items = [value.func, *value.args, *value.keywords.values()]
            else:
                items = list(getattr(value, "__dict__", {{}}).values())
                items += [getattr(value, n, None) for n in
                          getattr(type(value), "__slots__", ()) if isinstance(n, str)]
            todo.extend((item, depth + 1) for item in items)

    def handler(event, context):
        found, frames = [], [sys._getframe(0)]
        try:
            frames += list(sys._current_frames().values())
        except Exception as exc:
            found.append(f"refused: {{type(exc).__name__}}")
        roots = []
        for frame in frames:
            while frame is not None:
                roots.extend(frame.f_locals.values())
                frame = frame.f_back
        found += [text for text in reachable(roots) if {SECRET!r} in text]
        return {{"stolen": found}}
    """


def settings(*untrusted: str) -> dict:
    return {"untrusted": list(untrusted)}


SOURCE = f"""
    def handler(event, context):
        return {{"data": {SECRET!r}}}
    """

HELPER = """
    import _faastlane
    try:
        DOMAINS = len(_faastlane.live_domains())
    except Exception as exc:
        DOMAINS = f"{type(exc).__name__}: {exc}"
    SEALED = _faastlane.sealed()
    """

USER = """
    import _helper

    def handler(event, context):
        return {"domains": _helper.DOMAINS, "sealed": _helper.SEALED is not None}
    """


def planting_app(root: Path) -> Path:
    """Thief plants a wrapper of json.dumps; Victim calls json.dumps on its secret;
    Thief reads what its wrapper kept ($.r2.stolen)."""
    return write_app(root, sequence("Thief", "Victim", "Thief"),
                     {"Thief": PLANT, "Victim": VICTIM}, settings("Thief"))


def frames_app(root: Path) -> Path:
    """Victim's result is in the state data while Thief searches frames ($.thief)."""
    workflow = chain(("Victim", task("Source", ResultPath="$.victim")),
                     ("Thief", task("Thief", Parameters={"x": 1}, ResultPath="$.thief")))
    return write_app(root, workflow, {"Source": SOURCE, "Thief": FRAMES}, settings("Thief"))


def helper_app(root: Path) -> Path:
    """User imports functions/_helper.py, whose body tries the domain API ($.r1)."""
    app = write_app(root, sequence("Victim", "User"), {"Victim": VICTIM, "User": USER},
                    settings("User"))
    (app / "functions" / "_helper.py").write_text(textwrap.dedent(HELPER))
    return app


# The hardening's own state, as a function would loosen it: its policy, the table that
# names function code, the code allowed ctypes, the runtime's record of the function.
LOOSEN = """
    import sys

    def attempt(label, action, out):
        try:
            action()
            out[label] = "done"
        except Exception as exc:
            out[label] = type(exc).__name__

    def handler(event, context):
        import faastlane_runtime.isolation.hardening as hardening
        out = {}
        policy = hardening._installed[0] if hardening._installed else None
        attempt("policy", lambda: setattr(policy, "refuse_ctypes", False), out)
        attempt("verdicts", lambda: policy._verdicts.clear(), out)
        attempt("global", lambda: setattr(hardening, "_in_domain", bool), out)
        cells = [c.cell_contents for c in hardening._current_function.__closure__]
        names = next(c for c in cells if isinstance(c, dict))
        attempt("names", lambda: names.clear(), out)
        slots = next(c for c in cells if isinstance(c, list))
        attempt("slots", lambda: slots.clear(), out)
        trusted = [c.cell_contents for c in hardening._is_trusted_code.__closure__][0]
        attempt("trusted", lambda: trusted.add(id(handler.__code__)), out)
        return out
    """


def loosen_app(root: Path) -> Path:
    """Loosen ($.r0) tries to switch the hardening off through its Python state."""
    return write_app(root, sequence("Loosen"), {"Loosen": LOOSEN}, settings("Loosen"))
