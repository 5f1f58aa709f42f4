"""``--isolation mpk`` end to end, natively: private heaps without hardware keys.

This host has no ``pku``, so ``_faastlane`` runs its no-keys implementation: the same
slots, heaps, gates and bookkeeping, nothing enforced. Everything here that concerns
*placement* (what lives in which heap), promotion, escapes, and outputs is therefore
real; what the hardware adds (a fault on a foreign read) is proved by
``test_isolation_mpk_qemu.py`` with the same apps.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from . import https_server
from .apps import chain, faastlane, task, write_app
from .mpk_apps import (
    BOTO3,
    BREAKOUT,
    CONCURRENT_CACHES_OUTPUT,
    CTYPES_PEEK,
    ESCAPE,
    FAIL_THEN_CLEAN,
    FIFTY,
    NUMPY_CTYPES,
    PEEK,
    PLANT,
    TWO_HTTPS,
    WARM,
    concurrent_caches,
    in_turn,
    write_mpk_app,
)

# Tier: mpk (tests/conftest.py). Checked when a test runs, not at import: `make test-fast`
# deselects these without the module skipping itself; under CI a skip is a failure.
pytestmark = pytest.mark.mpk


@pytest.fixture(autouse=True, scope="module")
def _faastlane_runtime() -> None:
    pytest.importorskip("_faastlane", reason="needs the cpython-mpk runtime (make test)")

MPK = ("--isolation", "mpk")


def run(app: Path, *args: str, payload: object = None) -> tuple[int, object, str]:
    done = faastlane("run", str(app), "--input", json.dumps(payload or {}), *MPK, *args)
    try:
        output = json.loads(done.stdout)
    except json.JSONDecodeError:
        output = None
    return done.code, output, done.stderr


def test_warm_state_stays_in_each_functions_heap(tmp_path: Path) -> None:
    code, out, err = run(write_mpk_app(tmp_path / "app", WARM),
                         payload={"text": "ab ab cd ef"})
    assert code == 0, err
    model1, model2 = out["model1"], out["model2"]
    # Module-level set-up ran once, inside the function's own heap; reused warm.
    assert model1["model_in_my_slot"] and model1["weights_in_my_slot"]
    assert (model1["calls"], model2["calls"]) == (1, 2)
    assert model1["model_address"] == model2["model_address"]
    # Lazy caching into a module global: loaded on the first call only, privately.
    lazy = [out[f"lazy{i}"] for i in (1, 2, 3)]
    assert [x["loaded_now"] for x in lazy] == [True, False, False]
    assert all(x["cache_in_my_slot"] for x in lazy)
    # Every function has its own domain.
    assert len({model1["slot"], lazy[0]["slot"]}) == 2
    libraries = out["libraries"]
    assert libraries == {"words": ["ab", "cd", "ef"], "match": True, "day": 22,
                         "packed": [1, 2, 3], "total": "3.30", "array_sum": 66.0,
                         "pixels": 7 * 64, "json": {"a": [1]},
                         "counter_in_my_slot": True, "array_data_in_my_slot": True}
    # A shared lru_cache used by two functions in turn: each fills its own copy of the
    # cache (stdlib_caches.py; a shared entry made by one would fault the other).
    assert out["urls_a"]["host"] == "ab.a.example" and out["urls_b"] == {"host": "ef.b.example"}
    # Registries filled on first use hold shared entries; context variables set at
    # import are seen by every invocation, those set by one invocation by none after.
    assert out["registries1"] == out["registries2"] == {
        "seen": "set at import", "flag_shared": True, "slotnames_shared": True,
        "tls_context_in_my_slot": True, "host": "example.com", "parts": ["AB", "http"]}
    # A result is promoted by value: the next function sees it as its own deep copy,
    # made in its heap at the entry gate (it may mutate it), leaves included.
    assert out["consumed"] == {"text": "made by Produce " * 3, "items": [0, 1, 2, 3, 4],
                               "input_copy_in_my_slot": True, "input_text_in_my_slot": True}


def test_urlopen_in_two_functions_leaves_no_escape(tmp_path: Path) -> None:
    """``urllib.request.urlopen`` (no context) keeps a default opener in a module global
    made on first use: made shared at load (library_caches.LAZY_DEFAULTS), two functions
    fetch from a local HTTP server in turn with no escape."""
    fetch = """
        import os, urllib.request

        def handler(event, context):
            with urllib.request.urlopen(os.environ["FETCH_URL"] + event["path"]) as answer:
                return answer.read().decode()
        """
    app = write_app(tmp_path / "app", in_turn("FetchA", "FetchB"),
                    {"FetchA": fetch, "FetchB": fetch})
    with https_server.serving() as url:
        done = faastlane("run", str(app), "--input", "{}", *MPK,
                         env=dict(os.environ, FETCH_URL=url))
    assert done.code == 0, done.stdout + done.stderr
    assert json.loads(done.stdout) == {"FetchA1": "/FetchA1", "FetchB1": "/FetchB1",
                                       "FetchA2": "/FetchA2", "FetchB2": "/FetchB2"}


def test_two_functions_call_an_https_server_in_turn(tmp_path: Path) -> None:
    """Each HTTPS call makes a TLS handshake inside the function's domain: what OpenSSL
    caches process-wide for it was warmed at load (library_caches.warm_tls_handshakes),
    so no escape here; under keys (test_isolation_mpk_qemu.py) no fault either."""
    cert, key = https_server.self_signed_certificate(tmp_path)
    with https_server.serving(cert, key) as url:
        done = faastlane("run", str(write_mpk_app(tmp_path / "app", TWO_HTTPS)), "--input",
                         "{}", *MPK, env=dict(os.environ, HTTPS_TEST_URL=url,
                                              HTTPS_TEST_CA=cert))
    assert done.code == 0, done.stdout + done.stderr
    assert json.loads(done.stdout) == {f"{n}{i}": f"/{n}{i}" for i in (1, 2)
                                       for n in ("HttpsA", "HttpsB")}


def test_each_function_gets_its_own_boto3_default_session(tmp_path: Path) -> None:
    """``boto3.client()`` makes its default session in the calling function's heap
    (module_instances.py): one per function, reused warm, the shared module untouched,
    and no shared object left pointing into any heap (no set-up escape reported)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    done = faastlane("run", str(write_mpk_app(tmp_path / "app", BOTO3)), "--input", "{}",
                     *MPK, env=env)
    assert done.code == 0, done.stderr
    assert "pointing into its private heap" not in done.stderr
    out = json.loads(done.stdout)
    for result in (out[k] for k in ("a1", "b1", "a2", "b2")):
        assert result["session_in_my_slot"] and result["client_in_my_slot"], result
        assert result["same_session"] and result["shared_module_untouched"], result
        assert result["services"] == ["dynamodb", "sns"]
    assert out["a1"]["session_address"] == out["a2"]["session_address"]
    assert out["a1"]["session_address"] != out["b1"]["session_address"]
    assert out["a1"]["slot"] != out["b1"]["slot"]


