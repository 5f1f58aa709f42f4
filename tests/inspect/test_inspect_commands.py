"""The inspector in the commands: ``compose``/``package`` fail on a function's native
code that can change PKRU unless faastlane.json waives it with a reason, the action
records what was inspected, and ``faastlane inspect`` lists everything."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from crafted_elf import RUNTIME, function, shared_object

WORKFLOW = {"StartAt": "Native", "States": {"Native": {"Type": "Task",
                                                       "Resource": "native", "End": True}}}
HANDLER = "def handler(event, context):\n    return {'ok': True}\n"
REASON = "vendor codec; reviewed: the WRPKRU is in a routine never called"


def faastlane(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "faastlane", *args], capture_output=True,
                          text=True, timeout=600)


def app_with_native_code(root: Path, waivers: list | None = None) -> tuple[Path, Path]:
    """An app whose function folder carries a shared object with a bare WRPKRU."""
    folder = root / "functions" / "native"
    folder.mkdir(parents=True)
    (root / "workflow.json").write_text(json.dumps(WORKFLOW))
    (folder / "lambda_function.py").write_text(HANDLER)
    library = shared_object(folder, "libcodec", function("codec_reset", "wrpkru\nret"))
    (folder / "libcodec.s").unlink()
    if waivers is not None:
        (root / "faastlane.json").write_text(json.dumps({"inspector_waivers": waivers}))
    return root, library


def test_compose_fails_on_native_code_that_writes_pkru(tmp_path: Path) -> None:
    app, _ = app_with_native_code(tmp_path / "app")
    out = tmp_path / "action"
    done = faastlane("compose", str(app), "-o", str(out))
    assert done.returncode == 1, done.stderr
    line, = done.stderr.strip().splitlines()
    assert line.startswith("faastlane: error: functions/native/libcodec.so: offset 0x")
    assert "wrpkru aligned" in line and "inspector_waivers" in line
    record = json.loads((out / "inspection.json").read_text())
    (entry,) = record["files"]
    assert entry["file"] == "functions/native/libcodec.so"
    assert [f["kind"] for f in entry["findings"]] == ["wrpkru"]
    assert entry["findings"][0]["waived"] is None


def test_inspect_lists_the_finding_with_its_disassembly(tmp_path: Path) -> None:
    app, _ = app_with_native_code(tmp_path / "app")
    done = faastlane("inspect", str(app))
    assert done.returncode == 1
    assert "FINDING: functions/native/libcodec.so" in done.stdout
    assert "wrpkru  <==" in done.stdout and "codec_reset+0x0" in done.stdout
    assert "what to do (wrpkru)" in done.stdout
    as_json = json.loads(faastlane("inspect", str(app), "--json").stdout)
    assert as_json["files"][0]["findings"][0]["symbol"] == "codec_reset+0x0"


def test_a_waiver_with_a_reason_lets_compose_through_and_is_recorded(tmp_path: Path) -> None:
    app, library = app_with_native_code(tmp_path / "app")
    digest = hashlib.sha256(library.read_bytes()).hexdigest()
    waiver = {"file": "functions/native/*.so", "reason": REASON, "sha256": digest}
    (app / "faastlane.json").write_text(json.dumps({"inspector_waivers": [waiver]}))
    out = tmp_path / "action"
    done = faastlane("compose", str(app), "-o", str(out))
    assert done.returncode == 0, done.stderr
    record = json.loads((out / "inspection.json").read_text())
    assert record["inspector_waivers"] == [waiver]
    assert record["files"][0]["findings"][0]["waived"] == waiver
    again = faastlane("inspect", str(out))  # the action carries its own waivers
    assert again.returncode == 0, again.stdout
    assert f"WAIVED ({REASON})" in again.stdout and "1 waived" in again.stdout
    run = faastlane("run", str(app), "--input", "{}")
    assert run.returncode == 0 and json.loads(run.stdout) == {"ok": True}


def test_a_waiver_pinned_to_other_bytes_does_not_apply(tmp_path: Path) -> None:
    app, _ = app_with_native_code(tmp_path / "app", [
        {"file": "functions/native/libcodec.so", "reason": REASON, "sha256": "0" * 64}])
    done = faastlane("compose", str(app), "-o", str(tmp_path / "action"))
    assert done.returncode == 1 and "libcodec.so: offset" in done.stderr


def test_a_waiver_without_a_reason_is_refused(tmp_path: Path) -> None:
    app, _ = app_with_native_code(tmp_path / "app", [{"file": "functions/native/libcodec.so"}])
    done = faastlane("compose", str(app), "-o", str(tmp_path / "action"))
    assert done.returncode == 2
    assert "faastlane.json: /inspector_waivers/0/reason must say why" in done.stderr


def test_package_fails_on_the_finding_too(tmp_path: Path) -> None:
    app, _ = app_with_native_code(tmp_path / "app")
    done = faastlane("package", str(app), "--target", "openwhisk", "-o",
                     str(tmp_path / "action.zip"))
    assert done.returncode == 1 and "libcodec.so: offset" in done.stderr
    assert not (tmp_path / "action.zip").exists()


@pytest.mark.mpk
def test_inspect_of_the_runtime_accepts_its_gate() -> None:
    done = faastlane("inspect", "--python", str(RUNTIME), "--no-system-libraries")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 runtime gate(s) accepted; 0 finding(s)" in done.stdout


def test_inspect_of_a_missing_path_is_one_line(tmp_path: Path) -> None:
    done = faastlane("inspect", str(tmp_path / "nowhere"))
    assert done.returncode == 2
    assert done.stderr.strip() == f"faastlane: error: {tmp_path / 'nowhere'}: no such file " \
                                  "or folder"


def test_inspect_of_an_app_says_it_did_not_scan_its_requirements(tmp_path: Path) -> None:
    # The packages an app's requirements list are vendored only by `package` (which
    # scans what it ships): "0 ELF files" must not read as clean.
    app = tmp_path / "app"
    (app / "functions" / "resize").mkdir(parents=True)
    (app / "workflow.json").write_text(json.dumps(WORKFLOW))
    (app / "functions" / "resize" / "lambda_function.py").write_text(HANDLER)
    (app / "functions" / "resize" / "requirements.txt").write_text("numpy\n")
    done = faastlane("inspect", str(app))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith(
        f"not scanned: the packages that {app / 'functions' / 'resize' / 'requirements.txt'}")
    listed = json.loads(faastlane("inspect", str(app), "--json").stdout)["not_scanned"]
    assert listed == [str(app / "functions" / "resize" / "requirements.txt")]
    (app / "functions" / "resize" / "requirements.txt").unlink()
    assert "not scanned" not in faastlane("inspect", str(app)).stdout
