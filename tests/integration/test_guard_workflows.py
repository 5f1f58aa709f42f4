"""Issue 17's Python-level classes through whole workflows: ``faastlane run``.

A thief function tries to read a victim function's data without touching its memory:
by planting code in shared modules that the victim then runs (class 1), by walking
frames down to the invoker's locals (class 3), from the module body of a helper module
it imports (class 2). Under ``--isolation mpk`` each attempt ends the workflow with
``Faastlane.IsolationError`` naming the thief; under ``--isolation none`` (the control)
the same workflow hands the thief the victim's secret, so the test can fail. The guard
is slot bookkeeping, the same with or without protection keys.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .apps import chain, faastlane, task, write_app

pytestmark = pytest.mark.mpk

SECRET = "victim-secret-4711"


@pytest.fixture(autouse=True, scope="module")
def _faastlane_runtime() -> None:
    pytest.importorskip("_faastlane", reason="needs the cpython-mpk runtime (make test)")


def run(app: Path, isolation: str) -> tuple[int, str, str]:
    done = faastlane("run", str(app), "--input", "{}", "--isolation", isolation)
    return done.code, done.stdout, done.stderr


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


def test_planting_code_in_a_shared_module_is_refused(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", sequence("Thief", "Victim", "Thief"),
                    {"Thief": PLANT, "Victim": VICTIM}, settings("Thief"))
    code, out, err = run(app, "none")  # the control: the victim's data is stolen
    assert code == 0, err
    assert SECRET in json.loads(out)["r2"]["stolen"]
    code, out, err = run(app, "mpk")
    assert code != 0, out
    assert "Faastlane.IsolationError" in out + err, out + err
    assert "function 'Thief' may not change 'dumps' in the namespace of module 'json'" \
        in out + err, out + err
    assert SECRET not in out + err


def test_frames_below_a_function_are_out_of_its_reach(tmp_path: Path) -> None:
    """The Victim's result is in the state data the invoker holds while the Thief runs
    on an input of its own that does not carry it."""
    workflow = chain(("Victim", task("Source", ResultPath="$.victim")),
                     ("Thief", task("Thief", Parameters={"x": 1}, ResultPath="$.thief")))
    source = f"""
        def handler(event, context):
            return {{"data": {SECRET!r}}}
        """
    app = write_app(tmp_path / "app", workflow, {"Source": source, "Thief": FRAMES},
                    settings("Thief"))
    code, out, err = run(app, "none")  # the control: the invoker's frames show it
    assert code == 0, err
    assert json.loads(out)["thief"]["stolen"], out
    code, out, err = run(app, "mpk")
    assert code == 0, err
    assert json.loads(out)["thief"]["stolen"] == ["refused: IsolationViolation"], out


def test_a_helper_modules_body_runs_sealed_in_its_function(tmp_path: Path) -> None:
    """Class 2: a helper module next to the function (functions/_helper.py) is the
    function's code: its body runs sealed, inside the function's domain, with the
    function's rights only -- not on the Orchestrator's thread."""
    helper = """
        import _faastlane
        try:
            DOMAINS = len(_faastlane.live_domains())
        except Exception as exc:
            DOMAINS = f"{type(exc).__name__}: {exc}"
        SEALED = _faastlane.sealed()
        """
    user = """
        import _helper

        def handler(event, context):
            return {"domains": _helper.DOMAINS, "sealed": _helper.SEALED is not None}
        """
    app = write_app(tmp_path / "app", sequence("Victim", "User"),
                    {"Victim": VICTIM, "User": user}, settings("User"))
    (app / "functions" / "_helper.py").write_text(__import__("textwrap").dedent(helper))
    code, out, err = run(app, "mpk")
    assert code == 0, err
    result = json.loads(out)["r1"]
    assert result["sealed"] is True, result
    assert str(result["domains"]).startswith("SealedError: cannot list the live domains")
