"""What a sandbox sees of the file system: its own function container's view.

On Lambda each function has its own container: a ``/tmp`` no other function shares, and
a task root holding its own code and its deployment package's libraries, not its
siblings' code nor the workflow. A sandbox gets the same from a mount namespace of its
own, made before it imports its function (:func:`contain`):

- **a private /tmp** (and ``/var/tmp``, ``/dev/shm``): a fresh tmpfs of Lambda's
  default ephemeral size, gone with the sandbox (a replaced sandbox starts with an empty
  one, as a new container does). Other runs' folders there, and what lies beside the
  action folder (``faastlane run``'s ``input.json``: the whole execution input, of which
  a state may get only a part), are not in its view;
- **the action folder as its task root**: a tmpfs over it, into which everything is
  bound back read-only except the workflow's own files (``orchestrator.py``, which
  carries every function's configuration, ``plan.json``, the definitions) and the
  other functions' code. What is neither -- the runtime, helper modules beside the
  functions, vendored packages -- stays, as a deployment package's libraries do;
- the interpreter's own folders under a covered place (a virtualenv or checkout under
  /tmp) are bound back read-only, so that the runtime and its libraries still import;
- the working directory is the view's root (as for functions on the Orchestrator's
  threads, and never the covered folder, which relative paths would still reach).

Mounts are made private first, so nothing propagates back to the Orchestrator's view.
Creating the namespace needs ``CAP_SYS_ADMIN`` (the Orchestrator runs as root) or an
unprivileged user namespace; where neither is allowed (a Docker container's default
seccomp profile, Lambda itself) :func:`contain` returns False and the sandbox runs with
the Orchestrator's view, which ``docs/security.md`` says.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .confine import load_libc

if TYPE_CHECKING:
    from ..engine.functions import FunctionSpec

_CLONE_NEWNS, _CLONE_NEWUSER = 0x00020000, 0x10000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT = 1, 2, 4, 32
_MS_BIND, _MS_REC, _MS_PRIVATE = 4096, 16384, 1 << 18
TMP = "/tmp"
TMP_SIZE_MB = 512  # Lambda's default ephemeral storage
SHM = "/dev/shm"
VAR_TMP = "/var/tmp"
SHM_SIZE_MB = 64  # Docker's default
# The action's files that describe the workflow rather than serve a function.
WORKFLOW_FILES = ("orchestrator.py", "plan.json", "workflow.json", "state_machines.json",
                  "inspection.json", ".faastlane-action.json", "__main__.py",
                  "lambda_function.py")


def _unshare() -> bool:
    """A mount namespace of this process's own: directly with CAP_SYS_ADMIN, else in a
    user namespace of its own (mapping its uid and gid to themselves)."""
    _, libc = load_libc()
    if libc.unshare(_CLONE_NEWNS) == 0:
        return True
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS) != 0:
        return False
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w", encoding="ascii") as handle:
            handle.write(text)
    return True


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    ctypes, libc = load_libc()
    if libc.mount(None if source is None else source.encode(), target.encode(),
                  None if fstype is None else fstype.encode(), ctypes.c_ulong(flags),
                  None if data is None else data.encode()) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"mount {target}: {os.strerror(code)}")


def hidden_paths(spec: FunctionSpec, specs: Iterable[FunctionSpec]) -> set[str]:
    """The action's paths (relative) a sandbox of ``spec`` must not see: the workflow's
    files and every other function's code (its own folder, or its module file where it
    shares ``functions/``)."""
    hidden = set(WORKFLOW_FILES)
    own = spec.own_folder or spec.module_file
    for other in specs:
        path = (other.own_folder or other.module_file).strip("/")
        if path != own.strip("/") and not own.startswith(path + "/"):
            hidden.add(path)
    return hidden


def _rebuild(source: str, target: str, relative: str, hidden: set[str],
             binds: list[tuple[str, str]]) -> None:
    """Recreate directory ``source`` (reached through the descriptor path) at ``target``
    (on the tmpfs): each entry bound back unless hidden; a directory holding hidden
    entries is recreated one level further down instead."""
    for entry in sorted(os.listdir(source)):
        rel = f"{relative}/{entry}" if relative else entry
        if rel in hidden:
            continue
        real, place = os.path.join(source, entry), os.path.join(target, entry)
        if os.path.isdir(real) and not os.path.islink(real):
            os.mkdir(place, 0o755)
            if any(h.startswith(rel + "/") for h in hidden):
                _rebuild(real, place, rel, hidden, binds)
                continue
        elif os.path.islink(real):
            os.symlink(os.readlink(real), place)
            continue
        else:
            with open(place, "w", encoding="utf-8"):
                pass  # a mount point for the file
        binds.append((real, place))


def _import_roots() -> set[str]:
    """The folders the loaded modules were imported from (an editable install's
    package is found by a finder, not through ``sys.path``)."""
    roots = set()
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or not os.path.isabs(path):
            continue
        levels = name.count(".") + (1 if os.path.basename(path).startswith("__init__.") else 0)
        for _ in range(levels + 1):
            path = os.path.dirname(path)
        roots.add(path)
    return roots


def _interpreter_paths(root: str, covered: list[str]) -> list[str]:
    """The interpreter's own folders (its prefixes, the import path) that lie under a
    covered place -- a virtualenv or a checkout under /tmp, say -- to bind back: never a
    covered place itself, the action folder or what holds it (the view shows those)."""
    found = set()
    for path in {sys.prefix, sys.exec_prefix, sys.base_prefix,
                 os.path.dirname(sys.executable), *sys.path, *_import_roots()}:
        if not path or not os.path.exists(path):
            continue
        # As the interpreter names it (a symlink on the way stays) and as it resolves.
        for form in {os.path.abspath(path), os.path.realpath(path)}:
            if form == root or form.startswith(root + "/") or root.startswith(form + "/"):
                continue
            if any(form.startswith(place + "/") for place in covered):
                found.add(form)
    kept: list[str] = []
    for path in sorted(found):  # a folder bound back brings what is under it
        if not any(path.startswith(k + "/") for k in kept):
            kept.append(path)
    return kept


def contain(root: str, hidden: set[str]) -> bool:
    """Give this process (a sandbox, before it imports its function and before its
    capabilities go) its own /tmp and its own view of the action folder ``root``, without
    the ``hidden`` paths (:func:`hidden_paths`); False where no mount namespace can be
    made (nothing changed then)."""
    root = os.path.realpath(root)
    if not _unshare():
        return False
    try:
        _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    except OSError:
        # "/" is no mount point (a chroot, as a bullseye root for the custom runtime's
        # test): mounts made now could propagate back, so none is made -- the namespace
        # stays the Orchestrator's view, as where none can be made at all.
        return False
    temporary = [(place, size) for place, size in
                 ((TMP, TMP_SIZE_MB), (VAR_TMP, TMP_SIZE_MB), (SHM, SHM_SIZE_MB))
                 if os.path.isdir(place)]  # /dev/shm: POSIX shared memory, semaphores
    covered = [place for place, _ in temporary]
    # What lies beside the action (a run's input.json, other actions) is not its.
    parent = os.path.dirname(root)
    beside = parent != "/" and not any(parent == t or parent.startswith(t + "/")
                                       for t in covered)
    if beside:
        covered.append(parent)
    kept = _interpreter_paths(root, covered)
    # The real folders, reachable through descriptors once covered (opened in the new
    # namespace: a bind mount's source must be one of its mounts).
    sources = {path: os.open(path, os.O_PATH | os.O_CLOEXEC) for path in [root, *kept]}
    folders = {path for path in kept if os.path.isdir(path)}  # before they are covered
    try:
        for place, size in temporary:
            _mount("tmpfs", place, "tmpfs", _MS_NOSUID | _MS_NODEV,
                   f"size={size}m,mode=1777")
        if beside:
            _mount("tmpfs", parent, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=755")
        binds = [(f"/proc/self/fd/{sources[path]}", path) for path in kept]
        for path in kept:
            if path in folders:
                os.makedirs(path, mode=0o755, exist_ok=True)
            else:  # a zip on the import path
                os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
                with open(path, "w", encoding="utf-8"):
                    pass
        # The action's path, hidden now by those (an action under /tmp or /var/tmp, as
        # `faastlane run` composes it): its view is made at the same path inside.
        os.makedirs(root, mode=0o755, exist_ok=True)
        _mount("tmpfs", root, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=755")
        _rebuild(f"/proc/self/fd/{sources[root]}", root, "", hidden, binds)
        for source, target in binds:
            _mount(source, target, None, _MS_BIND | _MS_REC)
            _mount(None, target, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY)
        _mount(None, root, None, _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    finally:
        for fd in sources.values():
            os.close(fd)
    # Onto the view: a working directory in the folder it covers would still reach the
    # hidden files by relative paths. The action's root, as for functions on threads.
    os.chdir(root)
    import importlib

    importlib.invalidate_caches()  # directory listings read before the view
    return True
