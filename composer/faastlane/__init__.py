"""Faastlane: compile a Step Functions workflow and its Python functions into one action."""

__version__ = "0.1.0"
