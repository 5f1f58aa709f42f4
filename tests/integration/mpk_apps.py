"""Apps that exercise ``--isolation mpk``: what runs in which heap, and what is refused.

Every function reports where its objects live (``_faastlane.slot_of``) so that the tests
can check placement natively (the no-keys implementation places memory exactly as the
keys one does) and the QEMU tests can check enforcement with the same apps.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from .apps import chain, task, write_app

# Every function file stands alone (each .py under functions/ is a function).
WHERE = """
import _faastlane


def slot_of(obj):
    return _faastlane.slot_of(id(obj))


def my_slot():
    domain = _faastlane.current_domain()
    return None if domain is None else domain.slot


def attempt(action):
    try:
        action()
    except Exception as exc:
        return type(exc).__name__ + ": " + str(exc)
    return "done"
"""

# Makes boto3 clients at module level and when invoked (no request is sent).
AWS = """
        import sys

        import boto3

        # Module-level client, as Lambda handlers make them: boto3's default session is
        # made here, the function's own (module_instances.py).
        CLIENT = boto3.client("dynamodb", region_name="us-east-1",
                              endpoint_url="http://127.0.0.1:9")

        def handler(event, context):
            from boto3 import DEFAULT_SESSION
            later = boto3.client("sns", region_name="us-east-1",
                                 endpoint_url="http://127.0.0.1:9")
            return {"session_in_my_slot": slot_of(boto3.DEFAULT_SESSION) == my_slot(),
                    "client_in_my_slot": slot_of(CLIENT) == my_slot(),
                    "same_session": DEFAULT_SESSION is boto3.DEFAULT_SESSION,
                    "shared_module_untouched": sys.modules["boto3"].DEFAULT_SESSION is None,
                    "session_address": id(boto3.DEFAULT_SESSION), "slot": my_slot(),
                    "services": [CLIENT.meta.service_model.service_name,
                                 later.meta.service_model.service_name]}
        """

# Calls a local HTTPS server (its address and CA from the environment): a TLS handshake.
HTTPS = """
        import os, ssl, urllib.request

        CONTEXTS = {}  # CA file -> TLS context, made on the first call (warm after)

        def handler(event, context):
            ca = os.environ["HTTPS_TEST_CA"]
            if ca not in CONTEXTS:
                CONTEXTS[ca] = ssl.create_default_context(cafile=ca)
            url = os.environ["HTTPS_TEST_URL"] + event["path"]
            with urllib.request.urlopen(url, context=CONTEXTS[ca]) as answer:
                return answer.read().decode()
        """

# Two functions running at the same time (branches on threads, -Th), each filling the
# standard library's caches (re, struct, an lru_cache, linecache) and botocore's name memo,
# then asking them for
# what the other one filled while that one still runs: each must get its own copy, never
# the other's private entry (under keys reading it faults). They meet through files in
# event["meet"] so that both have filled before either asks, and neither exits (ending
# its entries' life) before both have asked.
CACHES = """
        import linecache, os, re, struct, time, urllib.parse

        import botocore

        NAMES = ("CacheA", "CacheB")
        PATTERNS = (r"(a+)(b+)c", r"(d+)(e+)f")
        SAMPLES = ("aabbc", "ddeef")
        FORMATS = ("<3I2x", "<5H1x")
        VALUES = ((1, 2, 3), (4, 5, 6, 7, 8))
        URLS = ("http://a.example/cached", "http://b.example/cached")
        OPERATIONS = ("DescribeCachedThings", "ListCachedThings")
        FILES = tuple(os.path.join(os.path.dirname(os.__file__), name)
                      for name in ("colorsys.py", "sched.py"))

        def meet(folder, me, other, step):
            open(os.path.join(folder, f"{me}.{step}"), "w").close()
            deadline = time.monotonic() + 600
            while not os.path.exists(os.path.join(folder, f"{other}.{step}")):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{other} never reached {step}")
                time.sleep(0.005)

        def use(i):
            packed = struct.pack(FORMATS[i], *VALUES[i])
            return (re.compile(PATTERNS[i]), struct.unpack(FORMATS[i], packed),
                    urllib.parse.urlsplit(URLS[i]), linecache.getline(FILES[i], 1),
                    botocore.xform_name(OPERATIONS[i]))

        def handler(event, context):
            mine, other = event["mine"], 1 - event["mine"]
            folder = event["meet"]
            os.makedirs(folder, exist_ok=True)
            use(mine)  # its entries, made in its heap
            meet(folder, NAMES[mine], NAMES[other], "filled")
            pattern, unpacked, split, line, name = use(other)  # the other one's
            meet(folder, NAMES[mine], NAMES[other], "asked")
            with open(FILES[other]) as source:
                first = source.readline()
            return {"pattern_in_my_slot": slot_of(pattern) == my_slot(),
                    "split_in_my_slot": slot_of(split) == my_slot(),
                    "line_in_my_slot": slot_of(line) == my_slot(),
                    "name_in_my_slot": slot_of(name) == my_slot(), "name": name,
                    "pattern_warm": re.compile(PATTERNS[other]) is pattern,
                    "groups": list(pattern.match(SAMPLES[other]).groups()),
                    "unpacked": list(unpacked), "host": split.hostname,
                    "line_read": line == first and bool(line)}
        """

FUNCTIONS = {
    "Model": """

        MODEL = {"weights": [0.5] * 1000, "name": "model"}  # made at import, in the heap
        CALLS = []

        def handler(event, context):
            CALLS.append(1)
            return {"model_in_my_slot": slot_of(MODEL) == my_slot(),
                    "weights_in_my_slot": slot_of(MODEL["weights"]) == my_slot(),
                    "calls": len(CALLS), "slot": my_slot(), "model_address": id(MODEL)}
        """,
    "Lazy": """

        CACHE = {}

        def handler(event, context):
            loaded_now = "model" not in CACHE
            if loaded_now:
                CACHE["model"] = [i * 2 for i in range(10000)]
            return {"loaded_now": loaded_now, "slot": my_slot(),
                    "cache_in_my_slot": slot_of(CACHE["model"]) == my_slot()}
        """,
    "Libraries": """
        import collections, datetime, decimal, json, logging, re, struct

        import numpy as np
        from PIL import Image


        log = logging.getLogger("Libraries")

        def handler(event, context):
            words = re.findall(r"[a-z]+", event["text"])
            pattern = re.compile("(" + "|".join(words) + ")+")  # in its own copy of re's cache
            counts = collections.Counter(words)
            when = datetime.datetime.strptime("2026-11-22", "%Y-%m-%d")
            packed = struct.unpack("<3I", struct.pack("<3I", 1, 2, 3))
            total = decimal.Decimal("1.10") + decimal.Decimal("2.20")
            log.info("counted %d words", len(words))
            array = np.arange(12, dtype=np.float64).reshape(3, 4)
            image = Image.new("L", (8, 8), color=7)
            cycle = []
            cycle.append(cycle)  # garbage cycles, collected inside the domain
            return {"words": sorted(counts), "match": bool(pattern.match("ab")),
                    "day": when.day, "packed": list(packed), "total": str(total),
                    "array_sum": float(array.sum()), "pixels": sum(image.getdata()),
                    "json": json.loads(json.dumps({"a": [1]})),
                    "counter_in_my_slot": slot_of(counts) == my_slot(),
                    # numpy's data buffer comes from C malloc: routed into the heap too.
                    "array_data_in_my_slot": _faastlane.slot_of(
                        array.__array_interface__["data"][0]) == my_slot()}
        """,
    "UrlsA": """
        import functools
        import urllib.parse

        def handler(event, context):
            # urlsplit is a shared functools.lru_cache: this call links a private entry
            # into its list; the exit gate must unlink it before anyone else calls.
            url = urllib.parse.urlsplit("https://" + event["text"].split()[0] + ".a.example/")
            return {"host": url.hostname, "cached": urllib.parse.urlsplit.cache_info().currsize}
        """,
    "UrlsB": """
        import urllib.parse

        def handler(event, context):
            url = urllib.parse.urlsplit("https://" + event["text"].split()[-1] + ".b.example/")
            return {"host": url.hostname}
        """,
    "Finalize": """
        import weakref

        # A finalizer on the function's own object, left for interpreter exit: the
        # exiting thread (outside every domain) must not read it. (A set, not an
        # instance of a class of its own: Peek walks object.__subclasses__().)
        CLOSED = []
        CONNECTION = {"socket"}
        weakref.finalize(CONNECTION, CLOSED.append, "at exit")

        def handler(event, context):
            return {"finalizer_pending": True}
        """,
    "Produce": """
        def handler(event, context):
            return {"text": "made by Produce " * 3, "items": list(range(5))}
        """,
    "Consume": """

        def handler(event, context):
            data = event["produced"]
            return {"text": data["text"], "items": data["items"],
                    "input_copy_in_my_slot": slot_of(data) == my_slot()
                    and slot_of(data["items"]) == my_slot(),
                    # Its leaves too: in flight they lived in the hand-off heap,
                    # which no function's key opens (handoff.py).
                    "input_text_in_my_slot": slot_of(data["text"]) == my_slot()}
        """,
    "Escape": """
        import sys

        def handler(event, context):
            # A list every function and the Orchestrator share.
            sys.warnoptions.append({"secret": "kept from a private heap"})
            return {"ok": True}
        """,
    "Fail": """
        def handler(event, context):
            if event.get("fail"):
                raise ValueError("asked to fail: " + "x" * 10)
            return {"ok": True}
        """,
    "Count": """
        SEEN = []

        def handler(event, context):
            SEEN.append(event)
            return len(SEEN)
        """,
    # Keeps a class in its heap (made at import): shared classes' subclass tables name it.
    "Keeper": """

        class KeeperSecret:
            value = "keeper-" + "secret"

        def handler(event, context):
            return {"class_in_my_slot": slot_of(KeeperSecret) == my_slot()}
        """,
    # Reads another function's object in pure Python: object.__subclasses__() reaches
    # Keeper's class (the documented hazard of shared subclass tables).
    "Peek": """

        def handler(event, context):
            found = [c for c in object.__subclasses__() if c.__name__ == "KeeperSecret"]
            return {"value": found[0].value if found else None}
        """,
    # 60 ms of CPU: a Map job long enough for the planner to give warm processes.
    "Busy": """
        import time

        def handler(event, context):
            end = time.process_time() + 0.06
            while time.process_time() < end:
                pass
            return event
        """,
    # Leaves code for other threads to run: at exit and around forks (the exiting or
    # forking thread is the Orchestrator's), in every collection, at every audit event.
    # The command and the callbacks are shared objects (an interned string, builtins):
    # no key and no escape check would see them.
    "Planter": """
        import atexit
        import gc
        import os
        import sys


        def handler(event, context):
            command = sys.intern("echo planted > " + event["marker"])
            heard = []
            out = {"atexit": attempt(lambda: atexit.register(os.system, command)),
                   "at_fork": attempt(lambda: os.register_at_fork(before=os.getpid)),
                   "gc_callbacks": attempt(lambda: gc.callbacks.append(slice)),
                   "audit_hook": attempt(lambda: sys.addaudithook(
                       lambda name, args: heard.append(name)))}
            os.listdir(".")  # an audited event
            out["audit_hook_heard"] = len(heard) > 0
            return out
        """,
    # Tries, from inside its sealed domain, what the hardening and the seal refuse.
    "Breakout": """
        import gc
        import os
        import subprocess
        import sys
        import threading


        def from_a_thread(action):
            outcome = []
            thread = threading.Thread(target=lambda: outcome.append(attempt(action)))
            thread.start()
            thread.join()
            return outcome[0]


        def handler(event, context):
            status = open("/proc/self/status").read()
            return {
                "sealed_to_my_slot": _faastlane.sealed() == my_slot(),
                "seccomp": "Seccomp:\t2" in status,
                "exit": attempt(lambda: _faastlane.current_domain().exit()),
                "live_domains": attempt(_faastlane.live_domains),
                "thread_live_domains": from_a_thread(_faastlane.live_domains),
                "proc_self_mem": attempt(lambda: open("/proc/self/mem", "rb")),
                "ctypes": attempt(lambda: __import__("ctypes").c_int(1)),
                "thread_ctypes": from_a_thread(lambda: __import__("ctypes").c_int(1)),
                # issue 17: memory through a directory descriptor, processes, gc, hooks
                "mem_dir_fd": attempt(lambda: os.open(
                    "mem", os.O_RDONLY,
                    dir_fd=os.open("/proc/self", os.O_RDONLY | os.O_DIRECTORY))),
                "subprocess": attempt(lambda: subprocess.run(["true"])),
                "thread_fork": from_a_thread(os.fork),
                "gc": attempt(gc.get_objects),
                "settrace": attempt(lambda: sys.settrace(lambda *a: None)),
            }
        """,
    # Peek's read, from a thread it starts: the fault must name ThreadPeek all the same.
    "ThreadPeek": """
        import threading

        def handler(event, context):
            found = []
            def look():
                found.extend(c.value for c in object.__subclasses__()
                             if c.__name__ == "KeeperSecret")
            thread = threading.Thread(target=look)
            thread.start()
            thread.join()
            return {"value": found[0] if found else None}
        """,
    # Ordinary numpy that touches .ctypes: the data pointer of its own array.
    "NumpyCtypes": """
        import numpy

        def handler(event, context):
            array = numpy.arange(12.0).reshape(3, 4)
            pointer = array.ctypes.data
            return {"pointer_matches": pointer == array.__array_interface__["data"][0],
                    "shape": list(array.shape), "sum": float(array.sum())}
        """,
    # Reads memory at an address it was handed, with ctypes: refused by the hardening.
    "CtypesPeek": """
        import ctypes

        def handler(event, context):
            return {"bytes": ctypes.string_at(event["address"], 8).hex()}
        """,
    # Process-wide registries the standard library fills on first use: each entry made
    # shared (a private one in a shared registry is an escape, and faults the next user).
    "Registries": """
        import contextvars, copy, ssl, urllib.parse

        VAR = contextvars.ContextVar("faastlane_test_var", default="unset")
        VAR.set("set at import")  # in the function's own base context

        def handler(event, context):
            seen = VAR.get()
            VAR.set("set by an invocation")  # in this invocation's copy only
            # A Flag combination no one made before: a member cached in the shared class.
            options = ssl.Options.OP_NO_TICKET | ssl.Options.OP_NO_RENEGOTIATION | \
                ssl.Options.OP_CIPHER_SERVER_PREFERENCE
            # copy stores the class's __slotnames__ in the shared class on first use.
            split = copy.copy(urllib.parse.urlsplit("http://example.com/a"))
            tls = ssl.create_default_context()  # OpenSSL's method store: warmed shared
            # Globals urllib.parse fills on first use (a table, compiled regexes).
            parts = [urllib.parse.unquote_to_bytes("%41%42").decode(),
                     urllib.parse._splittype("http://h/p")[0]]
            return {"seen": seen, "flag_shared": slot_of(options) is None, "parts": parts,
                    "slotnames_shared":
                        slot_of(type(split).__dict__["__slotnames__"]) is None,
                    "tls_context_in_my_slot": slot_of(tls) == my_slot(),
                    "host": split.hostname}
        """,
    "AwsA": AWS,
    "AwsB": AWS,
    "CacheA": CACHES,
    "CacheB": CACHES,
    "HttpsA": HTTPS,
    "HttpsB": HTTPS,
}


def write_mpk_app(root: Path, workflow: dict) -> Path:
    return write_app(root, workflow, {name: WHERE + textwrap.dedent(source)
                                      for name, source in FUNCTIONS.items()})


WARM = chain(
    ("Model1", task("Model", ResultPath="$.model1")),
    ("Model2", task("Model", ResultPath="$.model2")),
    ("Lazy1", task("Lazy", ResultPath="$.lazy1")),
    ("Lazy2", task("Lazy", ResultPath="$.lazy2")),
    ("Lazy3", task("Lazy", ResultPath="$.lazy3")),
    ("Libraries", task("Libraries", ResultPath="$.libraries")),
    ("Produce", task("Produce", ResultPath="$.produced")),
    ("Consume", task("Consume", ResultPath="$.consumed")),
    ("Finalize", task("Finalize", ResultPath="$.finalize")),
    ("UrlsA", task("UrlsA", ResultPath="$.urls_a")),
    ("UrlsB", task("UrlsB", ResultPath="$.urls_b")),
    ("Registries1", task("Registries", ResultPath="$.registries1")),
    ("Registries2", task("Registries", ResultPath="$.registries2")),
)

ESCAPE = chain(("Escape", task("Escape")), ("After", task("Fail")))

def in_turn(*functions: str) -> dict:
    """Each function called twice, in turn, with ``{"path": "/<state>"}``; each result
    at ``$.<state>`` (states A1, B1, A2, B2 for functions A and B)."""
    return chain(*((f"{name}{i}", task(name, Parameters={"path": f"/{name}{i}"},
                                       ResultPath=f"$.{name}{i}"))
                   for i in (1, 2) for name in functions))


# Two functions calling an HTTPS server in turn, twice each.
TWO_HTTPS = in_turn("HttpsA", "HttpsB")

# Two functions of the same file, each making boto3 clients, each invoked twice.
BOTO3 = chain(*((f"{name}{i}", task(f"Aws{name}", ResultPath=f"$.{name.lower()}{i}"))
                for i in (1, 2) for name in ("A", "B")))

# A failed function, caught, then a clean one, then the same function succeeding.
FAIL_THEN_CLEAN = chain(
    ("Fail", task("Fail", Parameters={"fail": True}, ResultPath="$.failed",
                  Catch=[{"ErrorEquals": ["ValueError"], "ResultPath": "$.caught",
                          "Next": "Again"}])),
    ("Again", task("Fail", Parameters={"fail": False}, ResultPath="$.again")),
)

FIFTY = {"StartAt": "Each", "States": {"Each": {
    "Type": "Map", "ItemsPath": "$.items", "MaxConcurrency": 1, "End": True,
    "ItemProcessor": {"StartAt": "Count", "States": {"Count": task("Count")}}}}}

# Peek reaches Keeper's class from its own domain: natively it reads it, under keys the
# read faults and stops the workflow naming both.
PEEK = chain(("Keeper", task("Keeper", ResultPath="$.keeper")),
             ("Peek", task("Peek", ResultPath="$.peek")))
# PEEK's read, made by Map jobs on warm worker processes (compose --profile-from a
# trace that measured the jobs long places them there): a worker forked after the
# domains were made holds Keeper's heap under Keeper's key too.
PEEK_IN_WORKERS = {"StartAt": "Jobs", "States": {"Jobs": {
    "Type": "Map", "ItemsPath": "$.items", "End": True,
    "ItemProcessor": chain(("Busy", task("Busy")), ("Peek", task("Peek")))}}}
BREAKOUT = chain(("Breakout", task("Breakout")))
PLANT = chain(("Planter", task("Planter")))
# As PEEK, the read made by a thread Peek starts (issue 17, class 6).
THREAD_PEEK = chain(("Keeper", task("Keeper", ResultPath="$.keeper")),
                    ("Peek", task("ThreadPeek", ResultPath="$.peek")))
NUMPY_CTYPES = chain(("Numpy", task("NumpyCtypes")))
# Model leaks its object's address in its result; CtypesPeek tries to read it with
# ctypes: the hardening refuses ctypes to function code, with or without keys.
CTYPES_PEEK = chain(("Model", task("Model", ResultPath="$.model")),
                    ("Peek", task("CtypesPeek",
                                  Parameters={"address.$": "$.model.model_address"})))

# CacheA and CacheB at the same time (run with --threads-only): each asks the standard
# library's caches for what the other filled while it still runs.
def concurrent_caches(meet: str) -> dict:
    return {"StartAt": "Both", "States": {"Both": {
        "Type": "Parallel", "End": True, "Branches": [
            {"StartAt": name, "States": {name: task(name, Parameters={
                "mine": i, "meet": meet})}}
            for i, name in enumerate(("CacheA", "CacheB"))]}}}


# What each of CacheA and CacheB returns, wherever it runs.
CONCURRENT_CACHES_OUTPUT = [
    {"pattern_in_my_slot": True, "split_in_my_slot": True, "line_in_my_slot": True,
     "name_in_my_slot": True, "name": name, "pattern_warm": True, "groups": groups,
     "unpacked": unpacked, "host": host, "line_read": True}
    for groups, unpacked, host, name in (
        (["dd", "ee"], [4, 5, 6, 7, 8], "b.example", "list_cached_things"),
        (["aa", "bb"], [1, 2, 3], "a.example", "describe_cached_things"))]
