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


# Class 2 for libraries: a library's module body (attacklib, installed on the Python path
# as the app's requirements are, not one of the function's own files) tries, at import,
# what the Orchestrator's thread may do and function code may not.
LIBRARY = f"""
    import gc, json, os, sys, threading

    RESULTS = {{}}

    def attempt(label, action):
        try:
            value = action()
            RESULTS[label] = "done" if value is None else value
        except Exception as exc:
            RESULTS[label] = type(exc).__name__

    def domains():
        import _faastlane
        _faastlane.live_domains()

    def steal():
        return [v for d in gc.get_objects() if type(d) is dict
                for v in list(d.values()) if v == {SECRET!r}][:1]

    def thread_sealed():
        import _faastlane
        seen = []
        worker = threading.Thread(target=lambda: seen.append(_faastlane.sealed()))
        worker.start()
        worker.join()
        return seen[0] is not None

    def ctypes_use():  # what scipy's and scikit-learn's modules do as they load
        import ctypes
        ctypes.cast(ctypes.c_char_p(b"x"), ctypes.c_void_p)

    def plant():  # a wrapper the victim's json.dumps call runs
        original = json.dumps
        def dumps(value, *args, **kwargs):
            if isinstance(value, dict) and "secret" in value:
                return "planted"
            return original(value, *args, **kwargs)
        json.dumps = dumps

    def set_class_method():
        json.JSONEncoder.default = lambda self, value: repr(value)

    attempt("domains", domains)
    attempt("plant", plant)
    attempt("class", set_class_method)
    attempt("process", lambda: [os.system("true")] and None)
    attempt("steal", steal)
    attempt("thread", thread_sealed)
    attempt("ctypes", ctypes_use)

    class Finder:  # finds nothing, as six's finds only its own names
        @staticmethod
        def find_spec(name, path=None, target=None):
            return None

    attempt("append-finder", lambda: sys.meta_path.append(Finder()))
    """

LIBRARY_USER = """
    import attacklib

    def handler(event, context):
        return dict(attacklib.RESULTS)
    """


def library_site(app: Path) -> Path:
    """Where an app of this module has its library installed: run it with this folder
    on PYTHONPATH."""
    return app.parent / f"{app.name}-site"


def _install(app: Path, package: str, source: str) -> None:
    folder = library_site(app) / package
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(source))


def library_app(root: Path) -> Path:
    """Keeper keeps a secret (functions load in name order: it loads first); User imports
    attacklib, whose module body attacks at load ($.r1); Keeper's json.dumps is still
    json's ($.r2)."""
    app = write_app(root, sequence("Keeper", "User", "Keeper"),
                    {"Keeper": VICTIM, "User": LIBRARY_USER}, settings("User"))
    _install(app, "attacklib", LIBRARY)
    return app


# The same door by memory: the library's body reaches Keeper's class, made in Keeper's
# heap at import, through the subclass table every class shares. Under keys the loader's
# PKRU opens no function's heap: a fault naming both; natively it reads it.
KEEPER = f"""
    class KeeperSecret:
        value = {SECRET!r}

    def handler(event, context):
        return {{"kept": True}}
    """

PEEK_LIBRARY = """
    FOUND = [c.value for c in object.__subclasses__() if c.__name__ == "KeeperSecret"]
    """

PEEK_USER = """
    import peeklib

    def handler(event, context):
        return {"found": peeklib.FOUND}
    """


def library_peek_app(root: Path) -> Path:
    """Keeper loads first; User's library peeklib reads Keeper's class at import ($.r1).
    Folder functions: a single-file function's libraries are those of every module
    beside it (its helpers), so they would load with Keeper's, before its class exists."""
    app = write_app(root, sequence("Keeper", "User"), {}, settings("User"))
    for name, source in (("Keeper", KEEPER), ("User", PEEK_USER)):
        folder = app / "functions" / name
        folder.mkdir()
        (folder / "lambda_function.py").write_text(textwrap.dedent(source))
        (folder / "function.json").write_text('{"handler": "lambda_function.handler"}')
    _install(app, "peeklib", PEEK_LIBRARY)
    return app


# A library that puts a finder of its own before the import system's: it would decide
# what every later import finds. The load of the function importing it fails.
HIJACK_LIBRARY = """
    import sys

    class Finder:
        @staticmethod
        def find_spec(name, path=None, target=None):
            return None

    sys.meta_path.insert(0, Finder())
    """

HIJACK_USER = """
    import hijacklib

    def handler(event, context):
        return {}
    """


def hijack_app(root: Path) -> Path:
    """User imports hijacklib, which inserts a finder at the head of sys.meta_path."""
    app = write_app(root, sequence("User"), {"User": HIJACK_USER}, settings("User"))
    _install(app, "hijacklib", HIJACK_LIBRARY)
    return app


