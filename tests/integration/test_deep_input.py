"""An input nested deeper than Python's JSON parser goes is one line and exit 2, never a
traceback (found while fuzzing for issue 18: `faastlane run --input-file` died with a
RecursionError from json.loads)."""

from __future__ import annotations

from pathlib import Path

from .apps import chain, faastlane, task, write_app

ECHO = "def handler(event, context):\n    return event\n"


def test_an_input_nested_too_deeply_is_one_line_exit_2(app_dir: Path, tmp_path: Path) -> None:
    write_app(app_dir, chain(("E", task("echo"))), {"echo": ECHO})
    deep = tmp_path / "deep.json"
    # Past every CPython's parser limit (3.11 refuses ~1,000 levels; 3.13 reads 5,000).
    deep.write_text("[" * 100_000 + "]" * 100_000)
    done = faastlane("run", str(app_dir), "--input-file", str(deep))
    assert done.code == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
    assert "deep.json is nested too deeply to read" in done.stderr