def test_trace_and_plan_show_the_mode(tmp_path: Path) -> None:
    app = write_mpk_app(tmp_path / "app", PEEK)
    out_dir = tmp_path / "action"
    done = faastlane("compose", str(app), "-o", str(out_dir), *MPK)
    assert done.code == 0, done.stderr
    plan = json.loads((out_dir / "plan.json").read_text())
    assert plan["isolation"]["mode"] == "mpk"
    assert "private heap" in plan["isolation"]["reason"]
    code, out, err = run(app, "--trace")
    assert code == 0, err
    assert out["peek"] == {"value": "keeper-secret"}  # no keys here: nothing enforces
    header = json.loads(next(line for line in err.splitlines() if '"workflow"' in line))
    assert header["isolation"] == "mpk" and header["mpk"] == "no-keys"
    assert header["mpk_malloc"] == "routed"


def test_c_malloc_stays_shared_when_the_user_turns_routing_off(tmp_path: Path) -> None:
    done = faastlane("run", str(write_mpk_app(tmp_path / "app", WARM)), "--input",
                     json.dumps({"text": "ab ab cd ef"}), *MPK, "--trace",
                     env={**os.environ, "FAASTLANE_MPK_MALLOC": "off"})
    assert done.code == 0, done.stderr
    assert "FAASTLANE_MPK_MALLOC=off: C malloc stays shared" in done.stderr
    libraries = json.loads(done.stdout)["libraries"]
    # Python objects stay private; the array's C buffer does not.
    assert libraries["counter_in_my_slot"] and not libraries["array_data_in_my_slot"]
    header = json.loads(next(line for line in done.stderr.splitlines()
                             if '"workflow"' in line))
    assert header["mpk_malloc"] == "shared"


