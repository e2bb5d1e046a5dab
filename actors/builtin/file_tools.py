"""The five file tools: read, write, edit, list and search files inside the workspace.

Paths are resolved by `Workspace` (nothing outside the root is read, listed or written) and
every answer is bounded: reads by the workspace's ``max_read_bytes``, listings and searches by
a result count and a cap on the entries scanned.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import regex

from actors.builtin.deadline import remaining
from actors.builtin.definition import BuiltinContext, BuiltinTool, object_schema
from actors.builtin.errors import ExecutionFailure, InvalidInput
from actors.builtin.pathmatch import PathPattern
from actors.builtin.workspace import Workspace
from actors.tools import ResourceSlot, ToolCapabilities

__all__ = [
    "FILE_TOOLS",
    "MAX_LINE_CHARS",
    "MAX_SCANNED_ENTRIES",
    "edit_file",
    "list_files",
    "read_file",
    "search_files",
    "write_file",
]

MAX_SCANNED_ENTRIES = 100_000
"""Entries a listing or search walks at most before it stops and reports ``truncated``."""

MAX_LINE_CHARS = 500
"""Characters of a matching line a search returns."""

SEARCH_SECONDS = 10.0
"""The longest a file-search may take, so a backtracking pattern cannot hold a worker for ever."""

_BINARY_SNIFF_BYTES = 8192
_READ_CHUNK = 64 * 1024

_PATH = {"type": "string", "minLength": 1, "description": "A file path relative to the workspace."}
_FOLDER = {
    "type": "string",
    "minLength": 1,
    "default": ".",
    "description": "The folder to look in, relative to the workspace.",
}
_READS = ToolCapabilities(read_only=True, writes=False, checkpointable=True)
_WRITES = ToolCapabilities(read_only=False, writes=True, checkpointable=True)


def _file_slot(access: Literal["read_only", "read_write"]) -> tuple[ResourceSlot, ...]:
    return (
        ResourceSlot(name="file", resource_type="file", access=access, binding="parameter", parameter="path"),
    )


_DIRECTORY_SLOT = (
    ResourceSlot(
        name="directory",
        resource_type="directory",
        access="read_only",
        binding="parameter",
        parameter="path",
    ),
)


def read_file(context: BuiltinContext, inputs: dict[str, Any]) -> dict[str, Any]:
    """Lines ``offset`` (0-based) onward, at most ``limit`` lines and ``max_read_bytes`` bytes."""
    workspace = context.workspace
    path: str = inputs["path"]
    offset: int = inputs.get("offset", 0)
    limit: int | None = inputs.get("limit")
    budget = workspace.max_read_bytes
    with workspace.open_regular_file(path) as (stream, info, real):
        skipped = 0
        while skipped < offset:
            piece = stream.readline(_READ_CHUNK)
            if not piece:
                break
            if piece.endswith(b"\n"):
                skipped += 1
        collected = bytearray()
        complete_lines = 0
        truncated = False
        while limit is None or complete_lines < limit:
            piece = stream.readline(min(_READ_CHUNK, budget - len(collected) + 1))
            if not piece:
                break
            if len(collected) + len(piece) > budget:
                collected += piece[: budget - len(collected)]
                truncated = True
                break
            collected += piece
            if piece.endswith(b"\n"):
                complete_lines += 1
        more = truncated or bool(stream.read(1))
    content = collected.decode("utf-8", errors="replace")
    line_count = complete_lines + (1 if collected and not collected.endswith(b"\n") else 0)
    # A single line longer than the bound still moves the reader on, or it would loop forever.
    next_offset = offset + max(complete_lines, 1) if more else None
    if truncated:
        content += (
            f"\n[... truncated: at most {budget} bytes are returned of this {info.st_size}-byte file;"
            f" continue with offset={next_offset} ...]"
        )
    return {
        "path": workspace.relative(real),
        "content": content,
        "offset": offset,
        "line_count": line_count,
        "size_bytes": info.st_size,
        "truncated": truncated,
        "next_offset": next_offset,
    }


def write_file(context: BuiltinContext, inputs: dict[str, Any]) -> dict[str, Any]:
    """Create or replace a file atomically, creating parent folders."""
    outcome = context.workspace.write_text(inputs["path"], inputs["content"])
    return {"path": outcome.path, "bytes_written": outcome.bytes_written, "created": outcome.created}


def edit_file(context: BuiltinContext, inputs: dict[str, Any]) -> dict[str, Any]:
    """Replace the one occurrence of ``old_text`` (every one with ``replace_all``)."""
    workspace = context.workspace
    path: str = inputs["path"]
    old_text: str = inputs["old_text"]
    new_text: str = inputs["new_text"]
    replace_all: bool = inputs.get("replace_all", False)
    workspace.resolve_for_write(path)
    data, size = workspace.read_bytes(path)
    if size > len(data):
        raise InvalidInput(
            f"{path!r} is {size} bytes, more than the {workspace.max_read_bytes} bytes that can be edited"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{path!r} is not UTF-8 text") from None
    first = text.find(old_text)
    if first < 0:
        raise InvalidInput(f"old_text does not occur in {path!r}; nothing was changed")
    if replace_all:
        replacements = text.count(old_text)
        texts: tuple[str, ...] = (text.replace(old_text, new_text),)
    else:
        # Searching from first + 1 also catches overlapping occurrences ("aa" in "aaa").
        if text.find(old_text, first + 1) >= 0:
            raise InvalidInput(
                f"old_text occurs more than once in {path!r}; give more context or set replace_all"
            )
        replacements = 1
        texts = (text[:first], new_text, text[first + len(old_text) :])
    outcome = workspace.write_text(path, *texts)
    return {"path": outcome.path, "replacements": replacements, "bytes_written": outcome.bytes_written}


def list_files(context: BuiltinContext, inputs: dict[str, Any]) -> dict[str, Any]:
    """Entries under ``path`` whose path relative to it matches the glob ``pattern``."""
    workspace = context.workspace
    pattern = PathPattern(inputs.get("pattern", "**/*"))
    base: str = inputs.get("path", ".")
    limit: int = inputs.get("limit", 1000)
    prefix = _folder_prefix(workspace, base)
    entries: list[dict[str, Any]] = []
    truncated = False
    for scanned, entry in enumerate(workspace.walk(base), start=1):
        if scanned > MAX_SCANNED_ENTRIES:
            truncated = True
            break
        if not pattern.matches(entry.path[len(prefix) :]):
            continue
        if len(entries) == limit:
            truncated = True
            break
        item: dict[str, Any] = {"path": entry.path, "type": entry.kind}
        if entry.size is not None:
            item["size"] = entry.size
        entries.append(item)
    return {"entries": entries, "count": len(entries), "truncated": truncated}


def search_files(context: BuiltinContext, inputs: dict[str, Any]) -> dict[str, Any]:
    """Lines matching the regular expression ``pattern`` in files matching ``glob``."""
    workspace = context.workspace
    try:
        pattern = regex.compile(inputs["pattern"], regex.IGNORECASE if inputs.get("ignore_case") else 0)
    except regex.error as exc:
        raise InvalidInput(f"pattern is not a valid regular expression: {exc}") from None
    # A backtracking pattern can take for ever: bound the whole search, and let other threads
    # run meanwhile (concurrent=True releases the GIL while matching).
    budget = remaining(SEARCH_SECONDS)
    deadline = time.monotonic() + budget
    glob = PathPattern(inputs.get("glob", "**/*"))
    base: str = inputs.get("path", ".")
    max_results: int = inputs.get("max_results", 200)
    prefix = _folder_prefix(workspace, base)
    matches: list[dict[str, Any]] = []
    truncated = False
    files_scanned = 0
    files_cut = 0
    for scanned, entry in enumerate(workspace.walk(base), start=1):
        if scanned > MAX_SCANNED_ENTRIES:
            truncated = True
            break
        if entry.kind != "file" or not glob.matches(entry.path[len(prefix) :]):
            continue
        try:
            data, size = workspace.read_bytes(entry.path)
        except InvalidInput:
            continue  # vanished or unreadable since the walk saw it
        if b"\x00" in data[:_BINARY_SNIFF_BYTES]:
            continue
        files_scanned += 1
        files_cut += size > len(data)
        text = data.decode("utf-8", errors="replace")
        for number, line in enumerate(text.split("\n"), start=1):
            try:
                found = pattern.search(line, concurrent=True, timeout=max(deadline - time.monotonic(), 0.001))
            except TimeoutError:
                raise ExecutionFailure(
                    f"the search took longer than {budget:.1f}s; "
                    "the pattern may backtrack catastrophically (nested quantifiers such as (a+)+)"
                ) from None
            if found is None:
                continue
            if len(matches) == max_results:
                truncated = True
                break
            shown = line.removesuffix("\r")
            if len(shown) > MAX_LINE_CHARS:
                shown = shown[:MAX_LINE_CHARS] + "…"
            matches.append({"path": entry.path, "line": number, "text": shown})
        if truncated:
            break
    return {
        "matches": matches,
        "count": len(matches),
        "truncated": truncated,
        "files_scanned": files_scanned,
        "files_cut": files_cut,
    }


def _folder_prefix(workspace: Workspace, base: str) -> str:
    """What to strip from a workspace-relative path to make it relative to ``base``."""
    relative = workspace.relative(workspace.resolve(base))
    return "" if relative == "." else relative + "/"


FILE_TOOLS: tuple[BuiltinTool, ...] = (
    BuiltinTool(
        name="file-read",
        description=(
            "Read a UTF-8 text file in the workspace, optionally from line `offset` (0-based) and at"
            " most `limit` lines. Large files are truncated with a marker; continue with `next_offset`."
        ),
        input_schema=object_schema(
            {
                "path": _PATH,
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "Lines to skip first.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 1_000_000,
                    "description": "Lines to return at most.",
                },
            },
            ("path",),
        ),
        capabilities=_READS,
        resource_slots=_file_slot("read_only"),
        code=read_file,
    ),
    BuiltinTool(
        name="file-write",
        description=(
            "Create or replace a file in the workspace with `content` (UTF-8), atomically; parent"
            " folders are created. Writing into .git is refused."
        ),
        input_schema=object_schema(
            {"path": _PATH, "content": {"type": "string", "description": "The whole new content."}},
            ("path", "content"),
        ),
        capabilities=_WRITES,
        resource_slots=_file_slot("read_write"),
        code=write_file,
    ),
    BuiltinTool(
        name="file-edit",
        description=(
            "Replace the exact text `old_text` with `new_text` in a file. Fails, changing nothing,"
            " when `old_text` is absent or occurs more than once (unless `replace_all`)."
        ),
        input_schema=object_schema(
            {
                "path": _PATH,
                "old_text": {"type": "string", "minLength": 1, "description": "The exact text to replace."},
                "new_text": {"type": "string", "description": "The replacement."},
                "replace_all": {
                    "type": "boolean",
                    "default": False,
                    "description": "Replace every occurrence.",
                },
            },
            ("path", "old_text", "new_text"),
        ),
        capabilities=_WRITES,
        resource_slots=_file_slot("read_write"),
        code=edit_file,
    ),
    BuiltinTool(
        name="file-list",
        description=(
            "List files and folders under `path` whose path relative to it matches the glob"
            " `pattern` (`*`, `?`, `[...]` within a segment, `**` for any depth). .git is skipped."
        ),
        input_schema=object_schema(
            {
                "pattern": {
                    "type": "string",
                    "minLength": 1,
                    "default": "**/*",
                    "description": "A glob relative to `path`.",
                },
                "path": _FOLDER,
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 10_000,
                    "default": 1000,
                    "description": "Entries to return at most.",
                },
            }
        ),
        capabilities=_READS,
        resource_slots=_DIRECTORY_SLOT,
        code=list_files,
    ),
    BuiltinTool(
        name="file-search",
        description=(
            "Search text files under `path` matching the glob `glob` for lines matching the regular"
            " expression `pattern`; returns path, line number and line text per match."
        ),
        input_schema=object_schema(
            {
                "pattern": {
                    "type": "string",
                    "minLength": 1,
                    "description": "A Python regular expression, matched per line.",
                },
                "glob": {
                    "type": "string",
                    "minLength": 1,
                    "default": "**/*",
                    "description": "Which files to search, relative to `path`.",
                },
                "path": _FOLDER,
                "ignore_case": {"type": "boolean", "default": False},
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 2000,
                    "default": 200,
                    "description": "Matches to return at most.",
                },
            },
            ("pattern",),
        ),
        capabilities=_READS,
        resource_slots=_DIRECTORY_SLOT,
        code=search_files,
    ),
)