# A library a function imports lazily, while it runs: its body searches the frames below
# it for the function's data and keeps a copy of what it finds, for a thief that imports
# it later. Loaded on the function's thread it would find the function's locals there.
LAZY_VICTIM = f"""
    import importlib

    def handler(event, context):
        secret = "".join(reversed({SECRET[::-1]!r}))  # made here, in its own heap
        importlib.import_module("lazylib")
        return {{"imported": bool(secret)}}
    """

LAZY_LIBRARY = """
    import sys, threading

    def _copies():
        frame, kept = sys._getframe(), []
        while frame is not None:
            for value in list(frame.f_locals.values()):
                if isinstance(value, str) and "secret" in value:
                    kept.append(value.encode().decode())  # a copy, made by the library
            frame = frame.f_back
        return kept

    try:
        KEPT = _copies()
    except Exception as exc:
        KEPT = [f"{type(exc).__name__}: {exc}"]
    THREAD = threading.current_thread().name
    """

LAZY_THIEF = """
    import importlib

    def handler(event, context):
        lazylib = importlib.import_module("lazylib")
        return {"stolen": lazylib.KEPT, "thread": lazylib.THREAD}
    """


def lazy_library_app(root: Path) -> Path:
    """Victim imports lazylib lazily ($.r0); Thief imports it too and reads what its body
    kept ($.r1)."""
    app = write_app(root, sequence("Victim", "Thief"),
                    {"Victim": LAZY_VICTIM, "Thief": LAZY_THIEF}, settings("Thief"))
    _install(app, "lazylib", LAZY_LIBRARY)
    return app


# A library that puts a module of its own in the place of one loaded before it: every
# later `import json` would get its code.
SWAP_LIBRARY = """
    import sys, types

    fake = types.ModuleType("json")
    fake.dumps = lambda value, *args, **kwargs: "planted"
    sys.modules["json"] = fake
    """

SWAP_USER = """
    import swaplib

    def handler(event, context):
        return {}
    """

SWAP_LATER = """
    import json

    def handler(event, context):
        return {"dumps": json.dumps({"a": 1})}
    """


def swap_app(root: Path) -> Path:
    """User imports swaplib, which replaces sys.modules["json"]; Wrapper, loaded after
    User (functions load in name order), imports json and calls its dumps ($.r1)."""
    app = write_app(root, sequence("User", "Wrapper"),
                    {"User": SWAP_USER, "Wrapper": SWAP_LATER}, settings("User"))
    _install(app, "swaplib", SWAP_LIBRARY)
    return app


# Data in flight through the runtime's queues: Thief starts threads that wait on every
# queue of the runtime's worker threads (reached through threading.enumerate()), take
# what passes -- the next function's job, a function's result -- search it, and put it
# back. Its next invocation reports what they found and what refused them.
QUEUE_THIEF = """
    import threading, time

    FOUND, REFUSED = [], []

    def strings(value, depth=0):
        if depth > 8:
            return
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for item in list(value.values()):
                yield from strings(item, depth + 1)
        elif isinstance(value, (list, tuple)):
            for item in value:
                yield from strings(item, depth + 1)
        elif callable(value) and getattr(value, "__closure__", None):
            for cell in value.__closure__:
                try:
                    yield from strings(cell.cell_contents, depth + 1)
                except ValueError:
                    pass

    def queues():
        for thread in threading.enumerate():
            worker = getattr(getattr(thread, "_target", None), "__self__", None)
            for name in ("inbox", "outbox"):
                if hasattr(worker, name):
                    yield getattr(worker, name)

    def grab(queue):
        end = time.monotonic() + 3
        while time.monotonic() < end:
            try:
                # Waiting from before the runtime's own waiter: first to be handed
                # the next item (a SimpleQueue hands it to its longest waiter).
                item = queue.get(timeout=end - time.monotonic())
            except Exception as exc:
                if type(exc).__name__ != "Empty":
                    REFUSED.append(type(exc).__name__)
                    return
                continue
            FOUND.extend(s for s in strings(item) if "secret" in s)
            queue.put(item)

    def tap_every_queue():  # workers start on first use: look again until the end
        tapped, end = set(), time.monotonic() + 3
        while time.monotonic() < end:
            for queue in queues():
                if id(queue) not in tapped:
                    tapped.add(id(queue))
                    for _ in range(4):  # four takers for each of the runtime's one
                        threading.Thread(target=grab, args=(queue,), daemon=True).start()
            time.sleep(0.001)

    def handler(event, context):
        if event.get("read"):
            return {"stolen": sorted(set(FOUND)), "refused": sorted(set(REFUSED))}
        threading.Thread(target=tap_every_queue, daemon=True).start()
        return {"tapping": True}
    """

PASS_ON = """
    def handler(event, context):
        return {"passed": len(str(event))}
    """


