"""What only a source checkout of Faastlane has, and where the cpython-mpk runtime is.

An installed faastlane (``pip install .``, a wheel) lives in site-packages: nothing of
the repository is beside it. What the installed commands need at run time is package
data (the gate's C source, ``faastlane/inspector/gate_source/``); what exists only in a
checkout -- the cpython-mpk runtime built by ``make -C cpython-mpk``, ``docker/build.sh``
-- is looked for here, and a command that needs it and finds none says so in one line.

The cpython-mpk prefix, in this order: ``--python-prefix`` where a command takes it,
``$FAASTLANE_PYTHON_PREFIX``, the checkout's ``cpython-mpk/build``.
"""

from __future__ import annotations

import os

PREFIX_VARIABLE = "FAASTLANE_PYTHON_PREFIX"
FROM_CHECKOUT = "the checkout"  # runtime_prefix's source for cpython-mpk/build

_PACKAGE = os.path.dirname(os.path.abspath(__file__))  # .../faastlane


def checkout_root() -> str | None:
    """The source checkout this package is imported from (``pip install -e .``, or
    ``composer/`` on ``sys.path``), or None when it is installed."""
    composer = os.path.dirname(_PACKAGE)
    root = os.path.dirname(composer)
    if os.path.basename(composer) == "composer" and all(
            os.path.exists(os.path.join(root, marker))
            for marker in ("pyproject.toml", os.path.join("cpython-mpk", "Makefile"))):
        return root
    return None


def checkout_file(*parts: str) -> str | None:
    """A path inside the checkout (``docker/build.sh``), or None when installed."""
    root = checkout_root()
    return os.path.join(root, *parts) if root else None


def runtime_prefix(given: str | None = None, build: str = "build") -> tuple[str | None, str]:
    """The cpython-mpk prefix to use (None when there is none to look at) and where it
    came from, for messages: ``--python-prefix``, ``$FAASTLANE_PYTHON_PREFIX`` or
    ``the checkout`` (its ``cpython-mpk/<build>``: ``build-lambda`` is the build for
    Lambda's custom runtime, made in an old-glibc root by ``make -C cpython-mpk lambda``)."""
    if given:
        return os.path.realpath(given), "--python-prefix"
    if os.environ.get(PREFIX_VARIABLE):
        return os.path.realpath(os.environ[PREFIX_VARIABLE]), f"${PREFIX_VARIABLE}"
    built = checkout_file("cpython-mpk", build)
    return (built, FROM_CHECKOUT) if built else (None, "")


def runtime_python(given_prefix: str | None = None) -> str | None:
    """``bin/python3`` of :func:`runtime_prefix`, or None when there is no prefix."""
    prefix, _ = runtime_prefix(given_prefix)
    return os.path.join(prefix, "bin", "python3") if prefix else None


def how_to_get_the_runtime(option: str = "") -> str:
    """The end of a message saying the cpython-mpk runtime is missing: how to name one."""
    named = f"pass {option} or set {PREFIX_VARIABLE}" if option else f"set {PREFIX_VARIABLE}"
    return (f"{named} to a cpython-mpk prefix (built by `make -C cpython-mpk` in a source "
            f"checkout of faastlane, as cpython-mpk/build)")
