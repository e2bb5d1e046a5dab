"""The configuration files served up the chain of mcp-actors processes that started this one,
so that a configuration holding its own ``serve`` entry is refused instead of starting gateways
without end.

``$MCP_ACTORS_SERVING`` holds them (absolute, resolved, ``os.pathsep``-separated). A command
that serves a file adds it for as long as it runs (`serving`), and every stdio server the runtime
starts, sandboxed or not, gets the variable (`marker`). Two checks read it:

- before a start, `loop_of` refuses an entry that runs ``mcp-actors serve`` (or ``run``) on one
  of those files: the server fails at once (``StartRefused``) and the others are served;
- ``mcp-actors serve`` refuses to serve a file that a process up the chain serves (`served`):
  what no entry shows (a wrapper script, ``sh -c``, two files that serve each other) stops there,
  one level down.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

__all__ = ["SERVING_ENV", "loop_of", "marker", "served", "serving"]

SERVING_ENV = "MCP_ACTORS_SERVING"
"""The variable that carries the served files down the chain of processes."""

_CONFIG_ENV = "MCP_ACTORS_CONFIG"
_PROGRAM = "mcp-actors"
_SERVING_COMMANDS = ("serve", "run")


def _key(path: str, base: str | None = None) -> str:
    """``path`` absolute (from ``base``, else the working folder), its links resolved."""
    return os.path.realpath(os.path.join(base or os.getcwd(), os.path.expanduser(path)))


def served(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The files served up the chain (``environ``: this process's environment by default)."""
    value = (os.environ if environ is None else environ).get(SERVING_ENV, "")
    return tuple(path for path in value.split(os.pathsep) if path)


@contextmanager
def serving(path: str | None) -> Iterator[None]:
    """Meanwhile, ``path`` (None: nothing) is among the files served, for the servers started."""
    if path is None:
        yield
        return
    before = os.environ.get(SERVING_ENV)
    key = _key(path)
    if key not in served():
        os.environ[SERVING_ENV] = os.pathsep.join((*served(), key))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(SERVING_ENV, None)
        else:
            os.environ[SERVING_ENV] = before


def marker() -> dict[str, str]:
    """What a started server's environment carries of the chain (set over the entry's own)."""
    value = os.environ.get(SERVING_ENV)
    return {SERVING_ENV: value} if value else {}


def loop_of(command: str, args: Sequence[str], env: Mapping[str, str] | None, cwd: str | None) -> str | None:
    """Why the stdio entry ``command args`` would serve a file already served up the chain
    (the one this process serves included), or None."""
    chain = served()
    if not chain:
        return None
    words = [command, *args]
    program = next(
        (
            i
            for i, word in enumerate(words)
            if os.path.basename(word) in (_PROGRAM, f"{_PROGRAM}.exe")
            or (word == "actors" and i > 0 and words[i - 1] == "-m")
        ),
        None,
    )
    if program is None:
        return None
    rest = words[program + 1 :]
    named = next((word for word in rest if not word.startswith("-")), None)
    if named not in _SERVING_COMMANDS:
        return None
    config = None
    for i, word in enumerate(rest):
        if word == "--config" and i + 1 < len(rest):
            config = rest[i + 1]
        elif word.startswith("--config="):
            config = word.removeprefix("--config=")
    base = _key(cwd) if cwd else os.getcwd()
    if config is None:
        config = (env or {}).get(_CONFIG_ENV)
    if config is None and os.path.isfile(os.path.join(base, "mcp.json")):
        config = "mcp.json"
    if config is None or _key(config, base) not in chain:
        return None
    return (
        f"it runs `{_PROGRAM} {named}` on {_key(config, base)}, a configuration already being served "
        "(a config that serves itself starts gateways without end): remove that entry from the file"
    )
