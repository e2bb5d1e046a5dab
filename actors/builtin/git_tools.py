"""The four git tools: status, diff, log and commit on the repository at the workspace root.

Each checks first that the workspace root is the top level of a git repository and fails with
a clear ``execution`` error when it is not. Paths given to git are resolved by `Workspace`
first, so none leads outside the workspace, and git reads them literally (no pathspec magic).
"""

from __future__ import annotations

from typing import Any, Literal

from actors.builtin.definition import BuiltinContext, BuiltinTool, object_schema
from actors.builtin.errors import ExecutionFailure, InvalidInput
from actors.builtin.git import first_line
from actors.tools import ResourceSlot, ToolCapabilities

__all__ = ["GIT_TOOLS", "MAX_STATUS_ENTRIES", "git_commit", "git_diff", "git_log", "git_status"]

MAX_STATUS_ENTRIES = 1000
"""Changed paths a status returns at most."""

_FIELD = "\x1f"
_RECORD = "\x1e"

# Git tools act on the repository's history and index, which a host's checkpoint of the
# workspace files does not capture, so none is declared checkpointable.
_READS = ToolCapabilities(read_only=True, writes=False, checkpointable=False)
_WRITES = ToolCapabilities(read_only=False, writes=True, checkpointable=False)


def _repository_slot(access: Literal["read_only", "read_write"]) -> tuple[ResourceSlot, ...]:
    return (
        ResourceSlot(name="repository", resource_type="git-checkout", access=access, binding="contextual"),
    )


def git_status(context: BuiltinContext, inputs: dict[str, Any]) -> dict[str, Any]:
    """The branch and the changed, staged and untracked paths."""
    git = context.git
    git.ensure_repository()
    output = git.check(["status", "--porcelain=v1", "--branch", "-z"])
    records = output.stdout.split("\0")
    # The last record is empty after a complete listing, or cut short by the output bound.
    records.pop()
    header = records.pop(0)[3:] if records and records[0].startswith("## ") else ""
    branch, upstream = _parse_branch(header)
    entries: list[dict[str, Any]] = []
    truncated = output.truncated
    records_iter = iter(records)
    for record in records_iter:
        if len(entries) == MAX_STATUS_ENTRIES:
            truncated = True
            break
        if len(record) < 4:
            continue
        index, worktree, path = record[0], record[1], record[3:]
        entry: dict[str, Any] = {"path": path, "index": index, "worktree": worktree}
        if index in "RC" or worktree in "RC":
            entry["orig_path"] = next(records_iter, "")
        entries.append(entry)
    return {
        "branch": branch,
        "upstream": upstream,
        "header": header,
        "entries": entries,
        "clean": not entries and not truncated,
        "truncated": truncated,
    }


def git_diff(context: BuiltinContext, inputs: dict[str, Any]) -> dict[str, Any]:
    """The unified diff of the working tree (or, with ``staged``, of the index) against HEAD."""
    git = context.git
    staged: bool = inputs.get("staged", False)
    args = ["diff", "--no-color", "--no-ext-diff", "--no-textconv"]
    if staged:
        args.append("--cached")
    path = _git_path(context, inputs["path"]) if "path" in inputs else None
    git.ensure_repository()
    if path is not None:
        args += ["--", path]
    output = git.check(args)
    return {"diff": output.stdout, "staged": staged, "path": path, "truncated": output.truncated}


def git_log(context: BuiltinContext, inputs: dict[str, Any]) -> dict[str, Any]:
    """The latest ``max_count`` commits reachable from HEAD, newest first."""
    git = context.git
    max_count: int = inputs.get("max_count", 20)
    path = _git_path(context, inputs["path"]) if "path" in inputs else None
    git.ensure_repository()
    if not git.has_commits():
        return {"commits": [], "count": 0, "truncated": False}
    fields = _FIELD.join(["%H", "%an", "%ae", "%aI", "%s"])
    args = ["log", f"--max-count={max_count}", f"--format={fields}{_RECORD}"]
    if path is not None:
        args += ["--", path]
    output = git.check(args)
    commits: list[dict[str, str]] = []
    for record in output.stdout.split(_RECORD):
        parts = record.strip("\n").split(_FIELD)
        if len(parts) != 5:
            continue  # the empty tail, or a record cut by the output bound
        commit, author, email, date, subject = parts
        commits.append({"commit": commit, "author": author, "email": email, "date": date, "subject": subject})
    return {"commits": commits, "count": len(commits), "truncated": output.truncated}


