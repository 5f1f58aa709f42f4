"""Warm sandboxed function processes (``--isolation process``), run through the real CLI.

Each isolated function lives in its own process for the Orchestrator's life: its module
state persists across invocations, nothing of other functions is in its address space,
and every way it can die is the state's ASL error, after which it is replaced. The
attacks are the isolation issue's doors, each with a control under ``--isolation none``
showing that the same code does read the data there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .apps import ROOT, chain, faastlane, task, write_app

WHO = """
import os

def handler(event, context):
    return {"pid": os.getpid()}
"""

COUNTER = """
import os

COUNT = 0
SECRET_OF_COUNTER = "counter-module-secret"

def handler(event, context):
    global COUNT
    COUNT += 1
    return {"count": COUNT, "pid": os.getpid()}
"""

PEEK = """
import os, sys

def handler(event, context):
    # Another function's module, by any name it could be under in this process.
    others = sorted(n for n, m in list(sys.modules.items())
                    if getattr(m, "SECRET_OF_COUNTER", None) is not None)
    return {"others": others, "pid": os.getpid()}
"""


def _run(app: Path, *args: str, input_: object = None) -> dict:
    done = faastlane("run", str(app), "--input", json.dumps(input_ or {}), *args)
    assert done.code == 0, done.stderr
    return done.json


def test_a_sandboxed_function_stays_warm_and_apart_from_the_orchestrator(app_dir: Path
                                                                         ) -> None:
    write_app(app_dir, chain(("Orch", task("who", ResultPath="$.orch")),
                             ("C1", task("counter", ResultPath="$.c1")),
                             ("C2", task("counter", ResultPath="$.c2")),
                             ("C3", task("counter", ResultPath="$.c3")),
                             ("Peek", task("peek", ResultPath="$.peek"))),
              {"who": WHO, "counter": COUNTER, "peek": PEEK},
              settings={"untrusted": ["counter", "peek"]})
    out = _run(app_dir, "--trace", str(app_dir.parent / "trace.jsonl"))
    # Module state persists across invocations, as in a warm Lambda container ...
    assert [out[k]["count"] for k in ("c1", "c2", "c3")] == [1, 2, 3]
    # ... in one process for the function, not the Orchestrator (where the trusted
    # function runs as a thread) nor the other untrusted function's.
    pids = {out["orch"]["pid"], out["c1"]["pid"], out["peek"]["pid"]}
    assert len(pids) == 3 and out["c1"]["pid"] == out["c3"]["pid"]
    # The other function's module is not in its process at all.
    assert out["peek"]["others"] == []
    records = [json.loads(line) for line in
               (app_dir.parent / "trace.jsonl").read_text().splitlines()[1:]]
    placements = {r["function"]: r["placement"] for r in records if r["type"] == "Function"}
    assert placements == {"who": "thread", "counter": "sandbox", "peek": "sandbox"}

    # The control: without isolation, the same function finds the other's module.
    shared = _run(app_dir, "--isolation", "none")
    assert shared["peek"]["others"] != [] and len({shared["orch"]["pid"],
                                                   shared["c1"]["pid"]}) == 1


# One function that tries every door to data that is not its own: the secret is in the
# execution input, which the Parallel's other branch gets and this one does not.
ATTACKER = r'''
import ctypes, gc, json, os, socket, struct, subprocess, sys

SECRET = "S3CR3T-" + "7f1e"


def _try(door):
    try:
        return door()
    except Exception as exc:
        return f"refused: {type(exc).__name__}"


def _found(value):
    return isinstance(value, str) and SECRET in value and value != SECRET


def _scan_heap():
    # Strings are not tracked by gc: look in the containers that are.
    for o in gc.get_objects():
        values = o.values() if isinstance(o, dict) else o if isinstance(o, (list, tuple)) else ()
        if any(_found(v) for v in values):
            return True
    return "refused: not in this process"


def _read_mem(pid):
    # Reads the whole writable heap of the process, looking for the secret.
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            if "rw" not in fields[1] or (len(fields) > 5 and fields[5].startswith("[v")):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(start)
                chunk = mem.read(end - start)
            except OSError:
                continue
            at = chunk.find(SECRET.encode())
            while at >= 0:  # not our own constant: the secret goes on
                if chunk[at + len(SECRET):at + len(SECRET) + 1] == b"-":
                    return True
                at = chunk.find(SECRET.encode(), at + 1)
    return "refused: not found"


def _open_fds(pid):
    # Its descriptors (sockets to other sandboxes, the result pipe, files it reads).
    opened = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            os.close(os.open(f"/proc/{pid}/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK))
            opened += 1
        except OSError as exc:
            last = exc
    return opened > 0 or f"refused: {type(last).__name__}"


def _vm_readv(pid):
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(16)

    class IOVec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    with open(f"/proc/{pid}/maps") as maps:
        start = int(maps.readline().split("-")[0], 16)
    local, remote = IOVec(ctypes.addressof(buf), 16), IOVec(start, 16)
    got = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    return got == 16 or f"refused: errno {ctypes.get_errno()}"


def _ptrace(pid):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH: the tracee stops
        os.waitpid(pid, 0x40000000)  # __WALL: wait for that stop, else it stays stopped
        libc.ptrace(17, pid, 0, 0)  # PTRACE_DETACH
        return True
    return f"refused: errno {ctypes.get_errno()}"


def _child_reads(pid):
    code = ("import sys; f = open('/proc/%d/mem', 'rb', 0); "
            "f.seek(int(open('/proc/%d/maps').readline().split('-')[0], 16)); "
            "f.read(16); print('read')" % (pid, pid))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return done.stdout.strip() == "read" or "refused: " + done.stderr.strip()[-60:]


def _plant(path):
    # Code in another function's module, which its process would run when (re)started.
    with open(path, "a") as victim:
        victim.write("\n# planted\n")
    return True


def _other_sandboxes(own_pid):
    # Abstract Unix sockets are listed in /proc/net/unix: call every one but our own.
    names = set()
    with open("/proc/net/unix") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            if len(fields) >= 8 and fields[7].startswith("@faastlane-"):
                names.add(fields[7][1:])
    answered = []
    for name in sorted(names):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(2)
        try:
            sock.connect("\0" + name)
            request = json.dumps({"op": "spawn", "f": 0, "k": 0}).encode()
            sock.sendall(struct.pack("!I", len(request)) + request)
            if sock.recv(4):
                answered.append(name)
        except OSError:
            pass
        finally:
            sock.close()
    return answered if answered else f"refused: {len(names)} sockets, none answered"


def handler(event, context):
    target = event["orchestrator"]
    return {
        "pid": os.getpid(),
        "heap": _try(_scan_heap),
        "mem": _try(lambda: _read_mem(target)),
        "environ": _try(lambda: open(f"/proc/{target}/environ", "rb").read()[:4] != b""),
        "fds": _try(lambda: _open_fds(target)),
        "vm_readv": _try(lambda: _vm_readv(target)),
        "ptrace": _try(lambda: _ptrace(target)) if target != os.getpid() else "self",
        "child": _try(lambda: _child_reads(target)),
        "sockets": _try(lambda: _other_sandboxes(os.getpid())),
        "tamper": _try(lambda: _plant(os.path.join(os.path.dirname(__file__), "holder.py"))),
    }
'''

HOLDER = """
def handler(event, context):
    return {"held": len(event["secret"])}
