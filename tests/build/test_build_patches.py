"""The patch series: real `git format-patch` files, applied in order, no fuzz."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from build_support import git

ORIGINAL = "".join(f"line {i}\n" for i in range(1, 41))


def edit(text: str, **lines: str) -> str:
    """Replace numbered lines: edit(text, l5="five") changes 'line 5'."""
    out = text.splitlines(keepends=True)
    for key, value in lines.items():
        out[int(key[1:]) - 1] = value + "\n"
    return "".join(out)


@pytest.fixture
def series(tmp_path: Path) -> Path:
    """Two format-patch files; 0002 (two hunks) depends on 0001."""
    repo = tmp_path / "repo"
    target = repo / "Objects" / "obmalloc.c"
    target.parent.mkdir(parents=True)
    target.write_text(ORIGINAL)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "upstream")
    target.write_text(edit(ORIGINAL, l10="line 10 patched by 0001"))
    git(repo, "commit", "-qam", "first change\n\nWhy: the test needs one.")
    target.write_text(edit(target.read_text(), l5="line 5 patched by 0002",
                           l30="line 30 patched by 0002"))
    git(repo, "commit", "-qam", "second change, two hunks")
    out = tmp_path / "patches"
    git(repo, "format-patch", "-q", "-o", str(out), "HEAD~2")
    names = sorted(p.name for p in out.iterdir())
    assert names == ["0001-first-change.patch", "0002-second-change-two-hunks.patch"]
    return out


def tree_with(tmp_path: Path, text: str) -> Path:
    tree = tmp_path / "tree"
    (tree / "Objects").mkdir(parents=True)
    (tree / "Objects" / "obmalloc.c").write_text(text)
    return tree


def test_series_applies_in_order(script, series, tmp_path):
    tree = tree_with(tmp_path, ORIGINAL)
    result = script.run("apply", "--into", str(tree), "--patches", str(series))
    assert result.returncode == 0, result.stderr
    assert "applied 0001-first-change.patch" in result.stdout
    assert "applied 0002-second-change-two-hunks.patch" in result.stdout
    text = (tree / "Objects" / "obmalloc.c").read_text()
    assert text == edit(ORIGINAL, l5="line 5 patched by 0002", l10="line 10 patched by 0001",
                        l30="line 30 patched by 0002")


def test_patch_that_does_not_apply_names_patch_file_and_hunk(script, series, tmp_path):
    drifted = edit(ORIGINAL, l30="line 30 changed upstream")
    tree = tree_with(tmp_path, drifted)
    result = script.run("apply", "--into", str(tree), "--patches", str(series))
    assert result.returncode == 1
    assert "patch 0002-second-change-two-hunks.patch does not apply" in result.stderr
    assert "Objects/obmalloc.c: hunk #2 FAILED" in result.stderr
    assert "@@ -27,7 +27,7 @@" in result.stderr  # that hunk's own header
    assert "hunk #1" not in result.stderr
    # 0001 went in; 0002 left no half-applied hunk #1 behind.
    assert (tree / "Objects" / "obmalloc.c").read_text() == edit(
        drifted, l10="line 10 patched by 0001")
    assert not list(tree.rglob("*.rej")) and not list(tree.rglob("*.orig"))


def test_context_drift_is_not_fuzzed_over(script, series, tmp_path):
    # GNU patch's default fuzz would apply 0002 here (only an outer context
    # line moved); the series must refuse instead.
    tree = tree_with(tmp_path, edit(ORIGINAL, l27="line 27 changed upstream"))
    result = script.run("apply", "--into", str(tree), "--patches", str(series))
    assert result.returncode == 1
    assert "hunk #2 FAILED" in result.stderr
    assert (tree / "Objects" / "obmalloc.c").read_text().count("patched") == 1  # 0001 only
    # Control: plain `patch` (fuzz 2) does take it, so the refusal is the series' doing.
    fuzzy = subprocess.run(["patch", "-d", str(tree), "-p1", "--dry-run", "-i",
                            str(series / "0002-second-change-two-hunks.patch")],
                           capture_output=True, text=True)
    assert fuzzy.returncode == 0 and "with fuzz 1" in fuzzy.stdout, fuzzy.stdout


def test_line_offsets_are_accepted_and_reported(script, series, tmp_path):
    tree = tree_with(tmp_path, "new first line\n" + ORIGINAL)
    result = script.run("apply", "--into", str(tree), "--patches", str(series))
    assert result.returncode == 0, result.stderr
    assert "offset 1 line" in result.stdout


def test_already_applied_patch_is_reported(script, series, tmp_path):
    tree = tree_with(tmp_path, edit(ORIGINAL, l10="line 10 patched by 0001"))
    result = script.run("apply", "--into", str(tree), "--patches", str(series))
    assert result.returncode == 1
    assert "patch 0001-first-change.patch does not apply" in result.stderr
    assert "already applied" in result.stderr


def test_patch_for_missing_file_is_reported(script, series, tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    result = script.run("apply", "--into", str(tree), "--patches", str(series))
    assert result.returncode == 1
    assert "patch 0001-first-change.patch does not apply" in result.stderr
    assert "does not exist in the tree" in result.stderr


def test_empty_series_is_fine(script, tmp_path):
    tree = tree_with(tmp_path, ORIGINAL)
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "README.md").write_text("no patches yet\n")
    result = script.run("apply", "--into", str(tree), "--patches", str(tmp_path / "none"))
    assert result.returncode == 0, result.stderr
    assert "patch series: empty" in result.stdout
    assert (tree / "Objects" / "obmalloc.c").read_text() == ORIGINAL


@pytest.mark.parametrize("name", ["fix-gc.patch", "1-fix.patch", "0003-fix.diff", "notes.txt"])
def test_misnamed_file_in_series_is_refused(script, series, tmp_path, name):
    (series / name).write_text("")
    tree = tree_with(tmp_path, ORIGINAL)
    result = script.run("apply", "--into", str(tree), "--patches", str(series))
    assert result.returncode == 1
    assert f"{name} does not belong in the patch series" in result.stderr
    assert (tree / "Objects" / "obmalloc.c").read_text() == ORIGINAL


def test_shipped_series_is_well_formed():
    # What build.sh accepts: NNNN-name.patch in format-patch form, plus README.md.
    shipped = Path(__file__).resolve().parents[2] / "cpython-mpk" / "patches"
    assert (shipped / "README.md").is_file()
    for patch in shipped.iterdir():
        if patch.name == "README.md":
            continue
        assert patch.name[:4].isdigit() and patch.name[4] == "-" and patch.suffix == ".patch"
        text = patch.read_text()
        assert text.startswith("From ") and "\nSubject: [PATCH" in text, patch.name
