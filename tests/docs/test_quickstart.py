"""docs/quickstart.md works exactly as written: its files are written and its commands run.

Conventions in the page: a fenced block with ``file=NAME`` in its info string is a file to
write; a ``console`` block holds ``$ command`` lines, each followed by the output expected, in
order (``...`` stands for any lines; a line starting with ``! `` is expected on stderr, and the
command must then fail).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "quickstart.md"
FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```\s*$", re.M | re.S)


@dataclass
class Command:
    line: str
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)


def steps(page: str) -> list[tuple[str, str] | Command]:
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


def matches(expected: list[str], actual: list[str]) -> bool:
    """Expected lines in order; ``...`` allows any lines in between (else they are adjacent)."""
    position, gap = 0, True
    actual = [line.rstrip() for line in actual]
    for want in (w.rstrip() for w in expected):
        if want == "...":
            gap = True
            continue
        if gap:
            try:
                position = actual.index(want, position) + 1
            except ValueError:
                return False
        else:
            if position >= len(actual) or actual[position] != want:
                return False
            position += 1
        gap = False
    return True


def test_the_page_has_files_and_commands() -> None:
    found = steps(PAGE.read_text())
    assert sum(isinstance(s, Command) for s in found) >= 6
    assert {s[0] for s in found if isinstance(s, tuple)} == {"mcp.json", "first_call.py", "time.robot"}


def test_quickstart_runs_as_written(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MCP_ACTORS_CONFIG", "PYTHONPATH")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for step in steps(PAGE.read_text()):
        if isinstance(step, tuple):
            (tmp_path / step[0]).write_text(step[1])
            continue
        done = subprocess.run(
            ["bash", "-c", step.line],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        report = f"$ {step.line}\nexit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
        assert (done.returncode != 0) == bool(step.stderr), report
        assert matches(step.stdout, done.stdout.splitlines()), report
        assert matches(step.stderr, done.stderr.splitlines()), report
