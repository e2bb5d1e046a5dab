"""`actors.gateway.pipes.stdio_pipes`, in a child process whose stdin and stdout are real pipes (as
a host starts ``mcp-actors serve``), or a file: lines in and out whole and in order, fd 0 and 1
kept off the wire while serving, and given back as they were."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.gateway.conftest import ROOT, WAIT

CHILD = """
import asyncio, os, sys
from actors.gateway.pipes import stdio_pipes

async def main():
    async with stdio_pipes() as pipes:
        if pipes is None:
            print("no pipes", flush=True)
        else:
            await serve(*pipes)
    print("after: blocking", os.get_blocking(0), os.get_blocking(1), flush=True)

async def serve(reader, writer):
        os.write(1, b"stray output\\n")  # fd 1 is not the wire meanwhile
        print("stdin while serving:", os.read(0, 10), file=sys.stderr, flush=True)
        async for line in reader:
            await writer.write(f"{len(line)} {line[:6]!r} {line[-4:]!r}\\n")
            await writer.flush()

asyncio.run(main())
"""


def _run(given: bytes | None = None, stdin: int | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", CHILD],
        cwd=ROOT,
        input=given,
        stdin=stdin,
        capture_output=True,
        timeout=WAIT,
        check=True,
    )


def test_lines_go_through_whole_and_the_descriptors_come_back() -> None:
    long = "x" * 3_000_000  # far past asyncio's default 64 KiB line limit
    given = f'{{"a": "{long}"}}\n'.encode() + b'{"b": "\xff"}\n' + b"last\n"
    done = _run(given)
    # Bytes that are not UTF-8 are replaced, as the SDK's own reader does.
    lines = given.decode("utf-8", errors="replace").splitlines(keepends=True)
    assert "\ufffd" in lines[1]
    expected = [f"{len(line)} {line[:6]!r} {line[-4:]!r}" for line in lines]
    assert done.stdout.decode().splitlines() == [*expected, "after: blocking True True"]
    assert b"stray output" in done.stderr, done.stderr
    assert b"stdin while serving: b''" in done.stderr, done.stderr


def test_a_file_on_stdin_is_left_to_the_sdk(tmp_path: Path) -> None:
    given = tmp_path / "input.jsonl"
    given.write_text('{"a": 1}\n')
    with given.open("rb") as stdin:
        done = _run(stdin=stdin.fileno())
    assert done.stdout.decode().splitlines() == ["no pipes", "after: blocking True True"]
