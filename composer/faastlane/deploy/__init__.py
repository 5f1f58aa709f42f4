"""Packaging and deployment: a composed workflow as one OpenWhisk action or one Lambda
function.

A pipeline of plain stages, as Chalice deploys:

``bundle``    (models) compose the app and lay the action out in each platform's format:
              zips, vendored dependencies, the custom runtime; sizes checked against
              ``limits`` before anything leaves the machine.
``deployer``  (planner + executor) decide create or update and make the calls in order.
``openwhisk``, ``aws_lambda``
              the only modules that talk to a platform (REST with urllib; boto3).
``commands``  the CLI's package / deploy / invoke subcommands.
"""
