"""What a sandbox shows of the host: the system, the command's own files, and the secrets to
cover inside anything it may read.

Reads the file system: call it off the event loop (the boundary is built on a worker thread).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from actors.sandbox.bwrap import SystemEntry

__all__ = ["command_paths", "is_within", "secret_paths", "system_entries", "unsafe_to_share"]

# The read-only system: programs, libraries, configuration. Not /home, /root, /var, /run, /tmp,
# /srv, /mnt, /media: what lives there is the host's own.
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")

# Secrets inside /etc, covered though /etc is shown (a root server could read them otherwise).
ETC_SECRET_FILES = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers")
ETC_SECRET_DIRS = ("/etc/ssh", "/etc/sudoers.d", "/etc/ssl/private")

# Credentials in a home folder, covered wherever a folder the server may read holds them.
_HOME_SECRETS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".config/gcloud",
    ".config/gh",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
)


def system_entries(root: str = "/") -> tuple[SystemEntry, ...]:
    """The system folders that exist here, symlinks (merged /usr) kept as symlinks."""
    entries = []
    for path in _SYSTEM:
        host = os.path.join(root, path.lstrip("/"))
        if os.path.islink(host):
            entries.append(SystemEntry(path, os.readlink(host)))
        elif os.path.isdir(host):
            entries.append(SystemEntry(path))
    return tuple(entries)


def is_within(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or inside it (both absolute, normalised)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def unsafe_to_share(path: str, protected: Iterable[str]) -> bool:
    """Whether showing ``path`` whole would show a protected folder: ``/``, or an ancestor of
    (or the same as) the home or state folder."""
    return path == "/" or any(is_within(folder, path) for folder in protected)


def _install_roots(executable: str) -> list[str]:
    """The folders a program is installed in: ``prefix`` for ``prefix/bin/prog``, else its
    folder; for ``~/.local/bin/prog`` only ``~/.local/bin`` and ``~/.local/lib`` (``~/.local``
    also holds the state folder and other programs' data)."""
    folder = os.path.dirname(executable)
    if os.path.basename(folder) != "bin":
        return [folder]
    prefix = os.path.dirname(folder)
    if prefix == os.path.join(os.path.expanduser("~"), ".local"):
        return [folder, os.path.join(prefix, "lib")]
    return [prefix]


_NODE_SCRIPTS = (".js", ".mjs", ".cjs", ".ts")


def _package_root(path: str) -> str | None:
    """Where a Node package's dependencies are found from ``path``: the outermost
    ``node_modules`` above it, or for a Node script the nearest folder above it with a
    ``package.json`` (Node resolves imports by walking up from the script)."""
    parts = path.split(os.sep)
    if "node_modules" in parts[:-1]:
        return os.sep.join(parts[: parts.index("node_modules") + 1])
    if not path.endswith(_NODE_SCRIPTS):
        return None
    folder = os.path.dirname(path)
    while os.path.dirname(folder) != folder:
        if os.path.isfile(os.path.join(folder, "package.json")):
            return folder
        folder = os.path.dirname(folder)
    return None


def _interpreter(script: str, search_path: str) -> str | None:
    """The program a ``#!`` script runs with (``/usr/bin/env node`` -> node's path)."""
    try:
        with open(script, "rb") as file:
            first = file.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        names = [word for word in words[1:] if not word.startswith("-")]
        return shutil.which(names[0], path=search_path) if names else None
    return words[0]


def _program_roots(executable: str, search_path: str, depth: int = 0) -> list[str]:
    """Where a program and what it runs on live: its install root, the root of what it links
    to, its ``#!`` interpreter's, and a venv's base Python."""
    roots: list[str] = []
    for path in dict.fromkeys((os.path.abspath(executable), os.path.realpath(executable))):
        if (package := _package_root(path)) is not None:
            roots.append(package)
        for root in _install_roots(path):
            roots.append(root)
            cfg = Path(root, "pyvenv.cfg")
            if cfg.is_file():
                for line in cfg.read_text(errors="replace").splitlines():
                    key, _, value = line.partition("=")
                    if key.strip() == "home" and value.strip():
                        roots += _install_roots(os.path.join(value.strip(), "python"))
    interpreter = _interpreter(executable, search_path)
    if interpreter is not None and depth < 2:
        roots += _program_roots(interpreter, search_path, depth + 1)
    return roots


def command_paths(
    executable: str, args: Sequence[str], cwd: str, search_path: str, protected: Iterable[str]
) -> tuple[str, ...]:
    """What the command needs to read: the program's roots, and each argument that names an
    existing file (its folder, and a Node script's package root) or folder, never a folder
    that would show ``protected`` ones."""
    protected = tuple(protected)
    found = _program_roots(executable, search_path)
    for arg in args:
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        if not value or value.startswith("-") or "\n" in value:
            continue
        path = os.path.normpath(os.path.join(cwd, os.path.expanduser(value)))
        if os.path.isfile(path):
            package = _package_root(path)
            if package is not None and not unsafe_to_share(package, protected):
                found.append(package)
            found.append(os.path.dirname(path))
        elif os.path.isdir(path):
            found.append(path)
    shown = []
    for path in dict.fromkeys(found):
        if not unsafe_to_share(path, protected) and not any(is_within(path, s) for s in _SYSTEM):
            shown.append(path)
    return tuple(shown)


def secret_paths(
    shown: Iterable[str], home: str, state: str, environ: Mapping[str, str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The folders and files to cover: the state folder and a home folder's credentials
    wherever a shown folder holds them, and /etc's secrets."""
    shown = tuple(shown)
    dirs: list[str] = [d for d in ETC_SECRET_DIRS if os.path.isdir(d)]
    files: list[str] = [f for f in ETC_SECRET_FILES if os.path.isfile(f)]
    candidates = [state, *(os.path.join(home, name) for name in _HOME_SECRETS)]
    if environ.get("SSH_AUTH_SOCK"):
        candidates.append(os.path.dirname(environ["SSH_AUTH_SOCK"]))
    for secret in candidates:
        if not any(is_within(secret, folder) for folder in shown):
            continue
        if os.path.isdir(secret):
            dirs.append(secret)
        elif os.path.exists(secret):
            files.append(secret)
    return tuple(dict.fromkeys(dirs)), tuple(dict.fromkeys(files))
