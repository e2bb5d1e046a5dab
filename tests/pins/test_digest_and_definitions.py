"""The canonical digest (RFC 8785) and what of each kind of definition is pinned."""

from __future__ import annotations

import json

from actors.mcp.catalog import PromptArgument, PromptSpec, ResourceTemplateSpec
from actors.mcp.transport import RemoteTool
from actors.pins import canonical, digest
from actors.pins.definitions import prompt_definition, template_definition, tool_definition

ECHO = {
    "name": "echo",
    "description": "Echo the text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    "annotations": {"readOnlyHint": True},
}


def test_the_digest_ignores_key_order_spacing_and_number_spelling() -> None:
    shuffled = json.loads(
        '{"annotations": {"readOnlyHint": true}, "inputSchema": {"properties": {"text": {"type": "string"}},'
        ' "type": "object"}, "description": "Echo the text.", "name": "echo"}'
    )
    assert digest(shuffled) == digest(ECHO)
    assert digest({"maximum": 10}) == digest({"maximum": 10.0})
    assert canonical({"b": 1, "a": [1.0, "é"]}) == '{"a":[1,"é"],"b":1}'.encode()
    assert digest(ECHO).startswith("sha256:") and len(digest(ECHO)) == len("sha256:") + 64


def test_one_changed_character_or_annotation_changes_the_digest() -> None:
    assert digest({**ECHO, "description": "Echo the text!"}) != digest(ECHO)
    assert digest({**ECHO, "annotations": {"readOnlyHint": False}}) != digest(ECHO)
    assert digest({**ECHO, "title": "Echo"}) != digest(ECHO)


def test_a_definition_jcs_cannot_encode_is_still_pinned() -> None:
    huge = {"maximum": 2**60}
    assert digest(huge).startswith("sha256-json:")
    assert digest(huge) == digest({"maximum": 2**60}) != digest({"maximum": 2**60 + 1})


def test_a_tool_is_pinned_whole_as_its_server_sent_it() -> None:
    sent = {**ECHO, "title": "Echo", "icons": [{"src": "https://x/icon.png"}], "_meta": {"v": 1}}
    tool = RemoteTool(name="echo", description="Echo the text.", definition=sent)
    assert tool_definition(tool) == sent


def test_a_tool_without_its_json_is_pinned_from_its_fields() -> None:
    tool = RemoteTool(
        name="echo",
        description="Echo the text.",
        input_schema=ECHO["inputSchema"],  # type: ignore[arg-type]
        annotations={"readOnlyHint": True},
        task_support="optional",
    )
    assert tool_definition(tool) == {**ECHO, "execution": {"taskSupport": "optional"}}
    assert tool_definition(RemoteTool(name="bare")) == {"name": "bare", "inputSchema": {"type": "object"}}


def test_prompts_and_templates_are_pinned_by_what_the_runtime_hands_on() -> None:
    prompt = PromptSpec(
        name="ns/greet",
        namespace="ns",
        description="Greet someone.",
        arguments=(
            PromptArgument(name="who", required=True),
            PromptArgument(name="style", description="how"),
        ),
    )
    assert prompt_definition(prompt) == {
        "name": "greet",
        "description": "Greet someone.",
        "arguments": [
            {"name": "who", "required": True},
            {"name": "style", "description": "how", "required": False},
        ],
    }
    template = ResourceTemplateSpec(
        namespace="ns", uri_template="note://{name}", name="note", mime_type="text/plain"
    )
    assert template_definition(template) == {
        "uriTemplate": "note://{name}",
        "name": "note",
        "mimeType": "text/plain",
    }
