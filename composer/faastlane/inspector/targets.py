"""What ``faastlane inspect`` looks at, and whose waivers apply.

- an **action** folder (``orchestrator.py`` + ``plan.json``): every ELF file in it, with
  the waivers its ``inspection.json`` records;
- an **app** folder (``workflow.json``): the ELF files under ``functions/``, with the
  waivers of ``faastlane.json``;
- a **Python** (``--python EXE``, the default being the cpython-mpk runtime): the
  interpreter binary, ``libpython`` if shared, ``lib-dynload``, its site-packages
  (numpy's and Pillow's extensions, say) and the system libraries all of those load
  (``ldd``), which the process maps as executable too;
- anything else: the file, or every ELF file under the folder.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

from .errors import InspectionError
from .scanner import Target, elf_targets
from .waivers import SETTING, Waiver, parse_waivers

RECORD_FILE = "inspection.json"  # written into every action by compose
_ACTION_MARKERS = ("orchestrator.py", "plan.json")
_APP_MARKER = "workflow.json"
_SETTINGS = "faastlane.json"
_FUNCTIONS = "functions"


def is_action(path: str) -> bool:
    return all(os.path.isfile(os.path.join(path, m)) for m in _ACTION_MARKERS)


def is_app(path: str) -> bool:
    return os.path.isfile(os.path.join(path, _APP_MARKER)) and not is_action(path)


def _json_file(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as exc:
        raise InspectionError(f"{path}: cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise InspectionError(f"{path}: not valid JSON: {exc.msg} (line {exc.lineno})") \
            from None


def waivers_in(path: str) -> list[Waiver]:
    """Waivers in a JSON file: ``faastlane.json``, ``inspection.json``, or a bare list."""
    if not os.path.exists(path):
        return []
    raw = _json_file(path)
    if isinstance(raw, dict):
        raw = raw.get(SETTING)
    return parse_waivers(raw, path)


def folder_targets(path: str) -> tuple[list[Target], list[Waiver]]:
    """The ELF files of an action, app or plain folder/file, and the waivers it carries."""
    if not os.path.exists(path):
        raise InspectionError(f"{path}: no such file or folder")
    if os.path.isdir(path) and is_action(path):
        return list(elf_targets(path)), waivers_in(os.path.join(path, RECORD_FILE))
    if os.path.isdir(path) and is_app(path):
        functions = os.path.join(path, _FUNCTIONS)
        found = list(elf_targets(functions, _FUNCTIONS + "/")) if os.path.isdir(functions) \
            else []
        return found, waivers_in(os.path.join(path, _SETTINGS))
    return list(elf_targets(path)), []


def python_targets(python: str, system_libraries: bool = True) -> list[Target]:
    """The ELF files an interpreter runs and can load: itself, lib-dynload, its
    site-packages, and (``system_libraries``) what all of those link against."""
    query = ("import json, sys, sysconfig, os; p = sysconfig.get_paths(); "
             "print(json.dumps({'exe': os.path.realpath(sys.executable), "
             "'stdlib': p['platstdlib'], 'site': sorted({p['purelib'], p['platlib']}), "
             "'libdir': sysconfig.get_config_var('LIBDIR') or '', "
             "'ldlibrary': sysconfig.get_config_var('LDLIBRARY') or ''}))")
    try:
        proc = subprocess.run([python, "-c", query], capture_output=True, text=True,
                              timeout=120)
    except OSError as exc:
        raise InspectionError(f"{python}: cannot run: {exc.strerror}") from None
    if proc.returncode != 0:
        raise InspectionError(f"{python}: cannot ask it for its paths: "
                              f"{proc.stderr.strip().splitlines()[-1:]}")
    paths = json.loads(proc.stdout)
    targets = [Target(paths["exe"], paths["exe"])]
    shared = os.path.join(paths["libdir"], paths["ldlibrary"])
    if paths["ldlibrary"].endswith(".so") or ".so." in paths["ldlibrary"]:
        targets.append(Target(shared, shared))
    for root in [os.path.join(paths["stdlib"], "lib-dynload"), *paths["site"]]:
        if os.path.isdir(root):
            targets.extend(Target(t.path, t.path) for t in elf_targets(root))
    if system_libraries:
        known = {os.path.realpath(t.path) for t in targets}
        for library in _loaded_libraries([t.path for t in targets]):
            if os.path.realpath(library) not in known:
                known.add(os.path.realpath(library))
                targets.append(Target(library, library))
    return targets


def _loaded_libraries(paths: list[str]) -> Iterator[str]:
    """Shared libraries the dynamic loader maps for ``paths``, as ``ldd`` resolves them
    (the loader itself included): the search order of the real loader, not a guess."""
    seen: set[str] = set()
    for start in range(0, len(paths), 64):
        proc = subprocess.run(["ldd", *paths[start:start + 64]], capture_output=True,
                              text=True)
        for line in proc.stdout.splitlines():
            line = line.strip()
            library = line.split("=>", 1)[1] if "=>" in line else line
            library = library.split(" (", 1)[0].strip()
            if library.startswith("/") and library not in seen and os.path.isfile(library):
                seen.add(library)
                yield library
