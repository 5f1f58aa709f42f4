"""``faastlane bench`` and ``faastlane cost``: Faastlane against real baselines.

A checkout tool, a distribution of its own (``bench/setup.py``), not part of the
``faastlane`` product that ``pip install .`` installs: ``pip install -e ./bench`` in a
checkout adds both commands to the ``faastlane`` CLI (entry-point group
``faastlane.commands``), then ``faastlane bench [--quick | --placement ...]`` and
``faastlane cost``. See ``bench/README.md``.

Every system runs as its own worker process(es) on this machine, driven by one harness
that alternates between them (A, B, A, B) so that they share the machine's noise. The
modules, top down (each imports only those below it):

- ``commands``: the two commands' arguments and what they write;
- ``placement`` (the placement figure), ``harness`` (the main run): workloads x systems,
  interleaved; ``report``, ``plots``, ``cost``: tables, figures and prices of a run;
- ``worker``: ``python -m faastlane_bench.worker SPEC``, one system in its own process,
  and the harness's client for it;
- ``systems``: the systems under test, one module each. ``faastlane``: the composed
  action, warm, in-process; ``openwhisk``: every function in its own action-protocol
  process (``runtime/platforms/action_server.py``), a controller that follows the ASL
  with the same state engine, JSON payloads, S3 beyond 1 MB; ``step_functions``: moto's
  Step Functions engine, its Lambda invocations sent to the same per-function processes,
  S3 beyond 256 KB; ``spilling``: Faastlane on several containers behind an OpenWhisk
  REST front (``openwhisk_front``), for the placement figure. Below them
  ``action_pool`` and ``function_action`` (the per-function "containers"), and ``base``:
  ``RunResult`` and the ``System`` interface;
- ``local_aws`` (the examples' local AWS endpoints), ``catalogue`` (workloads and
  system specs), then the leaves: ``claimcheck`` (state through S3), ``external_calls``
  (botocore time), ``timeline`` (spans and the time breakdown), ``procstats``,
  ``machine``, ``stats``.
"""
