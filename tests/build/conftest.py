"""Fixtures for tests/build: see build_support.py."""

from build_support import fake_source, script  # noqa: F401  (pytest fixtures)
