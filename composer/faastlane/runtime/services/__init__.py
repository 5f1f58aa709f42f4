"""AWS service integrations in Task states, run by the Orchestrator (not as functions).

- which integrations a Resource may name and what they accept is the language's
  (``asl.integrations``, pure, shared with the validator); re-exported here for compose,
  which decides with :func:`uses_service_integrations` / :func:`services_used` whether
  an action must ship boto3;
- ``calls``: one call, from a Task's effective input to its result or ASL error;
- ``shapes``: parameters and responses between Step Functions' JSON and boto3;
- ``responses``: the optimised integrations' ``SdkHttpMetadata``;
- ``failures``: AWS's error names and causes;
- ``clients``: boto3, imported on first use, one client per service and thread;
- ``executions``: ``states:startExecution`` of the workflow's other state machines,
  in-process (``state_machines.json``).

Nothing here imports boto3 until a workflow calls a service.
"""

from ..asl.integrations import services_used, uses_service_integrations

__all__ = ["services_used", "uses_service_integrations"]
