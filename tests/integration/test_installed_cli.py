"""A plain ``pip install .`` (a wheel, not editable) gives a working ``faastlane``.

One wheel of the working tree is built and installed into a fresh venv per module; every
command then runs from a folder outside the checkout, with the checkout on no path, on
an app written there: validate, compose, run, package (Lambda and OpenWhisk) and
inspect. What exists only in a checkout (the cpython-mpk runtime) must be one line
saying how to name it, never a traceback.

The venv is made without pip (ensurepip alone takes seconds); this interpreter's pip
installs the wheel into it (``pip --python``), and the wheel's requirements are copied
from this environment when it has versions that satisfy them (else pip fetches them).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from faastlane.inspector.gate import SHIPPED_SOURCES, compile_gate

REPO = Path(__file__).resolve().parents[2]
MODULES = REPO / "cpython-mpk" / "Modules"
SHIPPED = REPO / "composer" / "faastlane" / "inspector" / "gate_source"
# What a wheel is built from (pyproject.toml's source roots): nothing else of the checkout.
SOURCE_TREE = ("setup.py", "setup.cfg", "pyproject.toml", "MANIFEST.in", "README.md",
               "composer", "profiler", "bench")
COMMANDS = {"validate", "compose", "run", "package", "deploy", "invoke", "inspect", "profile",
            "graph", "serve", "init", "bench", "cost"}
REASON = "test codec; reviewed: its WRPKRU is in a routine never called"


def test_the_shipped_gate_source_is_cpython_mpks() -> None:
    """The gate's C files in the package are byte for byte cpython-mpk's, and are all the
    gate needs: they cannot drift from what the runtime is built from."""
    assert sorted(p.name for p in SHIPPED.iterdir()) == sorted(SHIPPED_SOURCES)
    for name in SHIPPED_SOURCES:
        assert (SHIPPED / name).read_bytes() == (MODULES / name).read_bytes(), (
            f"{SHIPPED / name} differs from {MODULES / name}: "
            f"cp cpython-mpk/Modules/{name} composer/faastlane/inspector/gate_source/")
    for name in SHIPPED_SOURCES:  # every local header they include is shipped too
        text = (SHIPPED / name).read_text()
        assert set(re.findall(r'#include\s+"([^"]+)"', text)) <= set(SHIPPED_SOURCES)


# --- the installed venv ------------------------------------------------------------------


@dataclass(frozen=True)
class Installed:
    venv: Path
    work: Path  # a folder outside the checkout: every command's working directory
    env: dict[str, str]

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def faastlane(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.venv / "bin" / "faastlane"), *args], cwd=self.work,
                              env=self.env, capture_output=True, text=True, timeout=600)

    def start(self, program: str, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([str(self.venv / "bin" / program), *args], cwd=self.work,
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def python_says(self, code: str) -> str:
        done = subprocess.run([str(self.python), "-c", code], cwd=self.work, env=self.env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout


def _run(*command: str | Path, cwd: Path) -> None:
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}{done.stderr[-2000:]}"


def _builds_wheels_here() -> bool:
    """Can this environment's setuptools build a wheel without an isolated build env
    (setuptools >= 70.1 has bdist_wheel; before, the ``wheel`` package brings it)?"""
    try:
        version = tuple(int(p) for p in metadata.version("setuptools").split(".")[:2])
    except metadata.PackageNotFoundError:
        return False
    try:
        metadata.version("wheel")
        return True
    except metadata.PackageNotFoundError:
        return version >= (70, 1)


def _requirement_closure(site: Path) -> tuple[list[metadata.Distribution], list[str]]:
    """faastlane's install requirements and theirs: the distributions of this environment
    that satisfy them, and the specs it cannot satisfy (for pip)."""
    (installed,) = [d for d in metadata.distributions(path=[str(site)])
                    if d.metadata["Name"] == "faastlane"]
    # Each with the extras its dependant asked for (moto[server] brings flask).
    pending = [(Requirement(r), frozenset()) for r in installed.requires or []]
    found: dict[str, metadata.Distribution] = {}
    missing: list[str] = []
    while pending:
        requirement, wanted = pending.pop()
        if requirement.marker and not any(requirement.marker.evaluate({"extra": extra})
                                          for extra in {"", *wanted}):
            continue
        key = requirement.name.lower().replace("_", "-")
        if requirement.extras:
            key += "[" + ",".join(sorted(requirement.extras)) + "]"
        if key in found:
            continue
        try:
            dist = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            dist = None
        if dist is None or not requirement.specifier.contains(dist.version, prereleases=True):
            missing.append(str(requirement))
            continue
        found[key] = dist
        pending.extend((Requirement(r), frozenset(requirement.extras))
                       for r in dist.requires or [])
    return list({d.metadata["Name"]: d for d in found.values()}.values()), missing


def _copy_distribution(dist: metadata.Distribution, site: Path) -> None:
    """A distribution's files under site-packages (its RECORD), as pip had put them."""
    for name in dist.files or []:
        if name.parts[0] == ".." or "__pycache__" in name.parts:
            continue  # console scripts: none of these libraries' are used
        source = Path(str(dist.locate_file(name)))
        if source.is_file():
            target = site / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("installed")
    source = root / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCE_TREE:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, ignore=ignore)
        elif (REPO / name).is_file():
            shutil.copy2(REPO / name, source / name)
    # The wheel, as `pip install .` builds it (without pip's isolated build env when this
    # environment can build wheels: that env comes from the package index).
    isolation = ["--no-build-isolation"] if _builds_wheels_here() else []
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation,
         "-w", root / "wheels", source, cwd=root)
    (wheel,) = (root / "wheels").glob("faastlane-*.whl")
    venv = root / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=root)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q",
           "--disable-pip-version-check"]
    _run(*pip, "--no-deps", wheel, cwd=root)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    copied, missing = _requirement_closure(site)
    for dist in copied:
        _copy_distribution(dist, site)
    if missing:
        _run(*pip, *missing, cwd=root)
    _run(sys.executable, "-m", "pip", "--python", python, "check", cwd=root)

    work = root / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV",
                        "FAASTLANE_PYTHON_PREFIX", "PYTHONSAFEPATH")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", PYTHONNOUSERSITE="1",
               FAASTLANE_CACHE=str(root / "cache"))
    return Installed(venv, work, env)