"""


def _attack_app(app_dir: Path) -> Path:
    branches = [chain(("Hold", task("holder"))),
                chain(("Attack", task("attacker", Parameters={
                    "orchestrator.$": "$.orch.pid"})))]
    return write_app(app_dir, chain(("Orch", task("who", ResultPath="$.orch")),
                                    ("Both", {"Type": "Parallel", "Branches": branches,
                                              "ResultPath": "$.both", "End": True})),
                     {"who": WHO, "holder": HOLDER, "attacker": ATTACKER},
                     settings={"untrusted": ["attacker"]})


def test_a_sandboxed_function_reads_nothing_of_the_orchestrator_or_its_siblings(
        app_dir: Path) -> None:
    _attack_app(app_dir)
    secret = {"secret": "S3CR3T-7f1e-the-other-branch-has-it"}
    attack = _run(app_dir, input_=secret)["both"][1]
    assert attack["pid"] != _run(app_dir, input_=secret)["orch"]["pid"]
    for door in ("heap", "mem", "environ", "fds", "vm_readv", "ptrace", "child", "sockets",
                 "tamper"):
        assert attack[door] is not True and str(attack[door]).startswith("refused"), \
            (door, attack)

    # The control: the same function without isolation reads the secret through the
    # heap and the Orchestrator's memory file (its own process there), and plants code.
    shared = _run(app_dir, "--isolation", "none", input_=secret)["both"][1]
    assert shared["heap"] is True and shared["mem"] is True, shared
    assert shared["tamper"] is True, shared


TMP_WRITER = """
import os, tempfile

