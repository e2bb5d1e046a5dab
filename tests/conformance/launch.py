"""The client command the conformance suite runs when a `ClientForkServer` serves the client:
``python -S launch.py SOCKET ARGS...`` hands ``ARGS``, the environment, the working directory and
the standard streams to the fork server at ``SOCKET`` and exits with the forked client's status
(1 when the client died without one). The standard library only: it starts in milliseconds.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys


def main(argv: list[str]) -> int:
    path, args = argv[1], argv[2:]
    header = json.dumps({"argv": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(path)
        socket.send_fds(connection, [struct.pack("!Q", len(header))], [0, 1, 2])
        connection.sendall(header)
        status = b""
        while len(status) < 4:
            chunk = connection.recv(4 - len(status))
            if not chunk:
                print("launch.py: the forked client died without an exit status", file=sys.stderr)
                return 1
            status += chunk
    return int(struct.unpack("!i", status)[0])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
