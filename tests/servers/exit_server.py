"""A broken stdio server: says why on stderr and exits at once with status 3."""

from __future__ import annotations

import sys


def main() -> None:
    print("fatal: the fixture refuses to start", file=sys.stderr, flush=True)
    sys.exit(3)


if __name__ == "__main__":
    main()