def handler(event, context):
    path = os.path.join(tempfile.gettempdir(), f"faastlane-sandbox-{os.getpid()}")
    with open(path, "w") as out:
        out.write("scratch")
    mode = os.stat(path).st_mode & 0o777
    os.remove(path)
    return {"mode": mode}
"""


def test_a_sandboxed_function_writes_its_own_files_under_tmp(app_dir: Path) -> None:
    write_app(app_dir, chain(("W", task("writer"))), {"writer": TMP_WRITER},
              settings={"untrusted": ["writer"]})
    assert _run(app_dir) == {"mode": 0o600}  # /tmp works as on Lambda; private to it


CRASHY = """
import os, signal, time

def handler(event, context):
    how = event.get("how")
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "exit":
        os._exit(3)
    if how == "memory":
        hog = bytearray(400 * 1024 * 1024)
        return len(hog)
    if how == "hang":
        time.sleep(60)
    return {"pid": os.getpid(), "fine": True}
"""


@pytest.mark.parametrize(("how", "error", "said"), [
    ("kill", "Runtime.ExitError", "signal: killed"),
    ("exit", "Runtime.ExitError", "exit status 3"),
    ("memory", "Runtime.OutOfMemory", "Runtime exited with error"),
    ("hang", "Sandbox.Timedout", "Task timed out after 2.00 seconds"),
])
def test_a_sandbox_that_dies_fails_its_state_and_is_replaced(app_dir: Path, how: str,
                                                              error: str, said: str) -> None:
    catch = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Again"}]
    write_app(app_dir, chain(("First", task("crashy", ResultPath="$.first")),
                             ("Crash", task("crashy", Parameters={"how": how},
                                            ResultPath="$.crash", Catch=catch)),
                             ("Again", task("crashy", ResultPath="$.again"))),
              {"crashy": CRASHY},
              settings={"untrusted": ["crashy"],
                        "functions": {"crashy": {"memory": 128, "timeout": 2}}})
    out = _run(app_dir)
    assert out["error"]["Error"] == error and said in out["error"]["Cause"], out["error"]
    # The next invocation works, in a new process (the old one is gone).
    assert out["again"]["fine"] is True
    assert out["again"]["pid"] != out["first"]["pid"]
    assert not _alive(out["first"]["pid"])


PIDFILE = """
import os, time

def handler(event, context):
    if event.get("wait"):
        time.sleep(60)
    return os.getpid()
"""


def _descendants(root: int) -> set[int]:
    """Every living process below ``root`` (a sandbox's /tmp is its own: the test
    finds its processes from outside)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def _wait_gone(pids: list[int], seconds: float = 10) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


@pytest.mark.parametrize("ending", ["end", "sigterm"])
def test_no_sandbox_outlives_its_orchestrator(app_dir: Path, ending: str) -> None:
    write_app(app_dir, chain(("A", task("pidfile", ResultPath="$.a")),
                             ("B", task("other", ResultPath="$.b"))),
              {"pidfile": PIDFILE, "other": PIDFILE},
              settings={"untrusted": ["pidfile", "other"]})
    command = [sys.executable, "-m", "faastlane", "run", str(app_dir), "--input",
               json.dumps({"wait": ending == "sigterm"})]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ})
    seen: set[int] = set()
    deadline = time.monotonic() + 120
    # the zygote and both sandboxes (and with "end", whatever else ran meanwhile)
    while time.monotonic() < deadline and proc.poll() is None and len(seen) < 3:
        seen |= _descendants(proc.pid)
        time.sleep(0.02)
    if ending == "sigterm":
        time.sleep(0.5)  # in the waiting invocation by now
        seen |= _descendants(proc.pid)
        proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == (0 if ending == "end" else 128 + signal.SIGTERM), err
    if ending == "end":
        output = json.loads(out)
        seen |= {output["a"], output["b"]}
    assert len(seen) >= 3, seen
    assert _wait_gone(sorted(seen)) == []


