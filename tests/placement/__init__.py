"""The placement tests. A package (as integration is): its helpers import as
``placement.NAME``, and pytest puts ``tests/`` on ``sys.path`` for it."""
