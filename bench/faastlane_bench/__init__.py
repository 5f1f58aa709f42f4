"""``faastlane bench`` and ``faastlane cost``: Faastlane against real baselines.

Every system runs as its own worker process(es) on this machine, driven by one harness
that alternates between them (A, B, A, B) so that they share the machine's noise:

- Faastlane variants (``faastlane_system``): the composed action, warm, in-process;
- the OpenWhisk-style baseline (``openwhisk_baseline``): every function in its own
  action-protocol process (``runtime/platforms/action_server.py``), a controller that follows the
  ASL with the same state engine, JSON payloads, S3 beyond 1 MB;
- the Step Functions-style baseline (``stepfunctions_baseline``): moto's Step Functions
  engine, its Lambda invocations sent to the same per-function processes, S3 beyond
  256 KB.
"""
