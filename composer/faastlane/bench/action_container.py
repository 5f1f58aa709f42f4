"""Start ``runtime/action_server.py`` as a benchmark container, with Nagle's algorithm off.

The action server answers with two writes (headers, then body). With Nagle's algorithm on
(Python's default), the body waits for the client's delayed ACK of the headers: about
40 ms per activation on Linux, an artefact no real OpenWhisk proxy has (Go sets
TCP_NODELAY on every connection). ``StreamRequestHandler.disable_nagle_algorithm`` is the
standard library's switch for it; everything else is the action server as it ships.
"""

from __future__ import annotations

import sys

from ..runtime import action_server


def main() -> int:
    action_server._Handler.disable_nagle_algorithm = True
    return action_server.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
