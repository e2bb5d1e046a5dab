"""Tool definitions and results in the Messages API's own types (`ToolParam`, ``tool_result``).

`tool_param` declares a tool as its server gave it (its schema as it is, never remodelled);
`result_content` maps a `ToolAnswer` part by part onto ``tool_result`` content, so nothing the
server sent is lost: what the API has no block for becomes a line of text.

Pure functions: no I/O, no state; they run on whichever thread holds the answer.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from typing import Any, cast

from anthropic.types import (
    Base64ImageSourceParam,
    Base64PDFSourceParam,
    DocumentBlockParam,
    ImageBlockParam,
    TextBlockParam,
    ToolParam,
    ToolResultBlockParam,
)
from anthropic.types.tool_result_block_param import Content

from actors.agents.answers import ImagePart, LinkPart, Part, ResourcePart, TextPart, ToolAnswer, part_text
from actors.agents.toolbox import AgentTool

__all__ = ["IMAGE_MEDIA_TYPES", "result_content", "tool_param", "tool_result"]

IMAGE_MEDIA_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The image types the Messages API takes in a base64 source; any other image becomes a line."""


def tool_param(tool: AgentTool) -> ToolParam:
    """``tool`` as a ``tools`` entry of ``messages.create``: its name, description and schema."""
    param: ToolParam = {"name": tool.name, "input_schema": dict(tool.input_schema)}
    if tool.description:
        param["description"] = tool.description
    return param


def result_content(answer: ToolAnswer) -> list[Content]:
    """``answer`` as ``tool_result`` content: a failure's classified error first; then text,
    images (base64, the types the API takes), a PDF as a document block, and a line for each
    other part; structured output as JSON text unless a text part already carries it."""
    blocks: list[Content] = []
    parts: Iterable[Part] = answer.parts
    if not answer.ok:
        error = _error_text(answer)
        blocks.append(_text(error))
        # The server's own text is in the error already; its other content follows.
        parts = [p for p in parts if not (isinstance(p, TextPart) and p.text in error)]
    for part in parts:
        blocks.extend(_blocks(part))
    if answer.structured is not None and not _carried(answer.structured, answer.parts):
        blocks.append(_text(json.dumps(answer.structured, ensure_ascii=False)))
    return blocks


def tool_result(tool_use_id: str, answer: ToolAnswer) -> ToolResultBlockParam:
    """The ``tool_result`` block answering ``tool_use_id`` (``is_error`` when it failed)."""
    block: ToolResultBlockParam = {"type": "tool_result", "tool_use_id": tool_use_id}
    if content := result_content(answer):
        block["content"] = content
    if not answer.ok:
        block["is_error"] = True
    return block


def _blocks(part: Part) -> list[Content]:
    match part:
        case TextPart(text=text):
            # The API refuses an empty text block; an empty text says nothing.
            return [_text(text)] if text else []
        case ImagePart(data=data, mime_type=mime) if mime in IMAGE_MEDIA_TYPES and part.raw():
            return [_image(data, mime)]
        case ResourcePart(blob=str()):
            return _blob_blocks(part)
        case LinkPart(description=description) if description:
            return [_text(f"{part_text(part)}\n{description}")]
    return [_text(part_text(part))]


def _blob_blocks(part: ResourcePart) -> list[Content]:
    uri, mime, blob = part.uri, part.mime_type, part.blob or ""
    raw = _decoded(blob)
    if raw and mime == "application/pdf":
        source: Base64PDFSourceParam = {"type": "base64", "media_type": "application/pdf", "data": blob}
        document: DocumentBlockParam = {"type": "document", "source": source, "title": uri}
        return [document]
    if raw and mime in IMAGE_MEDIA_TYPES:
        return [_text(f"[resource {uri}]"), _image(blob, mime)]
    if raw and mime is not None and mime.startswith("text/"):
        try:
            return [_text(f"[resource {uri}]\n{raw.decode()}")]
        except UnicodeDecodeError:
            pass
    return [_text(part_text(part))]


def _text(text: str) -> TextBlockParam:
    return {"type": "text", "text": text}


def _image(data: str, mime: str) -> ImageBlockParam:
    # ``mime`` is one of IMAGE_MEDIA_TYPES: the literal type the source takes.
    source = cast(Base64ImageSourceParam, {"type": "base64", "media_type": mime, "data": data})
    return {"type": "image", "source": source}


def _error_text(answer: ToolAnswer) -> str:
    """The error as the model reads it, starting with its type's label (from ``error_type``)."""
    label = answer.error_type.label if answer.error_type is not None else "error"
    text = answer.error or label
    return text if text == label or text.startswith(f"{label}:") else f"{label}: {text}"


def _carried(structured: Mapping[str, Any], parts: Iterable[Part]) -> bool:
    """Whether a text part already says what the structured output does: as its JSON, or as the
    value MCP SDKs wrap as ``{"result": value}`` when a tool returns no object."""
    for part in parts:
        if not isinstance(part, TextPart):
            continue
        if structured == {"result": part.text}:
            return True
        try:
            value = json.loads(part.text)
        except ValueError:
            continue
        if structured in (value, {"result": value}):
            return True
    return False


def _decoded(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return b""
