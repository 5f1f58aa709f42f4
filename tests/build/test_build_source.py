"""Source verification: a wrong tarball fails with the expected SHA-256 named."""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path

from build_support import make_source_tarball, pinned

PINNED_SHA256 = pinned("sha256")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_corrupt_file_is_refused_naming_expected_sha256(script, tmp_path):
    junk = tmp_path / "Python-3.13.5.tar.xz"
    junk.write_bytes(b"\xfd7zXZ\x00 this is not really xz" * 100)
    result = script.run("verify", str(junk))
    assert result.returncode == 1
    assert PINNED_SHA256 in result.stderr
    assert sha256(junk) in result.stderr
    assert "not a readable tarball" in result.stderr


def test_tarball_without_cpython_tree_is_refused(script, tmp_path):
    other = tmp_path / "other.tar.gz"
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "README").write_text("not python\n")
    with tarfile.open(other, "w:gz") as tar:
        tar.add(tmp_path / "proj", arcname="proj")
    result = script.run("verify", str(other))
    assert result.returncode == 1
    assert "is not a CPython source tarball" in result.stderr
    assert PINNED_SHA256 in result.stderr


def test_tree_missing_parts_names_them(script, tmp_path):
    tarball = make_source_tarball(tmp_path / "partial.tar.gz")
    with tarfile.open(tarball) as tar:
        members = [m for m in tar.getmembers() if not m.name.endswith("Python/ceval.c")]
        extracted = tmp_path / "x"
        tar.extractall(extracted, members=members, filter="data")
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(extracted / "Python-3.13.5", arcname="Python-3.13.5")
    result = script.run("verify", str(tarball))
    assert result.returncode == 1
    assert "Python/ceval.c" in result.stderr


def test_other_cpython_version_is_refused(script, tmp_path):
    tarball = make_source_tarball(tmp_path / "Python-3.12.4.tar.gz", version=(3, 12, 4))
    result = script.run("verify", str(tarball))
    assert result.returncode == 1
    assert "holds CPython 3.12.4, not 3.13" in result.stderr
    assert PINNED_SHA256 in result.stderr


def test_other_cpython_313_is_accepted_with_a_warning(script, tmp_path):
    tarball = make_source_tarball(tmp_path / "Python-3.13.9.tar.gz", version=(3, 13, 9))
    result = script.run("verify", str(tarball))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [sha256(tarball), str(tarball)]
    assert "not the pinned source: CPython 3.13.9" in result.stderr


def test_missing_file_is_refused(script, tmp_path):
    result = script.run("verify", str(tmp_path / "nope.tar.xz"))
    assert result.returncode == 1
    assert "does not exist" in result.stderr


def test_corrupt_cached_download_is_refused_not_reused(script):
    # A damaged file in the cache must stop the build, never be unpacked.
    cached = script.cache / "sources" / pinned("tarball")
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"truncated download")
    for command in ("fetch", "build"):
        result = script.run(command, "--no-deps")
        assert result.returncode == 1
        assert "is corrupt" in result.stderr
        assert PINNED_SHA256 in result.stderr
        assert sha256(cached) in result.stderr
    assert not (script.cache / "cpython-mpk").exists()
