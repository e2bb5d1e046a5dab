"""What is pinned of each thing a server lists: its definition, as MCP JSON.

- A tool: the whole ``Tool`` the server sent (`RemoteTool.definition`): name, title,
  description, input and output schema, annotations, execution, icons, ``_meta``; a transport
  that keeps no such JSON (a test double) gives the fields it has, in the same shape.
- A prompt: name, title, description and arguments (each argument's name, description and
  whether it is required); a resource template: its URI template, name, title, description,
  MIME type and annotations. That is every property of theirs the runtime keeps and hands on
  (to the host, the gateway's clients, the schema cache): what a model can be told.

- A skill (the Skills extension): its whole entry, named by its ``SKILL.md`` URI: its
  frontmatter and its manifest, each file's URI and digest. An approval binds to that content:
  a file changed, added or removed changes the skill's pin.

Each kind of list has its own names (`PinKind`); a template is named by its ``name``. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, Literal

from actors.mcp.catalog import PromptSpec, ResourceTemplateSpec
from actors.mcp.transport import RemoteTool

__all__ = [
    "KINDS",
    "KIND_WORDS",
    "PinKind",
    "prompt_definition",
    "prompt_definitions",
    "template_definition",
    "template_definitions",
    "tool_definition",
    "tool_definitions",
]

PinKind = Literal["tools", "prompts", "templates", "skills"]
KINDS: Final[tuple[PinKind, ...]] = ("tools", "prompts", "templates", "skills")
KIND_WORDS: Final[dict[PinKind, str]] = {
    "tools": "tool",
    "prompts": "prompt",
    "templates": "resource template",
    "skills": "skill",
}
"""How a message names one thing of each kind."""

Definition = dict[str, Any]


def _present(fields: dict[str, Any]) -> Definition:
    """``fields`` without the unset ones (None): an absent property and a null one are the same."""
    return {key: value for key, value in fields.items() if value is not None}


def tool_definition(tool: RemoteTool) -> Definition:
    """The definition of ``tool`` as its server sent it (see the module)."""
    if tool.definition is not None:
        return dict(tool.definition)
    return _present(
        {
            "name": tool.name,
            "description": tool.description or None,
            "inputSchema": tool.input_schema,
            "outputSchema": tool.output_schema,
            "annotations": tool.annotations,
            "execution": {"taskSupport": tool.task_support} if tool.task_support is not None else None,
        }
    )


def prompt_definition(prompt: PromptSpec) -> Definition:
    """The definition of ``prompt`` (named without its namespace)."""
    return _present(
        {
            "name": prompt.prompt_name,
            "title": prompt.title,
            "description": prompt.description,
            "arguments": [
                _present({"name": a.name, "description": a.description, "required": a.required})
                for a in prompt.arguments
            ],
        }
    )


def template_definition(template: ResourceTemplateSpec) -> Definition:
    """The definition of a resource template."""
    return _present(
        {
            "uriTemplate": template.uri_template,
            "name": template.name,
            "title": template.title,
            "description": template.description,
            "mimeType": template.mime_type,
            "annotations": template.annotations or None,
        }
    )


def tool_definitions(tools: Iterable[RemoteTool]) -> dict[str, Definition]:
    """Each tool's definition by its name."""
    return {tool.name: tool_definition(tool) for tool in tools}


def prompt_definitions(prompts: Iterable[PromptSpec]) -> dict[str, Definition]:
    """Each prompt's definition by its name (without the namespace)."""
    return {prompt.prompt_name: prompt_definition(prompt) for prompt in prompts}


def template_definitions(templates: Iterable[ResourceTemplateSpec]) -> dict[str, Definition]:
    """Each resource template's definition by its name."""
    return {template.name: template_definition(template) for template in templates}