def test_sections_calling_a_sandboxed_function_reuse_its_warm_sandboxes(app_dir: Path
                                                                        ) -> None:
    workflow = chain(("M", {"Type": "Map", "ItemsPath": "$.items", "End": True,
                            "ItemProcessor": chain(("W", task("counter")))}))
    write_app(app_dir, workflow, {"counter": COUNTER}, settings={"untrusted": ["counter"]})
    out = _run(app_dir, "--vcpus", "2", input_={"items": list(range(12))})
    pids = {o["pid"] for o in out}
    # At most one sandbox per vCPU for the function, each warm: its invocations count up.
    assert 1 <= len(pids) <= 2
    for pid in pids:
        counts = sorted(o["count"] for o in out if o["pid"] == pid)
        assert counts == list(range(1, len(counts) + 1))
    assert sum(len([o for o in out if o["pid"] == p]) for p in pids) == 12


# The file system as each function's own container shows it (the containment issue's
# first class of doors): Keeper leaves a secret in its /tmp and has a token in its
# configured environment; Snoop, in its own sandbox, looks for both everywhere a file
# could hold them.
KEEPER = """
import os

def handler(event, context):
    path = "/tmp/keeper-secret"
    with open(path, "w") as out:
        out.write(event["secret"])
    os.chmod(path, 0o644)  # even readable by all: another container's /tmp is not there
    return {"path": path, "token_seen": os.environ.get("KEEPER_TOKEN", "")[:4]}
"""

SNOOP = '''
import gc
import os

def _try(door):
    try:
        return door()
    except Exception as exc:
        return f"refused: {type(exc).__name__}"

def _grep(top, needles, deep=True):
    found = []
    for folder, dirs, files in os.walk(top):
        if not deep:
            dirs.clear()  # a shared /tmp may hold a whole checkout: its own files only
        for name in files:
            path = os.path.join(folder, name)
            if os.path.realpath(path) == os.path.realpath(__file__):
                continue  # its own source names what it looks for
            try:
                with open(path, "rb") as handle:
                    data = handle.read(1 << 20)
            except OSError:
                continue
            found += [f"{path}: {n}" for n in needles if n.encode() in data]
    return found

def handler(event, context):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # The execution input in its own memory (a zygote's heap, inherited): looked for
    # before any list of its own holds the string.
    heap = any(isinstance(o, list) and "INPUT-ONLY-9d2" in o for o in gc.get_objects())
    needles = [event["secret"], "KEEPER-TOKEN-4c1d", "INPUT-ONLY-9d2"]
    return {
        "tmp_file": _try(lambda: open(event["path"]).read()),
        "tmp_listing": _try(lambda: sorted(os.listdir("/tmp"))),
        "action_files": _try(lambda: sorted(os.listdir(root))),
        "functions": _try(lambda: sorted(os.listdir(os.path.join(root, "functions")))),
        "grep_action": _grep(os.path.dirname(root), needles),  # and what lies beside it
        "grep_tmp": _grep("/tmp", needles, False) + _grep("/var/tmp", needles, False),
        "beside": _try(lambda: sorted(os.listdir(os.path.dirname(root)))),
        "environ": [k for k, v in os.environ.items() if "KEEPER" in k or "KEEPER" in v],
        "cwd": sorted(os.listdir(".")),
        "heap": heap,
        "write_tmp": _try(lambda: open("/tmp/snoop-scratch", "w").write("x")),
    }
'''


def _snoop_app(app_dir: Path) -> Path:
    return write_app(app_dir, chain(
        ("Keep", task("keeper", ResultPath="$.kept")),
        ("Snoop", task("snoop", Parameters={"secret.$": "$.secret",
                                            "path.$": "$.kept.path"}))),
        {"keeper": KEEPER, "snoop": SNOOP},
        settings={"sensitive": ["keeper"], "untrusted": ["snoop"],
                  "functions": {"keeper": {"environment": {
                      "KEEPER_TOKEN": "KEEPER-TOKEN-4c1d"}}}})


