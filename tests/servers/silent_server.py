"""A broken stdio server: reads stdin and never answers anything, not even the handshake.

Each start adds a line to ``silent-starts`` in ``FIXTURE_MARKER_DIR`` (when it is set).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    if folder := os.environ.get("FIXTURE_MARKER_DIR"):
        with (Path(folder) / "silent-starts").open("a") as starts:
            starts.write(f"{os.getpid()}\n")
    for _line in sys.stdin:
        pass


if __name__ == "__main__":
    main()
