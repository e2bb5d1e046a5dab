"""`GitRepository`: runs the ``git`` command on the repository rooted at the workspace.

``git`` is run with an argument list (never a shell), no terminal prompts, no pager, a timeout
(its whole process group is killed when it runs out) and bounded output. The repository must
have its top level at the workspace root: git is not allowed to discover a parent repository
outside the workspace.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

from actors.builtin.errors import ExecutionFailure
from actors.builtin.workspace import Workspace

__all__ = ["DEFAULT_GIT_TIMEOUT", "DEFAULT_MAX_GIT_OUTPUT_BYTES", "GitOutput", "GitRepository", "first_line"]

logger = logging.getLogger(__name__)

DEFAULT_GIT_TIMEOUT = 30.0
"""Seconds one git command may run."""

DEFAULT_MAX_GIT_OUTPUT_BYTES = 256 * 1024
"""How much of a git command's standard output is kept."""

_REPOSITORY_LOCATION_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
)
"""Inherited values of these would point git at some other repository than the workspace's."""

_GLOBAL_OPTIONS = (
    "--no-pager",
    "-c",
    "core.quotepath=false",
    "-c",
    "color.ui=false",
    # An fsmonitor hook is a command git would run on every status; it is not needed here.
    "-c",
    "core.fsmonitor=false",
)


@dataclass(frozen=True)
class GitOutput:
    """One finished git command."""

    returncode: int
    stdout: str
    stderr: str
    truncated: bool
    """True when standard output was longer than the bound and was cut."""


class GitRepository:
    """The git repository at a workspace's root."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        timeout: float = DEFAULT_GIT_TIMEOUT,
        max_output_bytes: int = DEFAULT_MAX_GIT_OUTPUT_BYTES,
        executable: str = "git",
    ) -> None:
        self.workspace = workspace
        self.timeout = timeout
        self.max_output_bytes = max_output_bytes
        self.executable = executable

    def run(self, args: Sequence[str], *, max_output_bytes: int | None = None) -> GitOutput:
        """Run ``git <args>`` in the workspace; raises `TimeoutError` or `ExecutionFailure`."""
        git = shutil.which(self.executable)
        if git is None:
            raise ExecutionFailure(f"the {self.executable!r} command is not installed")
        limit = self.max_output_bytes if max_output_bytes is None else max_output_bytes
        command = [git, *_GLOBAL_OPTIONS, *args]
        # Output goes to files, not pipes: no reader threads, and a chatty git cannot fill memory
        # or block on a full pipe; only the first `limit` bytes are read back.
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                process = subprocess.Popen(
                    command,
                    cwd=self.workspace.root,
                    env=self._environment(),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
            except OSError as exc:
                raise ExecutionFailure(f"cannot run git: {exc}") from None
            try:
                returncode = process.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                _kill_group(process)
                raise TimeoutError(
                    f"git {args[0] if args else ''} did not finish within {self.timeout:g} s"
                ) from None
            except BaseException:
                _kill_group(process)
                raise
            out.seek(0)
            data = out.read(limit + 1)
            err.seek(0)
            error_text = err.read(16 * 1024).decode("utf-8", errors="replace")
        logger.debug("git %s -> %d", " ".join(args), returncode)
        return GitOutput(
            returncode=returncode,
            stdout=data[:limit].decode("utf-8", errors="replace"),
            stderr=error_text,
            truncated=len(data) > limit,
        )

    def check(self, args: Sequence[str], *, max_output_bytes: int | None = None) -> GitOutput:
        """`run`, raising `ExecutionFailure` with git's message when it exits non-zero."""
        output = self.run(args, max_output_bytes=max_output_bytes)
        if output.returncode != 0:
            raise ExecutionFailure(f"git {args[0]} failed: {first_line(output.stderr or output.stdout)}")
        return output

    def ensure_repository(self) -> None:
        """Raise `ExecutionFailure` unless the workspace root is a git repository's top level."""
        output = self.run(["rev-parse", "--show-toplevel"])
        if output.returncode != 0:
            raise ExecutionFailure(
                f"the workspace {os.fspath(self.workspace.root)!r} is not a git repository"
                f" ({first_line(output.stderr)})"
            )
        top_level = os.path.realpath(output.stdout.strip())
        if top_level != os.fspath(self.workspace.root):
            raise ExecutionFailure(
                f"the workspace {os.fspath(self.workspace.root)!r} is not the top level of its git"
                f" repository ({top_level!r})"
            )

    def has_commits(self) -> bool:
        """Whether HEAD names a commit (false on a fresh ``git init``)."""
        return self.run(["rev-parse", "--verify", "--quiet", "HEAD"]).returncode == 0

    def _environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _REPOSITORY_LOCATION_VARIABLES}
        root = os.fspath(self.workspace.root)
        parent = os.path.dirname(root)
        if parent != root:
            # Stop git from walking up into a repository that encloses the workspace.
            env["GIT_CEILING_DIRECTORIES"] = parent
        env.update(
            {
                "GIT_TERMINAL_PROMPT": "0",
                "GIT_ASKPASS": "",
                "SSH_ASKPASS": "",
                "GIT_PAGER": "cat",
                "PAGER": "cat",
                "GIT_EDITOR": "true",
                # Paths the tools pass are file names, never pathspec magic or globs.
                "GIT_LITERAL_PATHSPECS": "1",
                # Read-only commands must not take the index lock from a user's own git.
                "GIT_OPTIONAL_LOCKS": "0",
            }
        )
        return env


def first_line(text: str) -> str:
    """The first non-empty line of ``text``, for short error messages."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return "no message"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill git and anything it started (hooks), then reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5)
