"""The build pipeline on a miniature source tree: cache key, cache hits, and
that a failed or killed build never looks complete."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from pathlib import Path

from build_support import Script, fake_env, make_source_tarball

MARKER = ".faastlane-build-complete"


def build(script: Script, source: Path, *extra: str, env=None):
    return script.run("build", "--no-deps", "--source", str(source), *extra, env=env)


def prefix_of(script: Script, source: Path) -> Path:
    result = script.run("prefix", "--source", str(source))
    assert result.returncode == 0, result.stderr
    return Path(result.stdout.strip())


def runs(counter: Path) -> int:
    return len(counter.read_text().split()) if counter.exists() else 0


def test_build_installs_marks_complete_and_links(script, fake_source, tmp_path):
    counter = tmp_path / "runs"
    result = build(script, fake_source, env={"FAKE_RUNS": str(counter)})
    assert result.returncode == 0, result.stderr
    prefix = prefix_of(script, fake_source)
    assert prefix.parent == script.cache / "cpython-mpk"
    assert (prefix / MARKER).is_file()
    source_sha = hashlib.sha256(fake_source.read_bytes()).hexdigest()
    assert f"source {source_sha}" in (prefix / MARKER).read_text().splitlines()
    assert (script.home / "build").resolve() == prefix
    assert (script.home / "build" / "bin" / "python3").exists()
    for stage in ("==> unpack", "==> apply patch series", "==> configure", "==> make -j",
                  "==> make install", "==> check"):
        assert stage in result.stdout
    assert "done in" in result.stdout and "built in" in result.stdout
    assert "WITHOUT the _faastlane module" in result.stdout
    assert runs(counter) == 1
    # No build tree or staging dir is left behind.
    assert [p.name for p in (script.cache / "cpython-mpk").iterdir()
            if p.name.startswith(".work")] == []


def test_unchanged_rebuild_is_a_cache_hit(script, fake_source, tmp_path):
    counter = tmp_path / "runs"
    assert build(script, fake_source, env={"FAKE_RUNS": str(counter)}).returncode == 0
    (script.home / "build").unlink()
    started = time.monotonic()
    result = build(script, fake_source, env={"FAKE_RUNS": str(counter)})
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 10
    assert "cache hit" in result.stdout
    assert runs(counter) == 1
    assert (script.home / "build").resolve() == prefix_of(script, fake_source)


def test_every_input_is_part_of_the_key(script, fake_source, tmp_path):
    keys = set()

    def key():
        result = script.run("key", "--source", str(fake_source))
        assert result.returncode == 0, result.stderr
        keys.add(result.stdout.strip())
        return result.stdout.strip()

    first = key()
    assert len(first) == 16
    (script.modules / "_faastlanemodule.c").write_text("/* v1 */\n")
    key()
    (script.modules / "_faastlanemodule.c").write_text("/* v2 */\n")
    key()
    (script.modules / "gates.h").write_text("/* a header counts too */\n")
    key()
    (script.patches / "0001-x.patch").write_text("From 0 Mon Sep 17 00:00:00 2001\n")
    key()
    (script.patches / "0001-x.patch").rename(script.patches / "0002-x.patch")
    key()
    with (script.home / "build.sh").open("a") as f:
        f.write("# the script itself\n")
    key()
    other = make_source_tarball(tmp_path / "other.tar.gz", files={"README.rst": "other\n"})
    result = script.run("key", "--source", str(other))
    keys.add(result.stdout.strip())
    assert len(keys) == 8
    # ... and nothing else: the same inputs give the same key.
    assert key() in keys and len(keys) == 8


def test_failed_build_is_not_complete_and_keeps_its_log(script, fake_source, tmp_path):
    for stage in ("make", "install"):
        result = build(script, fake_source, env={"FAKE_FAIL": stage})
        assert result.returncode == 1
        assert f"fake {stage}: failing on purpose" in result.stderr  # tail of the log
        log = script.cache / "cpython-mpk" / "logs" / (prefix_of(script, fake_source).name + ".log")
        assert str(log) in result.stderr and log.is_file()
        assert not prefix_of(script, fake_source).exists()
        assert not (script.home / "build").exists()
    counter = tmp_path / "runs"
    result = build(script, fake_source, env={"FAKE_RUNS": str(counter)})
    assert result.returncode == 0, result.stderr
    assert runs(counter) == 1 and "cache hit" not in result.stdout


def test_killed_build_is_not_complete_and_is_redone(script, fake_source, tmp_path):
    counter = tmp_path / "runs"
    env = dict(os.environ, **fake_env(script.cache), FAKE_SLEEP="30", FAKE_RUNS=str(counter))
    proc = subprocess.Popen(
        ["bash", str(script.home / "build.sh"), "build", "--no-deps", "--source", str(fake_source)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if "==> make -j" in line:
            break
    else:
        raise AssertionError("the build never reached make")
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)  # no trap runs: the worst case
    proc.wait()
    prefix = prefix_of(script, fake_source)
    assert not (prefix / MARKER).exists()
    assert not (script.home / "build").exists()
    leftovers = [p for p in (script.cache / "cpython-mpk").iterdir() if p.name.startswith(".work")]
    assert leftovers, "the killed build's tree should still be there for the next run to clear"

    result = build(script, fake_source, env={"FAKE_RUNS": str(counter)})
    assert result.returncode == 0, result.stderr
    assert runs(counter) == 2 and (prefix / MARKER).is_file()
    assert not [p for p in (script.cache / "cpython-mpk").iterdir() if p.name.startswith(".work")]


def test_runtime_failing_smoke_test_is_not_complete(script, fake_source, tmp_path):
    result = build(script, fake_source, env={"FAKE_BROKEN": "ImportError: No module named _ssl"})
    assert result.returncode == 1
    assert "fails its smoke test" in result.stderr
    assert "No module named _ssl" in result.stderr
    assert not (prefix_of(script, fake_source) / MARKER).exists()
    assert build(script, fake_source).returncode == 0  # and the next run redoes it


def test_concurrent_builds_of_one_key_build_once(script, fake_source, tmp_path):
    counter = tmp_path / "runs"
    env = dict(os.environ, **fake_env(script.cache), FAKE_SLEEP="2", FAKE_RUNS=str(counter))
    cmd = ["bash", str(script.home / "build.sh"), "build", "--no-deps", "--no-link",
           "--source", str(fake_source)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(2)]
    outputs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert runs(counter) == 1
    assert sum("cache hit" in out for out, _ in outputs) == 1


def test_build_link_refuses_to_replace_a_real_folder(script, fake_source):
    (script.home / "build").mkdir()
    result = build(script, fake_source)
    assert result.returncode == 1
    assert "is not a symlink" in result.stderr


def test_no_link_leaves_build_alone(script, fake_source):
    result = build(script, fake_source, "--no-link")
    assert result.returncode == 0, result.stderr
    assert not (script.home / "build").exists()
    assert (prefix_of(script, fake_source) / MARKER).is_file()


def test_prune_keeps_only_the_linked_runtime(script, fake_source):
    assert build(script, fake_source, "--no-link").returncode == 0
    old = prefix_of(script, fake_source)
    (script.modules / "_faastlanemodule.c").write_text("/* changes the key */\n")
    new = prefix_of(script, fake_source)
    new.mkdir(parents=True)  # stands for the runtime build/ points to
    (script.home / "build").symlink_to(new)
    result = script.run("prune")
    assert result.returncode == 0, result.stderr
    assert not old.exists() and new.exists()


def test_module_only_change_reuses_the_compiled_tree(script, fake_source, tmp_path):
    counter = tmp_path / "runs"
    env = {"FAKE_RUNS": str(counter)}
    (script.modules / "_faastlanemodule.c").write_text("/* v1 */\n")
    (script.modules / "old.c").write_text("/* dropped in v2 */\n")
    first = build(script, fake_source, env=env)
    assert first.returncode == 0, first.stderr
    assert "==> unpack" in first.stdout and "reusing its tree" not in first.stdout
    v1 = prefix_of(script, fake_source)

    (script.modules / "old.c").unlink()
    (script.modules / "_faastlanemodule.c").write_text("/* v2 */\n")
    (script.modules / "new.c").write_text("/* added in v2 */\n")
    second = build(script, fake_source, env=env)
    assert second.returncode == 0, second.stderr
    assert "reusing its tree" in second.stdout and "==> unpack" not in second.stdout
    v2 = prefix_of(script, fake_source)
    assert v2 != v1 and runs(counter) == 2  # configured again for the new prefix
    for prefix, module in ((v1, "old.c"), (v2, "new.c")):
        last = (prefix / "Setup.local").read_text().splitlines()[-1]
        assert last == f"_faastlane _faastlanemodule.c {module}"
    tree = next((script.cache / "cpython-mpk").glob("tree-*"))
    assert (tree / "Modules" / "_faastlanemodule.c").read_text() == "/* v2 */\n"
    assert not (tree / "Modules" / "old.c").exists()

    fresh = build(script, fake_source, "--fresh", env=env)
    assert fresh.returncode == 0 and "cache hit" in fresh.stdout  # --fresh never undoes a hit


def test_prune_spares_a_running_build(script, fake_source, tmp_path):
    env = dict(os.environ, **fake_env(script.cache), FAKE_SLEEP="30")
    proc = subprocess.Popen(
        ["bash", str(script.home / "build.sh"), "build", "--no-deps", "--source", str(fake_source)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if "==> make -j" in line:
                break
        work = [p for p in (script.cache / "cpython-mpk").iterdir() if p.name.startswith(".work")]
        assert len(work) == 1
        result = script.run("prune")
        assert result.returncode == 0, result.stderr
        assert "its build is running" in result.stdout
        assert work[0].is_dir()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    # Once nobody holds the lock the leftover goes.
    assert "removing" in script.run("prune").stdout
    assert not work[0].exists()
