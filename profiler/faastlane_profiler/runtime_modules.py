"""The Faastlane runtime modules the probe uses, wherever it runs.

Installed, they are ``faastlane.runtime``; inside the profile action (and inside composed
actions) the runtime ships as the top-level package ``faastlane_runtime``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the installed runtime: the same modules as the action's copy
    from faastlane.runtime import cpus
    from faastlane.runtime.isolation import domains
else:
    try:
        from faastlane.runtime import cpus
        from faastlane.runtime.isolation import domains
    except ImportError:  # inside the profile action
        from faastlane_runtime import cpus
        from faastlane_runtime.isolation import domains

__all__ = ["cpus", "domains"]
