"""A SAM / CloudFormation project as a Faastlane app.

One concern per module, in the order a template is read:

- :mod:`.documents`   YAML (with CloudFormation's short tags) and JSON, each node's line;
- :mod:`.parameters`  template parameters, ``--parameter-overrides``, pseudo parameters;
- :mod:`.intrinsics`  ``Ref``, ``Fn::GetAtt``, ``Fn::Sub``, ... and conditions;
- :mod:`.resources`   what each resource type's ``Ref``/``Fn::GetAtt`` gives, physical names;
- :mod:`.template`    the template read: its state machines, functions, local resources;
- :mod:`.app_model`   the template as an :class:`~faastlane.app.folder.App`;
- :mod:`.local_aws`   the resources created on a loopback endpoint for ``faastlane run``.
"""