def test_ctypes_is_refused_to_function_code(tmp_path: Path) -> None:
    """The hardening is on in mpk mode: ctypes (loaded by nothing, or by a library
    outside functions) cannot be used by a function to read another's memory."""
    code, out, err = run(write_mpk_app(tmp_path / "app", CTYPES_PEEK))
    assert code == 1, err
    assert out["Error"] == "IsolationViolation", out
    cause = json.loads(out["Cause"])["errorMessage"]
    # Its own import of ctypes was made shared, outside, as a library's: the first use
    # is what is refused.
    assert cause.startswith("function 'CtypesPeek': ctypes (ctypes."), cause
    assert cause.endswith("refused (mpk isolation)")
    # The control: without isolation the same read succeeds (so the test can fail).
    done = faastlane("run", str(write_mpk_app(tmp_path / "none", CTYPES_PEEK)),
                     "--isolation", "none")
    assert done.code == 0 and len(json.loads(done.stdout)["bytes"]) == 16, done.stderr


def test_function_code_runs_sealed_and_hardened(tmp_path: Path) -> None:
    """In mpk mode every function runs sealed, with the hardening on: the domain API,
    /proc/self/mem and ctypes are refused to it and to the threads it starts."""
    code, out, err = run(write_mpk_app(tmp_path / "app", BREAKOUT))
    assert code == 0, err
    assert out["sealed_to_my_slot"] and out["seccomp"], out
    sealed = "SealedError: cannot {}: this thread runs sealed function code"
    assert out["exit"].startswith(sealed.format("exit")), out
    for key in ("live_domains", "thread_live_domains"):
        assert out[key].startswith(sealed.format("list the live domains")), out
    assert out["proc_self_mem"] == ("IsolationViolation: function 'Breakout': opening "
                                    "/proc/self/mem refused (mpk isolation)"), out
    for key in ("ctypes", "thread_ctypes"):
        assert out[key].startswith("IsolationViolation: function 'Breakout': ctypes "
                                   "(ctypes."), out
    refused = "IsolationViolation: function 'Breakout': {} refused (mpk isolation)"
    assert out["mem_dir_fd"] == refused.format("opening mem"), out
    assert out["subprocess"] == refused.format("starting a process (subprocess.Popen)")
    assert out["thread_fork"] == refused.format("starting a process (os.fork)"), out
    assert out["gc"] == refused.format("walking the object graph (gc.get_objects)"), out
    assert out["settrace"] == refused.format("installing a hook every thread runs "
                                             "(sys.settrace)"), out


