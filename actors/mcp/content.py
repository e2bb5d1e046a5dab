"""MCP content as a person reads it: text as text, one line per image, audio clip, embedded
resource and resource link, and binary content (base64 ``data``/``blob``) saved to a folder.

Used by the command and the Robot library on their own threads: it reads no server and never
runs on the event loop or an actor.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["ContentText", "size_text"]

# MIME types servers send that `mimetypes` has no extension for (it knows audio/x-wav, not audio/wav).
_EXTENSIONS = {"audio/wav": ".wav", "audio/mp3": ".mp3", "audio/webm": ".webm"}

# A name from a URI that is safe to use as a file name as it is (no separator, no leading dot).
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def size_text(size: int) -> str:
    """Bytes for a reader, in decimal units: ``512 B``, ``1.3 kB``, ``3.4 MB``."""
    if size < 1000:
        return f"{size} B"
    value = size / 1000
    for unit in ("kB", "MB"):
        if value < 999.95:  # else it would round up to "1000.0"
            return f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


class ContentText:
    """Turns content blocks, resource contents and prompt messages into lines of text.

    With ``save_to``, binary content is written to files in that folder (created if missing;
    an existing file is never overwritten) and each one-liner says where it went.
    """

    def __init__(self, save_to: Path | None = None) -> None:
        self.save_to = save_to
        self.saved: list[Path] = []
        """The files written so far, in order."""

    def blocks(self, blocks: Iterable[Any]) -> list[str]:
        """Lines for a tool result's ``content``: text as text, a one-liner for anything else."""
        lines: list[str] = []
        for position, block in enumerate(blocks, 1):
            lines.extend(self.block(block, position))
        return lines

    def block(self, block: Any, position: int = 1) -> list[str]:
        """Lines for one content block (``position`` numbers the files it is saved to)."""
        if not isinstance(block, Mapping):
            return [f"[{type(block).__name__}]"]
        kind = block.get("type")
        if kind == "text":
            return str(block.get("text", "")).splitlines() or [""]
        if kind in ("image", "audio"):
            mime = _text(block.get("mimeType")) or "application/octet-stream"
            return [self._binary(f"{kind} {mime}", block.get("data"), kind, mime, position, None)]
        if kind == "resource":
            resource = block.get("resource")
            return [self._resource(resource if isinstance(resource, Mapping) else {}, position)]
        if kind == "resource_link":
            return [f"[link {_text(block.get('uri')) or '?'}]"]
        return [f"[{kind}]" if isinstance(kind, str) and kind else "[content of no type]"]

    def contents(self, contents: Iterable[Any]) -> list[str]:
        """Lines for a read resource's ``contents``: text as text, binary as a one-liner."""
        lines: list[str] = []
        for position, given in enumerate(contents, 1):
            item = given if isinstance(given, Mapping) else {}
            if "text" in item and "blob" not in item:
                lines.extend(str(item["text"]).splitlines() or [""])
            else:
                lines.append(self._resource(item, position))
        return lines

    def messages(self, messages: Iterable[Any]) -> list[str]:
        """Lines for a prompt's ``messages``: ``role: `` before each message's content."""
        lines: list[str] = []
        for position, given in enumerate(messages, 1):
            message = given if isinstance(given, Mapping) else {}
            role = _text(message.get("role")) or "?"
            body = self.block(message.get("content"), position)
            lines.append(f"{role}: {body[0]}")
            lines.extend(body[1:])
        return lines

    def _resource(self, resource: Mapping[str, Any], position: int) -> str:
        uri = _text(resource.get("uri")) or "?"
        mime = _text(resource.get("mimeType"))
        label = f"resource {uri} {mime}" if mime else f"resource {uri}"
        if "blob" not in resource:
            return f"[{label}]"
        return self._binary(label, resource.get("blob"), "resource", mime, position, uri)

    def _binary(
        self, label: str, encoded: Any, kind: str, mime: str | None, position: int, uri: str | None
    ) -> str:
        try:
            data = base64.b64decode(encoded if isinstance(encoded, str) else "", validate=True)
        except (binascii.Error, ValueError):
            return f"[{label}, not base64]"
        line = f"[{label}, {size_text(len(data))}]"
        if self.save_to is None:
            return line
        path = self._write(data, _file_name(kind, mime, position, uri))
        return f"{line} saved to {path}"

    def _write(self, data: bytes, name: str) -> Path:
        assert self.save_to is not None
        self.save_to.mkdir(parents=True, exist_ok=True)
        stem, suffix = Path(name).stem, Path(name).suffix
        candidate, n = self.save_to / name, 1
        while True:
            try:
                with candidate.open("xb") as file:
                    file.write(data)
            except FileExistsError:
                n += 1
                candidate = self.save_to / f"{stem}-{n}{suffix}"
                continue
            self.saved.append(candidate)
            return candidate


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _file_name(kind: str, mime: str | None, position: int, uri: str | None) -> str:
    """The URI's last segment when it is a plain file name, else ``<kind>-<position>``; with the
    MIME type's extension when it has none. Never a path: a server does not choose where to write."""
    extension = (_EXTENSIONS.get(mime) or mimetypes.guess_extension(mime) if mime else None) or ".bin"
    if uri:
        last = urllib.parse.unquote(urllib.parse.urlparse(uri).path.rstrip("/").rpartition("/")[2])
        if _SAFE_NAME.match(last):
            return last if Path(last).suffix else last + extension
    return f"{kind}-{position}{extension}"
