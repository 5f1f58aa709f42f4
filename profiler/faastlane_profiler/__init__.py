"""Faastlane's profiler: MPK support and usable vCPUs of a target, locally or as an action.

``probe`` is what runs on the target (standard library and the Faastlane runtime only, so
it also ships as an OpenWhisk action or a Lambda function); ``targets`` runs it here, in a
CPU-limited Docker container, or on a platform; ``cache`` keeps results per platform and
memory size; ``command`` is ``faastlane profile``.
"""
