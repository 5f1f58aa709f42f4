"""The runtime library that generated Orchestrators call.

This package is copied verbatim into every composed action as ``faastlane_runtime``, so
its modules import each other only relatively and depend on nothing outside the
standard library.
"""
