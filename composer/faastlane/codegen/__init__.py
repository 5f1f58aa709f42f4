"""Generating the Orchestrator source of a composed action."""
