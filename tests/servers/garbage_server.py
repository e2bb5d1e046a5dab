"""A broken stdio server: writes lines that are not JSON-RPC on stdout, and never answers."""

from __future__ import annotations

import sys


def main() -> None:
    print("this is not JSON-RPC", flush=True)
    for line in sys.stdin:
        print(f"garbage in reply to {len(line)} bytes", flush=True)


if __name__ == "__main__":
    main()