def test_a_sandbox_sees_only_its_own_container_files(app_dir: Path) -> None:
    _snoop_app(app_dir)
    # "unused": in the execution input, but no state hands it to Snoop
    secret = {"secret": "S3CR3T-in-keepers-tmp-0b7", "unused": ["INPUT-ONLY-9d2", [1]]}
    seen = _run(app_dir, "--isolation", "process", input_=secret)
    assert seen["tmp_file"].startswith("refused"), seen  # Keeper's /tmp is not Snoop's
    assert seen["grep_action"] == [] and seen["grep_tmp"] == [], seen
    assert seen["environ"] == [] and seen["heap"] is False, seen
    # Its task root: the runtime and its own code, not the workflow nor its sibling.
    assert "orchestrator.py" not in seen["action_files"], seen
    assert "plan.json" not in seen["action_files"], seen
    assert seen["functions"] == ["snoop.py"], seen
    assert seen["cwd"] == seen["action_files"], seen  # the view, not the folder it covers
    assert len(seen["beside"]) == 1, seen  # its task root alone: no run's input.json
    assert seen["write_tmp"] == 1, seen  # its own /tmp is writable, as on Lambda

    # The control: without isolation the same function finds both secrets.
    shared = _run(app_dir, "--isolation", "none", input_=secret)
    assert shared["tmp_file"] == secret["secret"], shared
    assert any("KEEPER-TOKEN-4c1d" in hit for hit in shared["grep_action"]), shared
    assert any("INPUT-ONLY-9d2" in hit for hit in shared["grep_action"]), shared
    assert shared["heap"] is True, shared


EXITS_AT_IMPORT = """
import os

os._exit(5)  # its module ends its process before any handler exists

def handler(event, context):
    return "never"
"""


def test_a_sandbox_that_dies_starting_fails_its_task_not_the_run(app_dir: Path) -> None:
    # Lambda: an init that exits the process is Runtime.ExitError on the invocation,
    # caught like any Task error; the states before it ran. (Its callers were waiting
    # in the dead sandbox's backlog: they are told, not left waiting.)
    write_app(app_dir, chain(("Before", task("who", ResultPath="$.before")),
                             ("Dies", task("dies", Catch=[{"ErrorEquals": ["States.ALL"],
                                                          "ResultPath": "$.error",
                                                          "Next": "After"}],
                                           Next="After")),
                             ("After", {"Type": "Pass", "End": True})),
              {"who": WHO, "dies": EXITS_AT_IMPORT}, settings={"untrusted": ["dies"]})
    done = faastlane("run", str(app_dir), "--isolation", "process", timeout=60)
    assert done.code == 0, done.stderr
    assert done.json["error"]["Error"] == "Runtime.ExitError", done.json
    assert "exit status 5" in done.json["error"]["Cause"], done.json
    assert "pid" in done.json["before"]


# Reads every writable mapping of its own process: what its sandbox was started with.
SELF_SCANNER = r'''
import os

def _in_own_memory(needle):
    found = False
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            if "rw" not in fields[1] or (len(fields) > 5 and fields[5].startswith("[v")):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            try:
                mem.seek(start)
                chunk = mem.read(end - start)
            except OSError:
                continue
            at = chunk.find(needle)
            while at >= 0 and not found:  # the value goes on with "!"; the needle does not
                found = chunk[at + len(needle):at + len(needle) + 1] == b"!"
                at = chunk.find(needle, at + 1)
    return found

def handler(event, context):
    # Built at run time: the constants of this module are no evidence.
    return {name: _in_own_memory(("%s-" % name.upper()).encode() + b"9d2c")
            for name in ("own", "trusted", "sibling", "workflow")}
'''

ENVIRONMENT_HOLDER = """
def handler(event, context):
    return {}
"""


def test_a_sandbox_holds_no_other_functions_environment_nor_the_workflow(
        app_dir: Path) -> None:
    # The zygote that forks sandboxes is a fresh interpreter: it never held the
    # Orchestrator's specs, environments or workflow, and each sandbox gets its own
    # environment from the Orchestrator directly.
    write_app(app_dir, chain(("Trusted", task("trusted_fn")), ("Sibling", task("sibling")),
                             ("Scan", task("scanner", Comment="WORKFLOW-9d2c!"))),
              {"trusted_fn": ENVIRONMENT_HOLDER, "sibling": ENVIRONMENT_HOLDER,
               "scanner": SELF_SCANNER},
              settings={"isolation": "process", "untrusted": ["sibling", "scanner"],
                        "trusted": ["trusted_fn"],
                        "functions": {"trusted_fn": {"environment": {"K": "TRUSTED-9d2c!"}},
                                      "sibling": {"environment": {"K": "SIBLING-9d2c!"}},
                                      "scanner": {"environment": {"K": "OWN-9d2c!"}}}})
    found = _run(app_dir)
    # The control: its own environment is in its memory, where the scan finds it.
    assert found == {"own": True, "trusted": False, "sibling": False, "workflow": False}
