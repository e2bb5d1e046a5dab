"""The fixture server, after a pause: ``python -m tests.servers.slow_start_server SECONDS``.

It reads nothing and answers nothing for SECONDS, then serves like ``fixture_server``: a server
that is slow to start (a cold cache, a loaded machine).
"""

from __future__ import annotations

import sys
import time

from tests.servers.fixture_server import build


def main() -> None:
    time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
    build("slow").run("stdio")


if __name__ == "__main__":
    main()