# --- an app of the user's own, outside the checkout --------------------------------------

WORKFLOW = {
    "Comment": "double n, then three branches: n + 1, n squared, and a native function",
    "StartAt": "Double",
    "States": {
        "Double": {"Type": "Task", "Resource": "double", "Next": "Branches"},
        "Branches": {"Type": "Parallel", "End": True, "Branches": [
            {"StartAt": "AddOne",
             "States": {"AddOne": {"Type": "Task", "Resource": "add_one", "End": True}}},
            {"StartAt": "Square",
             "States": {"Square": {"Type": "Task", "Resource": "square", "End": True}}},
            {"StartAt": "Native",
             "States": {"Native": {"Type": "Task", "Resource": "native", "End": True}}},
        ]},
    },
}
FUNCTIONS = {
    "double": "def handler(event, context):\n    return {'n': event['n'] * 2}\n",
    "add_one": "def lambda_handler(event, context):\n    return event['n'] + 1\n",
    "square": "def main(params):\n    return params['n'] ** 2\n",
}
NATIVE_HANDLER = "def handler(event, context):\n    return {'native': context.function_name}\n"
# A vendor library with a bare WRPKRU in a routine (waived below, with its SHA-256).
CODEC = """
    .text
    .globl codec_reset
    .type codec_reset, @function
codec_reset:
    wrpkru
    ret
    .size codec_reset, .-codec_reset
"""