def test_a_function_cannot_leave_code_for_other_threads_to_run(tmp_path: Path) -> None:
    """(Issue 17, class 2.) Code a function registers to run at exit, around a fork, in
    every collection or at every audit event runs on other threads -- at exit and fork
    the Orchestrator's, with its rights. The callbacks are shared objects (builtins, an
    interned command), so neither a key nor the escape check would see them. Under mpk
    each registration is refused (CPython drops a refused audit hook without telling its
    caller: it never runs); the control (none) shows the same calls succeed and the
    command run at exit."""
    app = write_mpk_app(tmp_path / "app", PLANT)
    seen = {}
    for isolation in ("mpk", "none"):
        marker = tmp_path / f"planted-{isolation}"
        done = faastlane("run", str(app), "--input", json.dumps({"marker": str(marker)}),
                         "--isolation", isolation)
        assert done.code == 0, done.stderr
        seen[isolation] = json.loads(done.stdout), marker.exists()
    (mpk, planted_mpk), (none, planted_none) = seen["mpk"], seen["none"]
    refused = ("IsolationViolation: function 'Planter': installing a hook every thread "
               "runs ({}) refused (mpk isolation)")
    assert mpk["atexit"] == refused.format("atexit.register"), mpk
    assert mpk["at_fork"] == refused.format("os.register_at_fork"), mpk
    assert mpk["gc_callbacks"].startswith("SharedWriteError: function 'Planter' may not "
                                          "change an item of gc.callbacks"), mpk
    assert mpk["audit_hook"] == "done" and mpk["audit_hook_heard"] is False, mpk
    assert not planted_mpk
    assert none == {"atexit": "done", "at_fork": "done", "gc_callbacks": "done",
                    "audit_hook": "done", "audit_hook_heard": True}, none
    assert planted_none


def test_an_escape_fails_the_function_and_names_it(tmp_path: Path) -> None:
    code, out, err = run(write_mpk_app(tmp_path / "app", ESCAPE))
    assert code == 1, err
    assert out["Error"] == "Faastlane.IsolationError"
    assert "function 'Escape'" in out["Cause"]
    assert "left private objects reachable from shared state: a shared list" in out["Cause"]


def test_a_failed_invocation_leaves_the_next_clean(tmp_path: Path) -> None:
    code, out, err = run(write_mpk_app(tmp_path / "app", FAIL_THEN_CLEAN))
    assert code == 0, err
    assert out["caught"]["Error"] == "ValueError"
    cause = json.loads(out["caught"]["Cause"])
    assert cause["errorMessage"] == "asked to fail: " + "x" * 10
    assert any("Fail.py" in line for line in cause["stackTrace"])
    assert out["again"] == {"ok": True}


@pytest.mark.parametrize("count", [50, 300])
def test_sequential_invocations_in_one_domain(tmp_path: Path, count: int) -> None:
    # Every exit checks for escapes: past 256 calls the function's counters are ints
    # the runtime must not have made inside the domain.
    done = faastlane("run", str(write_mpk_app(tmp_path / "app", FIFTY)), "--input",
                     json.dumps({"items": list(range(count))}), *MPK, "--threads-only",
                     env={**os.environ, "FAASTLANE_ESCAPE_CHECK": "every"})
    assert done.code == 0, done.stderr
    assert json.loads(done.stdout) == list(range(1, count + 1))


def test_results_are_checked_and_converted_as_lambda_does(tmp_path: Path) -> None:
    # The result is promoted by a JSON round trip made in C: Decimal becomes a number
    # and tuples lists, as awslambdaric's encoder does; anything else is
    # Runtime.MarshalError saying where, as in the other modes.
    functions = {"good": """
        import decimal

        def handler(event, context):
            return {"price": decimal.Decimal("2.50"), "count": decimal.Decimal(3),
                    "pair": (1, "a"), 7: None}
        """, "bad": """
        def handler(event, context):
            return {"ok": [1, 2], "when": {object()}}
        """}
    write_app(tmp_path / "good", chain(("Good", task("good"))), functions)
    code, out, err = run(tmp_path / "good")
    assert code == 0, err
    assert out == {"price": 2.5, "count": 3, "pair": [1, "a"], "7": None}
    write_app(tmp_path / "bad", chain(("Bad", task("bad"))), functions)
    code, out, err = run(tmp_path / "bad")
    assert code == 1, err
    assert out["Error"] == "Runtime.MarshalError"
    assert "set is not JSON serializable" in out["Cause"]