def queue_tap_app(root: Path) -> Path:
    """Source and Sink run once (their warm threads then wait on their queues); Thief
    taps the runtime's queues ($.tap) and a Wait lets its taps start; Source makes a
    secret, Sink gets it as its input; after a Wait, Thief reports what its taps took
    ($.read). The machine's TimeoutSeconds makes none hand results back through the
    queues as mpk does (POOL.run; without it none relays, which no taker outwaits)."""
    workflow = chain(("Warm", task("Source", ResultPath="$.warm")),
                     ("WarmSink", task("Sink", InputPath="$.warm", ResultPath="$.warm")),
                     ("Tap", task("Thief", ResultPath="$.tap")),
                     ("Settle", {"Type": "Wait", "Seconds": 1}),  # the taps are in place
                     ("Victim", task("Source", ResultPath="$.victim")),
                     ("Sink", task("Sink", InputPath="$.victim", ResultPath="$.sink")),
                     ("Wait", {"Type": "Wait", "Seconds": 3}),
                     ("Read", task("Thief", Parameters={"read": True}, ResultPath="$.read")))
    workflow["TimeoutSeconds"] = 60
    return write_app(root, workflow, {"Source": SOURCE, "Thief": QUEUE_THIEF,
                                      "Sink": PASS_ON}, settings("Thief"))


# Class 3 by reachability: from every module in sys.modules, follow attributes,
# containers, closures, bound methods and weak references -- no gc, no frames -- and
# report every path to the needle. The Victim's data in flight must be on none of them;
# its module's own constant (reachable under none through the function registry) is
# the walk's control.
WALKER = """
    import collections, sys, weakref

    ATTRIBUTES = ("__dict__", "__closure__", "__self__", "__func__", "__defaults__",
                  "__kwdefaults__", "__wrapped__", "cell_contents", "__globals__",
                  "args", "keywords", "func", "maps", "_target", "_args", "_kwargs")

    def children(value, path):
        if isinstance(value, dict):
            for key, item in list(value.items()):
                yield key, f"{path}.key"
                yield item, f"{path}[{key!r}]"
        elif isinstance(value, (list, tuple, set, frozenset, collections.deque)):
            for i, item in enumerate(list(value)):
                yield item, f"{path}[{i}]"
        if isinstance(value, weakref.ref):
            yield value(), f"{path}()"
        for name in ATTRIBUTES:
            try:
                yield getattr(value, name), f"{path}.{name}"
            except Exception:
                pass
        for klass in type(value).__mro__:
            slots = klass.__dict__.get("__slots__", ())
            for name in [slots] if isinstance(slots, str) else slots:
                try:
                    yield getattr(value, name), f"{path}.{name}"
                except Exception:
                    pass

    def handler(event, context):
        needles = {event["needle"][::-1]: [], event["control"][::-1]: []}
        seen = set()
        todo = [(module, f"sys.modules[{name!r}]") for name, module in
                list(sys.modules.items())]
        while todo:
            value, path = todo.pop()
            if id(value) in seen or isinstance(value, (int, float, bytes, type(None))):
                continue
            seen.add(id(value))
            if isinstance(value, str):
                for needle, paths in needles.items():
                    if needle in value:
                        paths.append(path)
                continue
            todo.extend(children(value, path))
        return {"in flight": needles[event["needle"][::-1]][:5],
                "control": bool(needles[event["control"][::-1]]), "walked": len(seen)}
    """

CONSTANT = "holder-module-constant-0815"

HOLDER = f"""
    CONSTANT = {CONSTANT!r}

    def handler(event, context):
        return {{"data": "".join(reversed({SECRET[::-1]!r}))}}  # made now: in flight
    """


def walker_app(root: Path) -> Path:
    """Holder's result is in the state data while Walker walks ($.walk)."""
    workflow = chain(("Holder", task("Holder", ResultPath="$.held")),
                     ("Walk", task("Walker", Parameters={"needle": SECRET[::-1],
                                                         "control": CONSTANT[::-1]},
                                   ResultPath="$.walk")))
    return write_app(root, workflow, {"Holder": HOLDER, "Walker": WALKER},
                     settings("Walker"))


# A shared cache redirected: Thief rebinds re's pattern caches to a shared dict it can
# reach (a stdlib module's namespace, where storing data is not storing code); Victim's
# re.compile of a pattern built from its secret then lands there, and Thief reads it.
REDIRECT_THIEF = """
    import re, colorsys

    def handler(event, context):
        if re._cache2 is not vars(colorsys):
            re._cache = re._cache2 = vars(colorsys)
            return {"redirected": True}
        return {"stolen": [key[1] for key in vars(colorsys) if isinstance(key, tuple)]}
    """

REDIRECT_VICTIM = f"""
    import re

    SECRET = {SECRET!r}

    def handler(event, context):
        return {{"matched": bool(re.compile(re.escape(SECRET)).match(SECRET))}}
    """


def cache_redirect_app(root: Path) -> Path:
    """Thief redirects re's caches, Victim compiles its secret, Thief reads ($.r2)."""
    return write_app(root, sequence("Thief", "Victim", "Thief"),
                     {"Thief": REDIRECT_THIEF, "Victim": REDIRECT_VICTIM},
                     settings("Thief"))