def git_commit(context: BuiltinContext, inputs: dict[str, Any]) -> dict[str, Any]:
    """Stage ``paths`` (or everything with ``all``), then commit what is staged."""
    git = context.git
    message: str = inputs["message"]
    paths: list[str] = inputs.get("paths", [])
    stage_all: bool = inputs.get("all", False)
    if paths and stage_all:
        raise InvalidInput("give either paths or all, not both")
    if not message.strip():
        raise InvalidInput("the commit message is blank")
    relative_paths = [_git_path(context, p) for p in paths]
    git.ensure_repository()
    if stage_all:
        git.check(["add", "--all"])
    elif relative_paths:
        added = git.run(["add", "--", *relative_paths])
        if added.returncode != 0:
            raise InvalidInput(f"cannot stage the paths: {first_line(added.stderr)}")
    staged = git.run(["diff", "--cached", "--quiet"])
    if staged.returncode == 0:
        raise InvalidInput("nothing to commit: stage changes with 'paths' or 'all'")
    if staged.returncode != 1:
        raise ExecutionFailure(f"git diff failed: {first_line(staged.stderr)}")
    git.check(["commit", "--quiet", "-m", message])
    commit = git.check(["rev-parse", "HEAD"]).stdout.strip()
    changed = git.check(["diff-tree", "--no-commit-id", "--name-only", "-r", "-z", "--root", "HEAD"])
    files = [f for f in changed.stdout.split("\0") if f]
    return {"commit": commit, "summary": first_line(message), "files": files}


def _git_path(context: BuiltinContext, path: str) -> str:
    """``path`` checked against the sandbox, relative to the root; a symlink names itself."""
    workspace = context.workspace
    return workspace.relative(workspace.resolve(path, follow_final_symlink=False))


def _parse_branch(header: str) -> tuple[str | None, str | None]:
    """The branch and upstream from a ``git status --branch`` header line."""
    for prefix in ("No commits yet on ", "Initial commit on "):
        if header.startswith(prefix):
            return header[len(prefix) :], None
    if header.startswith("HEAD (no branch)"):
        return None, None
    names = header.split(" [", 1)[0]
    branch, _, upstream = names.partition("...")
    return branch or None, upstream or None


_PATH_IN_REPOSITORY = {
    "type": "string",
    "minLength": 1,
    "description": "Limit to this path, relative to the workspace.",
}

GIT_TOOLS: tuple[BuiltinTool, ...] = (
    BuiltinTool(
        name="git-status",
        description="Show the branch and the staged, changed and untracked paths of the repository.",
        input_schema=object_schema({}),
        capabilities=_READS,
        resource_slots=_repository_slot("read_only"),
        code=git_status,
    ),
    BuiltinTool(
        name="git-diff",
        description=(
            "Show the unified diff of unstaged changes, or of staged changes with `staged`,"
            " optionally limited to one path. Long diffs are truncated."
        ),
        input_schema=object_schema(
            {
                "staged": {
                    "type": "boolean",
                    "default": False,
                    "description": "Diff the index against HEAD instead of the working tree.",
                },
                "path": _PATH_IN_REPOSITORY,
            }
        ),
        capabilities=_READS,
        resource_slots=_repository_slot("read_only"),
        code=git_diff,
    ),
    BuiltinTool(
        name="git-log",
        description="List the latest commits (hash, author, email, date, subject), newest first.",
        input_schema=object_schema(
            {
                "max_count": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 500,
                    "default": 20,
                    "description": "Commits to return at most.",
                },
                "path": _PATH_IN_REPOSITORY,
            }
        ),
        capabilities=_READS,
        resource_slots=_repository_slot("read_only"),
        code=git_log,
    ),
    BuiltinTool(
        name="git-commit",
        description=(
            "Commit with `message`: first stage `paths` (or every change with `all`), then commit"
            " everything staged. Fails when nothing is staged."
        ),
        input_schema=object_schema(
            {
                "message": {"type": "string", "minLength": 1, "description": "The commit message."},
                "paths": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                    "minItems": 1,
                    "maxItems": 1000,
                    "description": "Paths to stage first, relative to the workspace.",
                },
                "all": {
                    "type": "boolean",
                    "default": False,
                    "description": "Stage every change, including removals and untracked files.",
                },
            },
            ("message",),
        ),
        capabilities=_WRITES,
        resource_slots=_repository_slot("read_write"),
        code=git_commit,
    ),
)
