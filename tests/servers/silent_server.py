"""A broken stdio server: reads stdin and never answers anything, not even the handshake."""

from __future__ import annotations

import sys


def main() -> None:
    for _line in sys.stdin:
        pass


if __name__ == "__main__":
    main()