def test_a_mutated_event_leaves_the_state_input_unchanged(tmp_path: Path) -> None:
    # The function's copy of its event is the one made in its heap: mutating it in
    # place changes neither the state input (ResultPath merges into it) nor the next
    # function's input.
    functions = {"mutate": """
        def handler(event, context):
            event["items"].append(99)
            event["added"] = True
            return {"seen": len(event["items"])}
        """, "read": """
        def handler(event, context):
            return {"items": event["items"], "keys": sorted(event)}
        """}
    write_app(tmp_path / "app", chain(("Mutate", task("mutate", ResultPath="$.mutated")),
                                      ("Read", task("read", ResultPath="$.read"))),
              functions)
    code, out, err = run(tmp_path / "app", payload={"items": [1, 2]})
    assert code == 0, err
    assert out["mutated"] == {"seen": 3}
    assert out["items"] == [1, 2] and "added" not in out
    assert out["read"] == {"items": [1, 2], "keys": ["items", "mutated"]}


def test_numpy_ctypes_of_a_functions_own_array_works_under_mpk(tmp_path: Path) -> None:
    """Ordinary numpy touching ``.ctypes`` runs under mpk (the ctypes policy refuses
    attacks, not numpy's helper on the function's own array) and gives none mode's
    output."""
    code, out, err = run(write_mpk_app(tmp_path / "app", NUMPY_CTYPES))
    assert code == 0, err
    done = faastlane("run", str(write_mpk_app(tmp_path / "none", NUMPY_CTYPES)),
                     "--isolation", "none")
    assert done.code == 0, done.stderr
    assert out == json.loads(done.stdout) == {"pointer_matches": True, "shape": [3, 4],
                                              "sum": 66.0}


THREAD_IMPORTS = """
import importlib, threading

def handler(event, context):
    out = {}
    def work():  # a library first imported by a thread the function started
        out["module"] = importlib.import_module(event["module"]).__name__
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    return out
"""


def test_a_library_a_functions_thread_imports_is_shared(tmp_path: Path) -> None:
    """A thread a function starts runs in its domain without the invoker's bookkeeping;
    a library it imports lazily is still loaded shared, by the loader thread, and
    serves the next function: no escape into sys.modules."""
    workflow = chain(("First", task("Importer", Parameters={"module": "colorsys"},
                                    ResultPath="$.first")),
                     ("Again", task("Other", Parameters={"module": "colorsys"},
                                    ResultPath="$.again")))
    app = write_app(tmp_path / "app", workflow, {"Importer": THREAD_IMPORTS,
                                                 "Other": THREAD_IMPORTS})
    code, out, err = run(app)
    assert code == 0, err
    assert out["first"] == out["again"] == {"module": "colorsys"}, out


def test_functions_running_at_once_each_use_their_own_stdlib_caches(tmp_path: Path
                                                                     ) -> None:
    """-Th: CacheA and CacheB run at the same time, each asking re's, struct's, an
    lru_cache's and linecache's caches for what the other filled while it still runs.
    Each gets its own entry, made in its own heap (stdlib_caches.py): with the CPU's
    keys (FAASTLANE_MPK=auto uses them where the CPU has them) the other's entry would
    fault, without them it shows in the other's slot. Under QEMU's keys too; none's
    output is the same."""
    meet = tmp_path / "meet"
    app = write_mpk_app(tmp_path / "app", concurrent_caches(str(meet)))
    for isolation in ("mpk", "none"):
        done = faastlane("run", str(app), "--input", "{}", "--isolation", isolation,
                         "--threads-only", env=dict(os.environ, FAASTLANE_MPK="auto"))
        assert done.code == 0, done.stdout + done.stderr
        assert json.loads(done.stdout) == CONCURRENT_CACHES_OUTPUT, done.stdout
        shutil.rmtree(meet)


