"""The custom runtime layer starts on Lambda's old glibc, not only on this machine's.

``provided.al2023`` runs on Amazon Linux 2023, whose glibc is 2.34; this machine's is
newer, so a runtime built here would not start there. ``make -C cpython-mpk lambda``
builds it in a Debian bullseye root (glibc 2.31) with the libraries it links bundled;
here the packaged layer is read ELF by ELF (``objdump -T``'s GLIBC_x.y, with pyelftools)
and its ``bootstrap`` is run inside a minimal bullseye root -- no libssl, libffi or
sqlite there -- against a local Runtime API endpoint, as Lambda runs it.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from faastlane.deploy import glibc
from integration.apps import ROOT, faastlane

from .deploy_apps import expected_small_output
from .runtime_api import RuntimeApi

pytestmark = [pytest.mark.integration, pytest.mark.mpk]

LAMBDA_PREFIX = ROOT / "cpython-mpk" / "build-lambda"
OLDROOT = ROOT / "cpython-mpk" / "oldroot.sh"
AL2023_GLIBC = (2, 34)


@pytest.fixture(scope="module")
def layer(small_app: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small app packaged for the custom runtime, unpacked as Lambda does: the
    function into task/, the layers into opt/ (a folder to bind into the old root)."""
    if not (LAMBDA_PREFIX / "bin" / "python3").exists():
        pytest.fail("cpython-mpk for Lambda is not built: run `make -C cpython-mpk lambda` "
                    "(make test does)", pytrace=False)
    root = tmp_path_factory.mktemp("custom-runtime")
    done = faastlane("package", str(small_app), "--target", "lambda", "--custom-runtime",
                     "-o", str(root / "zips"))
    assert done.code == 0, done.stderr
    assert "runtime provided.al2023" in done.stdout
    for archive, target in [("function.zip", "task"), ("runtime-layer.zip", "opt"),
                            ("layer.zip", "opt")]:
        (root / target).mkdir(exist_ok=True)
        subprocess.run(["unzip", "-q", "-o", str(root / "zips" / archive), "-d",
                        str(root / target)], check=True)  # Info-ZIP keeps modes and links
    return root


def test_no_elf_in_the_layer_needs_a_newer_glibc_than_al2023(layer: Path) -> None:
    newest = glibc.newest_needed(str(layer / "opt"))
    assert newest is not None  # the interpreter does link glibc
    version, path = newest
    assert version <= AL2023_GLIBC, f"{path} needs GLIBC_{glibc.dotted(version)}"
    interpreter = layer / "opt" / "cpython-mpk" / "bin"
    assert max(v for f in interpreter.iterdir() if f.is_file() and not f.is_symlink()
               for v in glibc.glibc_versions(str(f))) <= (2, 31)  # built on bullseye's
    # What glibc does not provide is in the layer, for the base image may lack it.
    bundled = {p.name for p in (layer / "opt" / "cpython-mpk" / "lib").glob("lib*.so*")}
    assert {"libssl.so.1.1", "libcrypto.so.1.1", "libffi.so.7", "libsqlite3.so.0"} <= bundled
    if shutil.which("objdump"):  # binutils' own reading agrees with ours
        dump = subprocess.run(["objdump", "-T", str(interpreter / "python3")],
                              capture_output=True, text=True, check=True).stdout
        assert "GLIBC_2.3" in dump and "GLIBC_2.32" not in dump and "GLIBC_2.35" not in dump


@pytest.fixture
def runtime_api() -> Iterator[RuntimeApi]:
    api = RuntimeApi()
    yield api
    api.close()


def test_the_bootstrap_answers_inside_a_bullseye_root(layer: Path, runtime_api: RuntimeApi,
                                                      tmp_path: Path) -> None:
    """Run as Lambda would, in a root with glibc 2.31 and nothing of this machine's:
    oldroot.sh binds the current folder at /work and chroots into the minimal root."""
    environment = [f"AWS_LAMBDA_RUNTIME_API={runtime_api.address}",
                   "LAMBDA_TASK_ROOT=/work/task", "_HANDLER=lambda_function.handler",
                   "AWS_LAMBDA_FUNCTION_NAME=faastlane-test", "AWS_LAMBDA_FUNCTION_VERSION=1",
                   "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=1024", "AWS_REGION=us-east-1"]
    probe = layer / "task" / "probe.py"  # which glibc and interpreter serve the call
    probe.write_text("import os, platform, ssl, sqlite3, sys\n\n"
                     "def handler(event, context):\n"
                     "    return {'libc': platform.libc_ver(), 'executable': sys.executable,\n"
                     "            'ssl': ssl.OPENSSL_VERSION, 'root': os.path.exists('/work')}\n")
    log = tmp_path / "runtime.log"
    for handler, check in [("lambda_function.handler", "workflow"), ("probe.handler", "probe")]:
        with log.open("ab") as out:
            process = subprocess.Popen(
                [str(OLDROOT), "run", "env", *environment, f"_HANDLER={handler}",
                 "/work/opt/bootstrap"], cwd=layer, stdout=out, stderr=subprocess.STDOUT)
        try:
            outcome = runtime_api.invoke({"name": "alan turing"})
        finally:
            process.kill()
            process.wait()
        assert outcome.kind == "response", log.read_text()
        if check == "workflow":
            assert outcome.body == expected_small_output("alan turing")
        else:
            assert outcome.body["libc"] == ["glibc", "2.31"]
            assert outcome.body["executable"] == "/work/opt/cpython-mpk/bin/python3"
            assert outcome.body["ssl"].startswith("OpenSSL 1.1.1")  # the bundled one
            assert outcome.body["root"]


ARC4RANDOM = "#include <stdlib.h>\nint main(void) { return (int)(arc4random() & 1); }\n"


def test_a_runtime_built_on_a_newer_glibc_is_refused(small_app: Path, tmp_path: Path) -> None:
    """A prefix whose interpreter needs GLIBC_2.36 (arc4random is new in 2.36): the layer
    is not written, and one line says which file needs what and how to build one."""
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib" / "python3.13").mkdir(parents=True)
    (prefix / "lib" / "python3.13" / "os.py").write_text("")
    source = tmp_path / "new.c"
    source.write_text(ARC4RANDOM)
    compiler = shutil.which("gcc") or shutil.which("cc")
    assert compiler, "no C compiler (gcc)"
    built = subprocess.run([compiler, str(source), "-o", str(prefix / "bin" / "python3")],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    assert max(glibc.glibc_versions(str(prefix / "bin" / "python3"))) >= (2, 36)
    done = faastlane("package", str(small_app), "--target", "lambda", "--custom-runtime",
                     "--python-prefix", str(prefix), "-o", str(tmp_path / "zips"))
    assert done.code == 2
    line = done.stderr.strip()
    assert line.startswith("faastlane: error: bin/python3 in the runtime layer needs glibc "
                           "2.36, but provided.al2023 has 2.34"), line
    assert "make -C cpython-mpk lambda" in line and "\n" not in line
    assert not (tmp_path / "zips").exists()  # refused before anything was written
