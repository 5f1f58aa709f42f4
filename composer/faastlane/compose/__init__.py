"""Compose time: read an app, plan where each state runs, generate the
Orchestrator and write the action folder."""