FORGER = """
    import _faastlane

    def handler(event, context):
        # Function code may call hand_off too: it only puts its own value in the
        # hand-off heap, and the invoker's call after it decides what is handed on.
        forged = _faastlane.hand_off({"forged": "by " + event["who"]})
        if event.get("fail"):
            raise RuntimeError("failed after forging")
        return {"real": event["who"], "forged_call": forged}
"""


def test_a_function_cannot_forge_what_it_hands_on(tmp_path: Path) -> None:
    """The next state sees the function's real result, never a value its code handed
    off itself; a function that hands off and then fails hands on its error."""
    workflow = {"StartAt": "Forge", "States": {
        "Forge": task("Forger", ResultPath="$.first", Next="ForgeAndFail"),
        "ForgeAndFail": task("Forger", Parameters={"who": "second", "fail": True},
                             ResultPath="$.second", End=True,
                             Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.caught",
                                     "Next": "Done"}]),
        "Done": {"Type": "Pass", "End": True}}}
    code, out, err = run(write_app(tmp_path / "app", workflow, {"Forger": FORGER}),
                         payload={"who": "first"})
    assert code == 0, err
    assert out["first"] == {"real": "first", "forged_call": True}
    assert "second" not in out and out["caught"]["Error"] == "RuntimeError"
    assert "by first" not in json.dumps(out) and "by second" not in json.dumps(out)


POOL = '''
import concurrent.futures


def handler(event, context):
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return sorted(pool.map(lambda n: n * n, event["n"]))
'''


def test_a_standard_library_export_made_on_first_read_works_in_a_domain(tmp_path: Path
                                                                        ) -> None:
    # concurrent.futures makes ThreadPoolExecutor when first read, storing it into its
    # (shared, frozen) namespace: the runtime makes it before freezing, so the
    # function's read is a read.
    app = write_app(tmp_path / "app", chain(("Pool", task("Pool"))), {"Pool": POOL})
    code, output, err = run(app, payload={"n": [1, 2, 3]})
    assert (code, output) == (0, [1, 4, 9]), err


FIRST_REQUEST = '''
import socket

import urllib3.util.wait


def handler(event, context):
    # The first socket wait of the process: urllib3 picks poll or select and rebinds
    # its wait_for_socket, as a boto3 client's first request does.
    left, right = socket.socketpair()
    try:
        right.send(b"x")
        return urllib3.util.wait.wait_for_read(left, timeout=1)
    finally:
        left.close()
        right.close()
'''


def test_a_librarys_choice_made_on_first_use_is_made_before_it_is_frozen(tmp_path: Path
                                                                         ) -> None:
    app = write_app(tmp_path / "app", chain(("First", task("First"))),
                    {"First": FIRST_REQUEST})
    code, output, err = run(app)
    assert (code, output) == (0, True), err


TEMPFILES = """
import tempfile

def handler(event, context):
    with tempfile.TemporaryFile() as scratch:
        scratch.write(b"spool")
    with tempfile.NamedTemporaryFile() as named:
        name = named.name
    return {"made": True, "named": bool(name)}
"""


@pytest.mark.parametrize("placement", [(), ("--processes-only",)])
def test_functions_that_use_tempfile_run_under_mpk(tmp_path: Path,
                                                   placement: tuple[str, ...]) -> None:
    # tempfile makes its name sequence and its random generator on first use (the
    # generator again in every forked process): made by the runtime outside the domains,
    # not left by a function's call in shared state (was Faastlane.IsolationError).
    app = write_app(tmp_path / "app", {"StartAt": "M", "States": {"M": {
        "Type": "Map", "ItemsPath": "$.items", "End": True, "ItemProcessor": {
            "StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "first",
                                              "Next": "U"},
                                       "U": {"Type": "Task", "Resource": "second",
                                             "End": True}}}}}},
        {"first": TEMPFILES, "second": TEMPFILES})
    code, out, err = run(app, *placement, payload={"items": [1, 2, 3]})
    assert code == 0, err
    assert out == [{"made": True, "named": True}] * 3
