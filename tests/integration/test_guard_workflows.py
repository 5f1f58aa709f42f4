"""Issue 17's Python-level classes through whole workflows: ``faastlane run``.

A thief function tries to read a victim function's data without touching its memory:
by planting code in shared modules that the victim then runs (class 1), by searching
what the frames below it and other threads' frames reach (class 3), from the module
body of a helper module it imports (class 2). Under ``--isolation mpk`` each attempt
ends the workflow with ``Faastlane.IsolationError`` naming the thief, or finds nothing;
under ``--isolation none`` (the control) the same workflow hands the thief the victim's
secret, so the test can fail. The guard is slot bookkeeping, the same with or without
protection keys; the same apps run under emulated keys in test_isolation_mpk_qemu.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .apps import faastlane
from .guard_apps import (
    SECRET,
    cache_redirect_app,
    frames_app,
    helper_app,
    hijack_app,
    lazy_library_app,
    library_app,
    library_peek_app,
    library_site,
    loosen_app,
    planting_app,
    queue_tap_app,
    swap_app,
    walker_app,
)

pytestmark = pytest.mark.mpk


@pytest.fixture(autouse=True, scope="module")
def _faastlane_runtime() -> None:
    pytest.importorskip("_faastlane", reason="needs the cpython-mpk runtime (make test)")


def run(app: Path, isolation: str) -> tuple[int, str, str]:
    site = library_site(app)
    env = dict(os.environ, PYTHONPATH=str(site)) if site.exists() else None
    done = faastlane("run", str(app), "--input", "{}", "--isolation", isolation, env=env)
    return done.code, done.stdout, done.stderr


def test_planting_code_in_a_shared_module_is_refused(tmp_path: Path) -> None:
    app = planting_app(tmp_path / "app")
    code, out, err = run(app, "none")  # the control: the victim's data is stolen
    assert code == 0, err
    assert SECRET in json.loads(out)["r2"]["stolen"]
    code, out, err = run(app, "mpk")
    assert code != 0, out
    assert json.loads(out)["Error"] == "Faastlane.IsolationError", out
    assert "function 'Thief' may not change 'dumps' in the namespace of module 'json'" \
        in out, out + err
    assert SECRET not in out + err


def test_a_shared_cache_cannot_be_redirected_to_where_the_thief_reads(tmp_path: Path
                                                                     ) -> None:
    """Class 1 through a cache: Thief rebinds re's pattern caches to a shared module's
    namespace; under none (the control) Victim's pattern, built from its secret, lands
    there and Thief's next invocation reads it. Under mpk the caches' modules are frozen
    whole (stdlib_caches.py): the rebinding is refused, naming Thief."""
    app = cache_redirect_app(tmp_path / "app")
    code, out, err = run(app, "none")
    assert code == 0, err
    assert SECRET.replace("-", "\\-") in json.loads(out)["r2"]["stolen"], out
    code, out, err = run(app, "mpk")
    assert code != 0, out
    assert json.loads(out)["Error"] == "Faastlane.IsolationError", out
    assert "function 'Thief' may not change '_cache' in the namespace of module 're'" \
        in out, out + err
    assert SECRET not in out + err


def test_frames_below_a_function_are_out_of_its_reach(tmp_path: Path) -> None:
    app = frames_app(tmp_path / "app")
    code, out, err = run(app, "none")  # the control: other threads' frames reach it
    assert code == 0, err
    assert json.loads(out)["thief"]["stolen"], out
    code, out, err = run(app, "mpk")
    assert code == 0, err
    assert json.loads(out)["thief"]["stolen"] == ["refused: IsolationViolation"], out


def test_the_runtimes_queues_are_not_function_codes_to_take_from(tmp_path: Path
                                                                 ) -> None:
    """Class 3 through the runtime's own channels: Thief's threads wait on the queues of
    the runtime's worker threads (found through threading.enumerate()) and take the
    result Source hands back. Under none (the control) they take Source's secret; under
    mpk a get from a queue that is not the function's own is refused, and nothing is
    taken."""
    app = queue_tap_app(tmp_path / "app")
    code, out, err = run(app, "none")
    assert code == 0, err
    assert json.loads(out)["read"] == {"stolen": [SECRET], "refused": []}, out
    code, out, err = run(app, "mpk")
    assert code == 0, err
    assert json.loads(out)["read"] == {"stolen": [], "refused": ["SharedWriteError"]}, out


def test_data_in_flight_is_on_no_path_from_a_module(tmp_path: Path) -> None:
    """Class 3 by reachability, under none, where nothing else stands in the way: a walk
    from every module through attributes, containers, closures, bound methods and weak
    references finds Holder's module constant (the walk works) but not the result
    Holder handed on, which is in the state data while Walker runs. A runtime change
    that leaves data in flight where a module's objects lead fails here."""
    code, out, err = run(walker_app(tmp_path / "app"), "none")
    assert code == 0, err
    walk = json.loads(out)["walk"]
    assert walk["control"] is True, walk
    assert walk["in flight"] == [], walk


