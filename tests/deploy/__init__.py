"""The deployment tests. A package (as integration is): its helpers import as
``deploy.NAME``, and pytest puts ``tests/`` on ``sys.path`` for it."""
