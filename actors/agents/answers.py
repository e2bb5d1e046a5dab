"""`ToolAnswer`: a `ToolResult` as the parts an agent framework hands its model.

Every adapter in `actors.agents` starts from this one reading of a result, so a text, an image,
an audio clip, an embedded resource, a resource link, structured output and an error look the
same to all of them; each adapter only maps these parts onto its framework's types.

Pure data: no I/O, no threads; built on whichever thread holds the result.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from actors.tools import ErrorType, ToolResult

__all__ = [
    "AudioPart",
    "ImagePart",
    "LinkPart",
    "Part",
    "ResourcePart",
    "TextPart",
    "ToolAnswer",
]


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    data: str
    """Base64, as MCP carries it."""
    mime_type: str

    def raw(self) -> bytes:
        """The image's bytes (empty when ``data`` is not base64)."""
        return _decoded(self.data)


@dataclass(frozen=True, slots=True)
class AudioPart:
    data: str
    """Base64, as MCP carries it."""
    mime_type: str

    def raw(self) -> bytes:
        """The clip's bytes (empty when ``data`` is not base64)."""
        return _decoded(self.data)


@dataclass(frozen=True, slots=True)
class ResourcePart:
    """An embedded resource: its ``text``, or its ``blob`` (base64)."""

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None


@dataclass(frozen=True, slots=True)
class LinkPart:
    """A resource link: where the content is, not the content."""

    uri: str
    name: str = ""
    mime_type: str | None = None
    description: str | None = None


Part = TextPart | ImagePart | AudioPart | ResourcePart | LinkPart


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """What a tool call gave, in parts: ``ok`` and the content, or the error and its type.

    ``structured`` is the tool's structured output (MCP ``structuredContent``, or a built-in
    tool's output), None when it has none. ``result`` is the `ToolResult` it was read from.
    """

    ok: bool
    parts: tuple[Part, ...]
    structured: Mapping[str, Any] | None
    error: str | None
    error_type: ErrorType | None
    result: ToolResult

    @classmethod
    def of(cls, result: ToolResult) -> ToolAnswer:
        """Read ``result``: MCP content blocks become parts; a built-in tool's output is one
        JSON text part and the structured output; a failure keeps the content the server sent
        with its error (an MCP tool error) or else is one text part, the classified error."""
        output = result.output or {}
        if result.success:
            content = output.get("content")
            if isinstance(content, list):
                structured = output.get("structuredContent")
                return cls(
                    True,
                    parts_of(content),
                    structured if isinstance(structured, Mapping) else None,
                    None,
                    None,
                    result,
                )
            text = json.dumps(output, ensure_ascii=False)
            return cls(True, (TextPart(text),), output, None, None, result)
        sent = result.metadata.get("content")
        parts = parts_of(sent) if isinstance(sent, list) and sent else (TextPart(result.error or ""),)
        return cls(False, parts, None, result.error or "", result.error_type, result)

    @property
    def text(self) -> str:
        """The answer as one text: text parts as they are, a line for every other part."""
        return "\n".join(part_text(part) for part in self.parts)


def parts_of(blocks: list[Any]) -> tuple[Part, ...]:
    """MCP content blocks (as JSON) as parts; a block of a type MCP does not define is kept
    as its JSON text, so nothing the server sent is lost."""
    return tuple(_part(block) for block in blocks)


def part_text(part: Part) -> str:
    """A part as a line a model reads where its framework takes text only."""
    match part:
        case TextPart(text=text):
            return text
        case ImagePart(mime_type=mime) | AudioPart(mime_type=mime):
            kind = "image" if isinstance(part, ImagePart) else "audio"
            return f"[{kind} {mime}, {len(part.raw())} bytes]"
        case ResourcePart(uri=uri, text=text) if text is not None:
            return f"[resource {uri}]\n{text}"
        case ResourcePart(uri=uri, mime_type=mime, blob=blob):
            return f"[resource {uri} {mime or 'application/octet-stream'}, {len(_decoded(blob or ''))} bytes]"
        case LinkPart(uri=uri, name=name):
            return f"[resource link {name or uri}: {uri}]"


def _part(block: Any) -> Part:
    if not isinstance(block, Mapping):
        return TextPart(json.dumps(block, ensure_ascii=False, default=str))
    kind = block.get("type")
    if kind == "text":
        return TextPart(str(block.get("text", "")))
    if kind in ("image", "audio"):
        data, mime = str(block.get("data", "")), str(block.get("mimeType", "application/octet-stream"))
        return ImagePart(data, mime) if kind == "image" else AudioPart(data, mime)
    if kind == "resource" and isinstance(resource := block.get("resource"), Mapping):
        text, blob = resource.get("text"), resource.get("blob")
        return ResourcePart(
            str(resource.get("uri", "")),
            _optional(resource.get("mimeType")),
            text if isinstance(text, str) else None,
            blob if isinstance(blob, str) else None,
        )
    if kind == "resource_link":
        return LinkPart(
            str(block.get("uri", "")),
            str(block.get("name", "")),
            _optional(block.get("mimeType")),
            _optional(block.get("description")),
        )
    return TextPart(json.dumps(dict(block), ensure_ascii=False, default=str))


def _optional(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _decoded(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return b""
