"""The systems under test, one module each, all served by :mod:`faastlane_bench.worker`:

- :mod:`.faastlane`: a Faastlane variant, the composed action warm in the worker;
- :mod:`.openwhisk`: the OpenWhisk-style baseline, a controller following the ASL over
  one action per function;
- :mod:`.step_functions`: the Step Functions-style baseline, moto's engine over the same
  per-function actions;
- :mod:`.spilling`: Faastlane on several containers behind an OpenWhisk REST front
  (:mod:`.openwhisk_front`), the placement figure's system.

Below them: :mod:`.base` (:class:`~.base.RunResult`, the :class:`~.base.System`
interface), :mod:`.action_pool` (warm action-server processes, one "container" each) and
:mod:`.function_action` (one user function packaged as its own action).
"""