def _compile(*args: str | Path) -> None:
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.fail("no C compiler (gcc): the native test libraries are compiled at test "
                    "time; apt-get install gcc", pytrace=False)
    done = subprocess.run([compiler, "-shared", "-fPIC", "-nostdlib", "-O2",
                           *(str(a) for a in args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def app(installed: Installed) -> Path:
    """functions/*.py of three handler styles, and functions/native/ shipping the
    runtime's gate (compiled from cpython-mpk's own source) and a waived codec."""
    root = installed.work / "myapp"
    (root / "functions" / "native").mkdir(parents=True)
    (root / "workflow.json").write_text(json.dumps(WORKFLOW, indent=2))
    for name, code in FUNCTIONS.items():
        (root / "functions" / f"{name}.py").write_text(code)
    native = root / "functions" / "native"
    (native / "lambda_function.py").write_text(NATIVE_HANDLER)
    _compile("-I", MODULES, MODULES / "mpk_pkru.c", "-o", native / "libgate.so")
    assembly = installed.work / "codec.s"
    assembly.write_text(textwrap.dedent(CODEC))
    _compile(assembly, "-o", native / "libcodec.so")
    digest = hashlib.sha256((native / "libcodec.so").read_bytes()).hexdigest()
    (root / "faastlane.json").write_text(json.dumps({"inspector_waivers": [
        {"file": "functions/native/libcodec.so", "reason": REASON, "sha256": digest}]}))
    return root


@pytest.fixture(scope="module")
def action(installed: Installed, app: Path) -> Path:
    done = installed.faastlane("compose", "myapp", "-o", "action")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote action:")
    return installed.work / "action"


def _one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("faastlane: error: ")
    return line


# --- the tests -----------------------------------------------------------------------------


def test_it_runs_the_installed_package_not_the_checkout(installed: Installed) -> None:
    said = json.loads(installed.python_says(
        "import json, sys, faastlane, faastlane_profiler\n"
        "from faastlane.checkout import checkout_root\n"
        "from faastlane.inspector.gate import GATE_SOURCE\n"
        "print(json.dumps({'faastlane': faastlane.__file__, 'profiler': "
        "faastlane_profiler.__file__, 'path': sys.path, 'checkout': checkout_root(), "
        "'gate_source': GATE_SOURCE}))"))
    site = str(installed.venv)
    assert said["faastlane"].startswith(site) and said["profiler"].startswith(site)
    assert said["checkout"] is None
    assert not [p for p in said["path"] if p and Path(p).resolve().is_relative_to(REPO)]
    # The gate's C source is package data, and compiles to the gate cpython-mpk's does.
    assert said["gate_source"].startswith(site) and Path(said["gate_source"]).is_file()
    shipped = installed.python_says("from faastlane.inspector.gate import compile_gate; "
                                    "print(compile_gate().hex())")
    assert bytes.fromhex(shipped.strip()) == compile_gate(str(MODULES / "mpk_pkru.c"))


def test_every_module_imports_and_every_command_has_help(installed: Installed) -> None:
    """Nothing installed imports what is not installed (the benchmark harness, say)."""
    failed = installed.python_says(
        "import importlib, pkgutil, faastlane, faastlane_profiler\n"
        "failed = []\n"
        "for package in (faastlane, faastlane_profiler):\n"
        "    for module in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "        if module.name.endswith('.__main__'):\n"
        "            continue\n"
        "        try:\n"
        "            importlib.import_module(module.name)\n"
        "        except Exception as exc:\n"
        "            failed.append(f'{module.name}: {exc!r}')\n"
        "print('\\n'.join(failed))")
    assert failed.strip() == ""
    top = installed.faastlane("--help")
    assert top.returncode == 0, top.stderr
    listed = set(re.findall(r"^    (\w+)\s", top.stdout, re.MULTILINE))
    assert COMMANDS <= listed, top.stdout
    helps = {command: installed.start("faastlane", command, "--help")  # all at once
             for command in sorted(listed)}
    for command, process in helps.items():
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, (command, err)
        assert out.startswith(f"usage: faastlane {command}"), (command, out)
    version = installed.faastlane("--version")
    assert version.stdout.strip() == f"faastlane {metadata.version('faastlane')}"


def test_validate(installed: Installed, app: Path) -> None:
    done = installed.faastlane("validate", "myapp")
    assert (done.returncode, done.stdout.strip()) == (0, "myapp/workflow.json is valid")
    broken = installed.work / "broken"
    shutil.copytree(app, broken)
    workflow = json.loads((broken / "workflow.json").read_text())
    workflow["States"]["Double"]["Next"] = "Nowhere"
    (broken / "workflow.json").write_text(json.dumps(workflow))
    done = installed.faastlane("validate", "broken", "--json")
    assert done.returncode == 1
    problems = {p["pointer"]: p["message"] for p in json.loads(done.stdout)}
    assert "Nowhere" in problems["/States/Double/Next"]


def test_compose_writes_a_self_contained_action(installed: Installed, action: Path) -> None:
    for name in ("orchestrator.py", "plan.json", "__main__.py", "lambda_function.py",
                 "inspection.json", "faastlane_runtime/__init__.py", "functions/double.py",
                 "functions/native/libgate.so"):
        assert (action / name).is_file(), name
    # The action is its own program, here run by the venv's interpreter.
    input_file = installed.work / "input.json"
    input_file.write_text('{"n": 5}')
    done = subprocess.run([str(installed.python), str(action), "--input-file",
                           str(input_file)], cwd=installed.work, env=installed.env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [11, 100, {"native": "native"}]


def test_run_prints_the_output_and_a_failure(installed: Installed, app: Path) -> None:
    done = installed.faastlane("run", "myapp", "--input", '{"n": 3}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [7, 36, {"native": "native"}]
    failed = installed.faastlane("run", "myapp", "--input", '{"m": 3}')
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["Error"] == "KeyError"


def test_inspect_reports_the_gate_and_the_waived_codec(installed: Installed,
                                                       action: Path) -> None:
    """As documented: the runtime's gate is accepted, the codec's WRPKRU is a finding
    waived by the action's own record (exit 0); without the waiver it fails (exit 1)."""
    done = installed.faastlane("inspect", "action")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WAIVED (" + REASON + "): functions/native/libcodec.so" in done.stdout
    assert done.stdout.strip().splitlines()[-1].endswith(
        "1 runtime gate(s) accepted; 0 finding(s), 1 waived")
    report = json.loads(installed.faastlane("inspect", "action", "--json").stdout)
    assert report["gate"] and report["gate_note"] is None
    files = {f["file"]: f for f in report["files"]}
    assert len(files["functions/native/libgate.so"]["gates"]) == 1
    assert files["functions/native/libgate.so"]["findings"] == []
    (finding,) = files["functions/native/libcodec.so"]["findings"]
    assert finding["kind"] == "wrpkru" and finding["waived"]["reason"] == REASON
    bare = installed.faastlane("inspect", "action/functions/native/libcodec.so")
    assert bare.returncode == 1
    assert "FINDING: libcodec.so" in bare.stdout and "wrpkru  <==" in bare.stdout


def test_package_for_lambda(installed: Installed, app: Path) -> None:
    done = installed.faastlane("package", "myapp", "--target", "lambda", "-o", "lambda")
    assert done.returncode == 0, done.stderr
    assert "runtime python3.13, handler lambda_function.handler" in done.stdout
    out = installed.work / "lambda"
    assert sorted(p.name for p in out.iterdir()) == ["function.zip", "layer.zip"]
    function = zipfile.ZipFile(out / "function.zip").namelist()
    assert {"lambda_function.py", "orchestrator.py", "plan.json", "functions/double.py",
            "functions/native/libgate.so"} <= set(function)
    layer = zipfile.ZipFile(out / "layer.zip").namelist()
    assert "python/faastlane_runtime/__init__.py" in layer
    assert "python/faastlane_runtime/orchestrator.py" in layer


def test_package_for_openwhisk(installed: Installed, app: Path) -> None:
    done = installed.faastlane("package", "myapp", "--target", "openwhisk", "-o", "ow.zip")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("wsk action create myapp ow.zip --kind python:3.11")
    names = set(zipfile.ZipFile(installed.work / "ow.zip").namelist())
    assert {"__main__.py", "orchestrator.py", "plan.json", "faastlane_runtime/__init__.py",
            "faastlane_runtime/orchestrator.py", "functions/square.py"} <= names


def test_what_only_a_checkout_has_is_one_line(installed: Installed, app: Path) -> None:
    """The custom runtime layer needs a built cpython-mpk: say how to name one."""
    done = installed.faastlane("package", "myapp", "--target", "lambda", "--custom-runtime",
                               "-o", "custom")
    line = _one_error_line(done)
    assert "--python-prefix" in line and "FAASTLANE_PYTHON_PREFIX" in line
    assert "make -C cpython-mpk" in line
    assert not (installed.work / "custom" / "runtime-layer.zip").exists()
    named = installed.faastlane("package", "myapp", "--target", "lambda", "--custom-runtime",
                                "--python-prefix", "no-such-prefix", "-o", "custom")
    line = _one_error_line(named)
    assert "the cpython-mpk runtime is not built" in line
    assert str(installed.work / "no-such-prefix") in line
    # `faastlane inspect` without arguments scans the cpython-mpk runtime: this very
    # interpreter when it is that runtime, else there is none to scan here.
    runtime = installed.python_says("import sys; print('_faastlane' in "
                                    "sys.builtin_module_names)").strip() == "True"
    if not runtime:
        line = _one_error_line(installed.faastlane("inspect"))
        assert "--python EXE" in line and "FAASTLANE_PYTHON_PREFIX" in line


def test_bench_and_cost_of_an_app_of_ones_own(installed: Installed) -> None:
    """`faastlane bench APP` needs nothing of the checkout: a smoke run on the user's
    app and input prints the summary against both baselines and the price."""
    root = installed.work / "benchapp"
    (root / "functions").mkdir(parents=True)
    (root / "workflow.json").write_text(json.dumps({"StartAt": "Double", "States": {
        "Double": {"Type": "Task", "Resource": "double", "End": True}}}))
    (root / "functions" / "double.py").write_text(FUNCTIONS["double"])
    done = installed.faastlane("bench", "benchapp", "--input", '{"n": 4}', "--quick")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("benchapp: 2 rounds per system")
    for system in ("Faastlane-NS", "OpenWhisk-style", "StepFunctions-style"):
        assert f"\n{system} " in done.stdout
    assert "| benchapp |" in done.stdout  # priced
    examples = installed.faastlane("bench", "--quick")  # the examples are the checkout's
    line = _one_error_line(examples)
    assert "needs a source checkout" in line and "faastlane bench APP" in line
