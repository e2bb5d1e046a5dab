"""Runs a documentation page exactly as written, in an empty folder.

Conventions in the pages: a fenced block with ``file=NAME`` in its info string is a file to
write; a ``console`` block holds ``$ command`` lines, each followed by the output expected, in
order. ``...`` alone on a line stands for any lines; a line ending in `` ...`` stands for any
line that starts with what comes before it; a line starting with ``! `` is expected on stderr,
and the command must then fail. Other blocks are prose for the reader and are not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Command", "matches", "python_blocks", "run_page", "steps"]

FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```\s*$", re.M | re.S)
_COMMAND_TIMEOUT = 180


@dataclass
class Command:
    line: str
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)


def steps(page: str) -> list[tuple[str, str] | Command]:
    """The files to write (``(name, text)``) and the commands to run, in page order."""
    found: list[tuple[str, str] | Command] = []
    for match in FENCE.finditer(page):
        info, body = match.group("info").split(), match.group("body")
        names = [word.removeprefix("file=") for word in info if word.startswith("file=")]
        if names:
            found.append((names[0], body))
        elif info[:1] == ["console"]:
            for line in body.splitlines():
                if line.startswith("$ "):
                    found.append(Command(line[2:]))
                elif found and isinstance(found[-1], Command):
                    command = found[-1]
                    if line.startswith("! "):
                        command.stderr.append(line[2:])
                    else:
                        command.stdout.append(line)
    return found


def python_blocks(page: str) -> list[str]:
    """The Python blocks of a page that are not files to write (snippets for the reader)."""
    return [
        m.group("body")
        for m in FENCE.finditer(page)
        if m.group("info").split()[:1] == ["python"] and "file=" not in m.group("info")
    ]


def _same(want: str, line: str) -> bool:
    if want.endswith(" ...") and want != "...":
        return line.startswith(want.removesuffix("..."))
    return line == want


def matches(expected: list[str], actual: list[str]) -> bool:
    """Expected lines in order; ``...`` allows any lines in between (else they are adjacent)."""
    position, gap = 0, True
    actual = [line.rstrip() for line in actual]
    for want in (w.rstrip() for w in expected):
        if want == "...":
            gap = True
            continue
        if gap:
            found = next((i for i in range(position, len(actual)) if _same(want, actual[i])), None)
            if found is None:
                return False
            position = found + 1
        else:
            if position >= len(actual) or not _same(want, actual[position]):
                return False
            position += 1
        gap = False
    return True


def run_page(page: Path, folder: Path) -> None:
    """Write the page's files in ``folder`` and run its commands there, with this interpreter's
    ``bin`` first on ``PATH`` (as after ``source .venv/bin/activate``); fail on the first
    command whose exit status or output differs from the page."""
    env = {k: v for k, v in os.environ.items() if k not in ("MCP_ACTORS_CONFIG", "PYTHONPATH")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for step in steps(page.read_text(encoding="utf-8")):
        if isinstance(step, tuple):
            (folder / step[0]).write_text(step[1], encoding="utf-8")
            continue
        done = subprocess.run(
            ["bash", "-c", step.line],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=_COMMAND_TIMEOUT,
            check=False,
        )
        report = f"$ {step.line}\nexit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        assert (done.returncode != 0) == bool(step.stderr), report
        assert matches(step.stdout, done.stdout.splitlines()), report
        assert matches(step.stderr, done.stderr.splitlines()), report
