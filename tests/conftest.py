"""Test tiers, assigned in one place, and the rule that CI never counts a skip as a pass.

Every test gets exactly one *tier* marker (registered in pytest.ini):

- ``unit``        pure Python in this process: no servers, no compose-and-run round trips;
- ``integration`` runs the CLI, composed actions, action servers, moto, gcc... locally;
- ``docker``      needs a Docker engine (the runtime image, containers, a registry);
- ``qemu``        boots QEMU (the emulated PKU CPU);
- ``build``       builds the cpython-mpk runtime, its build script or the C extension.

Two more markers say what a test needs besides its tier:

- ``mpk``   the cpython-mpk interpreter (runs it, imports ``_faastlane`` in-process, or
            is parametrized with ``isolation="mpk"``);
- ``slow``  a local test of several minutes (``make test`` runs it, ``make test-fast`` not).

A tier is taken, in this order, from an explicit mark on the test or its module, from
where the test lives (``tests/build/``, ``*_qemu.py``), from the fixtures it uses (Docker,
QEMU, the cpython-mpk runtime), and last from its folder (``DIRECTORY_TIERS``, with
``FILE_TIERS`` for files whose folder does not tell). A test left without exactly one tier
fails collection, so a new folder or file has to be placed here.

``make test-fast`` runs ``-m "(unit or integration) and not (mpk or slow)"`` on a plain
python3 venv; ``make test`` runs everything.

Under ``CI`` (``CI=true``, as CI services set it) a skipped test or module is reported as a
failure: a missing component (Docker, QEMU, the runtime) must not pass silently.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "integration", "docker", "qemu", "build")

# The tests that run natively check the no-keys implementation of ``_faastlane`` (the same
# slots, heaps, seals and guard, nothing enforced by hardware): protection-key faults are
# the QEMU tests' part, which set FAASTLANE_MPK=on in the guest. A host CPU with ``pku``
# would otherwise turn the native tests into key tests on some machines and not others.
# Set before anything imports ``_faastlane`` (it reads the variable once, at first use);
# FAASTLANE_MPK=auto in the environment runs the native tiers with the host's keys.
os.environ.setdefault("FAASTLANE_MPK", "off")

# Fixtures whose use puts a test in a tier (their whole closure counts, so a fixture
# built on ``runtime_image`` pulls its tests into ``docker`` too).
DOCKER_FIXTURES = frozenset({"runtime_image", "containers", "image_containers",
                             "local_registry", "limited_containers", "docker_controller"})
QEMU_FIXTURES = frozenset({"qemu_probes", "qemu_heap_probes", "qemu_malloc_probes",
                           "qemu_attacks"})
# tests/mpk's ``runtime``: the cpython-mpk interpreter the probes run on.
MPK_FIXTURES = frozenset({"runtime"})

# The tier of a test that nothing above placed, by its folder below tests/ ...
DIRECTORY_TIERS = {
    "unit": "unit",
    "bench": "unit",
    "conformance": "integration",
    "deploy": "integration",
    "inspect": "integration",
    "integration": "integration",
    "mpk": "integration",
    "placement": "integration",
}
# ... or by its file, where the folder mixes tiers (path relative to tests/).
FILE_TIERS = {
    "bench/test_quick_smoke.py": "integration",      # runs `faastlane bench --quick`
    "placement/test_planner.py": "unit",
    "mpk/test_extension_build.py": "build",           # compiles _faastlane with gcc
}
# Local tests that take long (minutes of CPU between them): `make test` only. Measured on
# the 2-core machine; heavy because they train ml-predict's model, vendor large packages
# into actions, scan numpy/Pillow binaries or run several action containers at once.
SLOW_FILES = frozenset({
    "bench/test_quick_smoke.py",
    "placement/test_bench_placement.py",
    "integration/test_example_ml_predict.py",
    "deploy/test_examples_deploy.py",
    "deploy/test_examples_deploy_cli.py",  # deploys and runs both examples on both platforms
    "inspect/test_shipped_binaries.py",
    "placement/test_spilling.py",
    "placement/test_costs.py",
    "integration/test_installed_cli.py",  # builds and installs a wheel
    "bench/test_leaves_nothing.py",  # three benchmark runs, two of them interrupted
})


def _relative(item: pytest.Item) -> str:
    try:
        return item.path.resolve().relative_to(TESTS).as_posix()
    except ValueError:
        return item.path.name


def _used_fixtures(item: pytest.Item) -> set[str]:
    """The fixtures a test uses (their closure), without its parametrize arguments: in
    test_planner.py ``containers`` is a number, not the Docker fixture. (None of the
    fixtures that place a test is itself parametrized.)"""
    callspec = getattr(item, "callspec", None)
    return set(getattr(item, "fixturenames", ())) - set(callspec.params if callspec else ())


def _inferred_tier(item: pytest.Item, relative: str, fixtures: set[str]) -> str | None:
    folder = relative.split("/", 1)[0]
    if folder == "build" or FILE_TIERS.get(relative) == "build":
        return "build"
    if item.path.name.endswith("_qemu.py") or "qemu" in item.path.stem.split("_") \
            or fixtures & QEMU_FIXTURES:
        return "qemu"
    if fixtures & DOCKER_FIXTURES:
        return "docker"
    return FILE_TIERS.get(relative) or DIRECTORY_TIERS.get(folder)


@pytest.hookimpl(tryfirst=True)  # before -m / -k deselect: every test is checked
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unplaced: list[str] = []
    for item in items:
        relative = _relative(item)
        fixtures = _used_fixtures(item)
        explicit = {m.name for m in item.iter_markers() if m.name in TIERS}
        if not explicit:
            tier = _inferred_tier(item, relative, fixtures)
            if tier is not None:
                item.add_marker(tier)
        callspec = getattr(item, "callspec", None)
        runs_mpk = callspec is not None and callspec.params.get("isolation") == "mpk"
        if (fixtures & MPK_FIXTURES or runs_mpk) and not item.get_closest_marker("mpk"):
            item.add_marker("mpk")
        if relative in SLOW_FILES and not item.get_closest_marker("slow"):
            item.add_marker("slow")
        tiers = sorted({m.name for m in item.iter_markers() if m.name in TIERS})
        if len(tiers) != 1:
            unplaced.append(f"{item.nodeid}: {tiers or 'no tier'}")
    if unplaced:
        raise pytest.UsageError(
            "every test needs exactly one tier marker (" + ", ".join(TIERS) + "); place "
            "these in tests/conftest.py (DIRECTORY_TIERS, FILE_TIERS) or mark them:\n  "
            + "\n  ".join(unplaced))


# --- under CI, a skip is a failure ------------------------------------------------------

def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _skip_to_failure(report: pytest.TestReport | pytest.CollectReport) -> None:
    if not (report.skipped and _in_ci()) or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else report.longrepr
    report.outcome = "failed"
    report.longrepr = (f"SKIPPED UNDER CI (CI={os.environ['CI']}), which makes it a failure: "
                       f"{reason}\nA skip in CI hides a missing component; provide it, "
                       f"or deselect the test on purpose (-m / -k).")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> pytest.TestReport:
    report = yield
    _skip_to_failure(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> pytest.CollectReport:
    report = yield
    _skip_to_failure(report)
    return report