def test_a_helper_modules_body_runs_sealed_in_its_function(tmp_path: Path) -> None:
    """A helper module beside the function (functions/_helper.py) is the function's
    code: its body runs sealed, inside the function's domain, with the function's rights
    only -- not on the Orchestrator's thread (the control: unsealed under none)."""
    app = helper_app(tmp_path / "app")
    code, out, err = run(app, "mpk")
    assert code == 0, err
    result = json.loads(out)["r1"]
    assert result["sealed"] is True, result
    assert str(result["domains"]).startswith("SealedError: cannot list the live domains")
    code, out, err = run(app, "none")
    assert code == 0, err
    assert json.loads(out)["r1"]["sealed"] is False


def test_a_librarys_module_body_runs_sealed_with_no_functions_rights(tmp_path: Path
                                                                       ) -> None:
    """A library a function imports (attacklib, installed on the Python path) is loaded
    before the function, sealed in the runtime's library loader: its body
    cannot use the domain API, plant code in a module loaded before it, start a
    process, walk the object graph to another function's data, or start an unsealed
    thread; it may import ctypes, as scipy does. Under none (the control) every one of
    those goes through and the walk finds the victim's secret."""
    app = library_app(tmp_path / "app")
    code, out, err = run(app, "mpk")
    assert code == 0, err
    result = json.loads(out)
    assert result["r1"] == {"domains": "SealedError", "plant": "SharedWriteError",
                            "class": "SharedWriteError", "process": "IsolationViolation",
                            "steal": "IsolationViolation", "thread": True,
                            "ctypes": "done", "append-finder": "done"}, result
    assert result["r2"] == {"sealed": '{"se'}, result  # json.dumps is still json's
    code, out, err = run(app, "none")
    assert code == 0, err
    result = json.loads(out)
    assert result["r1"] == {"domains": "done", "plant": "done", "class": "done",
                            "process": "done", "steal": [SECRET], "thread": False,
                            "ctypes": "done", "append-finder": "done"}, result
    assert result["r2"] == {"sealed": "plan"}, result  # the planted dumps ran


def test_a_library_may_extend_the_import_system_but_not_get_ahead_of_it(
        tmp_path: Path) -> None:
    """attacklib appends a finder (above: as six does, it loads); hijacklib puts one at
    the head of sys.meta_path, where it would decide what every later import finds: the
    function importing it fails to load, named (under none it loads)."""
    app = hijack_app(tmp_path / "app")
    code, out, err = run(app, "mpk")
    assert code != 0, out
    assert "function 'User' may not change sys.meta_path but by adding to its end" in \
        out + err, out + err
    code, out, err = run(app, "none")
    assert code == 0, err


def test_a_library_imported_lazily_loads_on_the_loader_thread(tmp_path: Path) -> None:
    """Victim imports lazylib while it runs: the library's body runs on the runtime's
    loader thread, in the library loader, so the frames below it hold nothing of Victim
    and it keeps nothing for Thief. Under none (the control) it runs on Victim's thread,
    finds Victim's secret a frame away and Thief reads its copy."""
    app = lazy_library_app(tmp_path / "app")
    code, out, err = run(app, "mpk")
    assert code == 0, err
    result = json.loads(out)
    assert result["r1"] == {"stolen": [], "thread": "faastlane:library-loader"}, result
    code, out, err = run(app, "none")
    assert code == 0, err
    assert json.loads(out)["r1"]["stolen"] == [SECRET], out


def test_a_library_may_add_to_sys_modules_but_not_replace_what_is_there(
        tmp_path: Path) -> None:
    """swaplib puts a module of its own where json was: under mpk the function importing
    it fails to load, named; under none (the control) a function loaded later gets the
    library's json."""
    app = swap_app(tmp_path / "app")
    code, out, err = run(app, "mpk")
    assert code != 0, out
    assert ("function 'User' may not replace or remove a module of sys.modules (a library"
            " it imports changed 'json')") in out + err, out + err
    code, out, err = run(app, "none")
    assert code == 0, err
    assert json.loads(out)["r1"] == {"dumps": "planted"}, out


def test_a_library_reads_another_functions_class_without_isolation(tmp_path: Path
                                                                      ) -> None:
    """The control of test_isolation_mpk_qemu's library peek: under none a library's
    module body reads what another function made at import (under keys it faults)."""
    code, out, err = run(library_peek_app(tmp_path / "app"), "none")
    assert code == 0, err
    assert json.loads(out)["r1"] == {"found": [SECRET]}, out


def test_the_hardenings_own_state_is_read_only_to_function_code(tmp_path: Path) -> None:
    """The audit hook's policy, its table of function slots, the code allowed ctypes:
    Python objects a function can reach from the hardening's module, each refused under
    mpk; the same writes go through where no guard runs (none: the hardening is not
    installed there, so it has no policy to change)."""
    app = loosen_app(tmp_path / "app")
    code, out, err = run(app, "mpk")
    assert code == 0, err
    result = json.loads(out)["r0"]
    assert result == {label: "SharedWriteError" for label in
                      ("policy", "verdicts", "global", "names", "slots", "trusted")}, result
    code, out, err = run(app, "none")
    assert code == 0, err
    assert json.loads(out)["r0"] == {"policy": "AttributeError", "verdicts": "AttributeError",
                                     "global": "done", "names": "done", "slots": "done",
                                     "trusted": "done"}
