"""`Workspace`: the folder the built-in tools are confined to, and its path rules.

Every path a tool is given is resolved inside the root with ``realpath`` (so ``..``, absolute
paths and symlinks, including a symlinked parent directory, are judged by where they really
lead) and refused with `SandboxViolation` before anything is touched when it leads outside.
Writes are atomic (a temporary file in the same directory, then ``os.replace``) and never go
into a ``.git`` directory; reads are bounded.

The checks guard against a model's mistakes and hostile arguments. They are not a defence
against another local process swapping directories for symlinks between check and use, though
files are opened with ``O_NOFOLLOW`` and a parent is re-checked just before a rename to narrow
that window.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from actors.builtin.errors import ExecutionFailure, InvalidInput, SandboxViolation

__all__ = ["DEFAULT_MAX_READ_BYTES", "Workspace", "WorkspaceEntry", "WriteOutcome"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_READ_BYTES = 1024 * 1024
"""How much of one file a read returns at most, unless the workspace is given another bound."""

_SKIPPED_DIRECTORIES = frozenset({".git"})
_ENCODE_PIECE = 256 * 1024
"""Characters of text encoded in one call when writing."""
"""Never walked: repository internals would drown every listing and search."""


@dataclass(frozen=True)
class WriteOutcome:
    """What an atomic write did."""

    path: str
    """Workspace-relative, with ``/`` separators."""
    bytes_written: int
    created: bool
    """True when the file did not exist before."""


@dataclass(frozen=True)
class WorkspaceEntry:
    """One entry met while walking the workspace."""

    path: str
    """Workspace-relative, with ``/`` separators."""
    kind: Literal["file", "directory", "symlink"]
    real_path: Path
    size: int | None
    """Bytes, for regular files only."""


class Workspace:
    """A root directory and the rules for paths inside it."""

    def __init__(self, root: str | Path, *, max_read_bytes: int = DEFAULT_MAX_READ_BYTES) -> None:
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise ValueError(f"workspace {os.fspath(root)!r} is not a directory")
        if max_read_bytes < 1:
            raise ValueError("max_read_bytes must be positive")
        self._root = real
        self.max_read_bytes = max_read_bytes

    @property
    def root(self) -> Path:
        """The workspace folder, fully resolved."""
        return Path(self._root)

    def __repr__(self) -> str:
        return f"Workspace({self._root!r})"

    # -- path resolution -------------------------------------------------------------------

    def resolve(self, path: str, *, follow_final_symlink: bool = True) -> Path:
        """The real absolute path ``path`` names, which is inside the root, or `SandboxViolation`.

        Relative paths are taken from the root; absolute ones must lie inside it. With
        ``follow_final_symlink=False`` only the parent directories are resolved, so a symlink
        itself can be named (git stages the link, not its target).
        """
        if "\x00" in path:
            raise SandboxViolation(f"path {path!r} contains a NUL byte")
        if path.startswith("~"):
            # Expanding ~ would name the user's home; keeping it literal would surprise.
            raise SandboxViolation(f"path {path!r} is home-relative; give a path inside the workspace")
        candidate = os.path.join(self._root, path)
        if follow_final_symlink:
            real = os.path.realpath(candidate)
        else:
            trimmed = candidate.rstrip(os.sep) or os.sep
            head, tail = os.path.split(trimmed)
            if tail in ("", ".", ".."):
                real = os.path.realpath(trimmed)
            else:
                real = os.path.join(os.path.realpath(head), tail)
        if not self._contains(real):
            raise SandboxViolation(self._why_outside(path))
        return Path(real)

    def resolve_for_write(self, path: str) -> Path:
        """Like `resolve`, and also refuses the root itself and anything in a ``.git`` directory."""
        real = self.resolve(path)
        relative = self.relative(real)
        if relative == ".":
            raise InvalidInput(f"path {path!r} is the workspace folder itself, not a file")
        if any(part.casefold() == ".git" for part in relative.split("/")):
            # A hook or config written there would run code on the next git command.
            raise SandboxViolation(f"path {path!r} is inside a .git directory; use the git tools")
        return real

    def relative(self, real: Path | str) -> str:
        """``real`` relative to the root, with ``/`` separators (``.`` for the root)."""
        relative = os.path.relpath(os.fspath(real), self._root)
        return relative.replace(os.sep, "/")

    def _contains(self, real: str) -> bool:
        return real == self._root or os.path.commonpath([self._root, real]) == self._root

    def _why_outside(self, path: str) -> str:
        if os.path.isabs(path):
            return f"path {path!r} is an absolute path outside the workspace"
        lexical = os.path.normpath(os.path.join(self._root, path))
        if not self._contains(lexical):
            return f"path {path!r} uses '..' to leave the workspace"
        return f"path {path!r} leads outside the workspace through a symlink"

    # -- reading ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def open_regular_file(self, path: str) -> Iterator[tuple[BinaryIO, os.stat_result, Path]]:
        """Open an existing regular file for binary reading: the stream, its stat and real path."""
        real = self.resolve(path)
        # O_NOFOLLOW: the final component was no symlink when resolved and must not become one.
        # O_NONBLOCK: opening a FIFO must not hang; it is refused below anyway.
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        flags |= getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(real, flags)
        except FileNotFoundError:
            raise InvalidInput(f"no such file: {path!r}") from None
        except NotADirectoryError:
            raise InvalidInput(f"no such file: {path!r} (a parent is not a directory)") from None
        except PermissionError:
            raise InvalidInput(f"permission denied: {path!r}") from None
        except OSError as exc:
            raise ExecutionFailure(f"cannot open {path!r}: {exc.strerror or exc}") from None
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise InvalidInput(f"{path!r} is a directory, not a file")
            if not stat.S_ISREG(info.st_mode):
                raise InvalidInput(f"{path!r} is not a regular file")
            stream = os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise
        with stream:
            yield stream, info, real

    def read_bytes(self, path: str, *, max_bytes: int | None = None) -> tuple[bytes, int]:
        """At most ``max_bytes`` (default: the workspace bound) of a file, and the file's size."""
        limit = self.max_read_bytes if max_bytes is None else max_bytes
        with self.open_regular_file(path) as (stream, info, _real):
            return stream.read(limit), info.st_size

    # -- writing ---------------------------------------------------------------------------

    def write_bytes(self, path: str, data: bytes) -> WriteOutcome:
        """Replace (or create) a file atomically, creating its parent directories."""
        return self._write(path, (data,))

    def write_text(self, path: str, *texts: str) -> WriteOutcome:
        """`write_bytes` of ``texts``, one after the other, in UTF-8.

        Encoded and written a piece at a time: one ``encode`` of megabytes of text would hold
        the GIL (every other thread waiting, the event loop's too) for as long as it runs.
        """
        return self._write(path, _utf8_pieces(texts))

    def _write(self, path: str, chunks: Iterable[bytes]) -> WriteOutcome:
        real = self.resolve_for_write(path)
        if real.is_dir():
            raise InvalidInput(f"{path!r} is a directory, not a file")
        parent = real.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise InvalidInput(f"cannot create {path!r}: a parent path is a file") from None
        except PermissionError:
            raise InvalidInput(f"permission denied creating the folder of {path!r}") from None
        if os.path.realpath(parent) != os.fspath(parent):
            raise SandboxViolation(f"the folder of {path!r} changed while writing; nothing was written")
        try:
            existing = os.stat(real)
        except FileNotFoundError:
            existing = None
        mode = stat.S_IMODE(existing.st_mode) if existing is not None else 0o666 & ~_current_umask()
        fd, temp_name = tempfile.mkstemp(dir=parent, prefix=f".{real.name}.", suffix=".tmp")
        try:
            written = 0
            with os.fdopen(fd, "wb") as temp:
                for chunk in chunks:
                    temp.write(chunk)
                    written += len(chunk)
                temp.flush()
                os.fsync(temp.fileno())
            os.chmod(temp_name, mode)
            os.replace(temp_name, real)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp_name)
            raise
        _fsync_directory(parent)
        logger.debug("wrote %d bytes to %s", written, real)
        return WriteOutcome(path=self.relative(real), bytes_written=written, created=existing is None)

    # -- walking ---------------------------------------------------------------------------

    def walk(self, base: str = ".") -> Iterator[WorkspaceEntry]:
        """Every entry under ``base`` in sorted order, without following symlinks.

        ``.git`` directories are skipped; symlinks are reported as ``symlink`` entries only when
        they lead inside the workspace.
        """
        start = self.resolve(base)
        if not start.is_dir():
            raise InvalidInput(f"{base!r} is not a directory")
        for directory, dirnames, filenames in os.walk(start, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRECTORIES)
            names = sorted([*dirnames, *filenames])
            for name in names:
                full = os.path.join(directory, name)
                entry = self._entry(full)
                if entry is not None:
                    yield entry

    def _entry(self, full: str) -> WorkspaceEntry | None:
        try:
            info = os.lstat(full)
        except OSError:
            return None
        relative = self.relative(full)
        if stat.S_ISLNK(info.st_mode):
            target = os.path.realpath(full)
            if not self._contains(target):
                return None
            return WorkspaceEntry(relative, "symlink", Path(target), None)
        if stat.S_ISDIR(info.st_mode):
            return WorkspaceEntry(relative, "directory", Path(full), None)
        if stat.S_ISREG(info.st_mode):
            return WorkspaceEntry(relative, "file", Path(full), info.st_size)
        return None


def _utf8_pieces(texts: Iterable[str]) -> Iterator[bytes]:
    for text in texts:
        for start in range(0, len(text), _ENCODE_PIECE):
            yield text[start : start + _ENCODE_PIECE].encode("utf-8")


def _current_umask() -> int:
    """The process umask, read without changing it (``os.umask`` would race other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _fsync_directory(directory: Path) -> None:
    """Make a rename durable; best effort, as some filesystems refuse fsync on directories."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
