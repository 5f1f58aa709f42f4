"""docs/architecture.md's floor tables, held against the code's imports.

Each table row names folders and modules of one floor; every ``import`` of the package
(relative or absolute, at module level or inside a function) must go to a floor strictly
below the importer's. The profiler and the benchmark sit beside the package: they import
``faastlane``, never the reverse. A unit the tables do not name fails too, so that a new
folder gets its row.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "composer" / "faastlane"
DOC = ROOT / "docs" / "architecture.md"
BESIDE = ("faastlane_profiler", "faastlane_bench")


def _floors() -> dict[str, int]:
    """Unit -> floor: ``deploy``, ``cli``, ``runtime/engine``, ``runtime/options``, ..."""
    floors: dict[str, int] = {}
    prefix = None
    for line in DOC.read_text().splitlines():
        if line.startswith("## The composer"):
            prefix = ""
        elif line.startswith("## The runtime"):
            prefix = "runtime/"
        elif line.startswith("## "):
            prefix = None
        row = re.match(r"\| (\d+) \| ([^|]+) \|", line)
        if prefix is None or not row:
            continue
        for name in re.findall(r"`([^`]+)`", row.group(2)):
            unit = prefix + name.removesuffix("/").removesuffix(".py")
            assert unit not in floors, f"{unit} has two rows"
            floors[unit] = int(row.group(1))
    return floors


def _unit(module: str) -> str:
    """The table's unit of a module path below ``faastlane``: its first part, or the
    first two inside the runtime."""
    parts = module.split(".")
    return "/".join(parts[:2]) if parts[0] == "runtime" and len(parts) > 1 else parts[0]


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module below ``faastlane``) of each import of the package in ``path``."""
    relative = path.relative_to(PACKAGE).with_suffix("")
    package = list(relative.parts[:-1])  # a module's package; an __init__'s own
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - node.level + 1]
            if node.module:
                found.append((node.lineno, ".".join([*base, node.module])))
            else:
                found += [(node.lineno, ".".join([*base, alias.name])) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "faastlane":
                found += [(node.lineno, alias.name) for alias in node.names]
            elif node.module.startswith("faastlane."):
                found.append((node.lineno, node.module.removeprefix("faastlane.")))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.removeprefix("faastlane."))
                      for alias in node.names if alias.name.startswith("faastlane.")]
    return found


def _sources() -> list[Path]:
    return sorted(path for path in PACKAGE.rglob("*.py") if path.name != "__init__.py"
                  or path.parent != PACKAGE)


def test_every_unit_has_a_floor() -> None:
    floors = _floors()
    units = {_unit(".".join(path.relative_to(PACKAGE).with_suffix("").parts))
             for path in _sources()}
    units -= {"runtime/__init__"}
    assert sorted(units - set(floors)) == [], "units without a row in docs/architecture.md"
    assert sorted(set(floors) - units - {"runtime"}) == [], "rows naming no code"


def test_imports_point_down() -> None:
    floors = _floors()
    up = []
    for path in _sources():
        here = _unit(".".join(path.relative_to(PACKAGE).with_suffix("").parts))
        for line, module in _imports(path):
            there = _unit(module)
            if there in ("__version__", "__init__") or there == here:
                continue  # the package's face, or inside one unit
            where = f"{path.relative_to(ROOT)}:{line}"
            if here.startswith("runtime/") and not there.startswith("runtime/"):
                up.append(f"{where}: the runtime imports {module}, outside itself")
                continue
            # The composer sees the runtime as one floor, below everything.
            theirs = floors.get("runtime" if not here.startswith("runtime/")
                                and there.startswith("runtime") else there)
            if theirs is None or theirs >= floors[here]:
                up.append(f"{where}: {here} (floor {floors[here]}) imports {module} "
                          f"(floor {theirs})")
    assert up == []


@pytest.mark.parametrize("beside", BESIDE)
def test_the_package_never_imports_what_sits_beside_it(beside: str) -> None:
    users = [str(path.relative_to(ROOT)) for path in _sources()
             if re.search(rf"^\s*(from|import) {beside}\b", path.read_text(), re.M)]
    assert users == []
