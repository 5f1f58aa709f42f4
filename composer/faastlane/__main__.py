"""python -m faastlane: the faastlane command."""

import sys

from .cli import main

sys.exit(main())
