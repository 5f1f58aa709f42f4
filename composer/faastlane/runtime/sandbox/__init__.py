"""Warm sandboxed processes for the functions ``--isolation process`` isolates.

Each isolated function gets its own process for the container's life, forked early from
a zygote that holds nothing of any workflow, confined (:mod:`confine`), and called over
a Unix socket (:mod:`wire`). :mod:`host` is the Orchestrator's side, :mod:`zygote` and
:mod:`server` the processes'.
"""
