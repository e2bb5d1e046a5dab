"""What a server offers beside tools: `ResourceSpec`, `ResourceTemplateSpec`, `PromptSpec`.

Like `ToolSpec` for tools: the runtime's own, namespaced description of a server's resources,
resource templates and prompts, kept by the registry so that listing them never starts a
server whose lists are known.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from actors.mcp.transport import RemotePrompt, RemoteResource, RemoteResourceTemplate

__all__ = ["Catalog", "PromptArgument", "PromptSpec", "ResourceSpec", "ResourceTemplateSpec"]


class ResourceSpec(BaseModel):
    """One resource of one server."""

    model_config = ConfigDict(frozen=True)

    namespace: str
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, namespace: str, remote: RemoteResource) -> ResourceSpec:
        return cls(
            namespace=namespace,
            uri=remote.uri,
            name=remote.name,
            title=remote.title,
            description=remote.description,
            mime_type=remote.mime_type,
            size=remote.size,
            annotations=dict(remote.annotations or {}),
        )


class ResourceTemplateSpec(BaseModel):
    """One resource template (an RFC 6570 URI template) of one server."""

    model_config = ConfigDict(frozen=True)

    namespace: str
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, namespace: str, remote: RemoteResourceTemplate) -> ResourceTemplateSpec:
        return cls(
            namespace=namespace,
            uri_template=remote.uri_template,
            name=remote.name,
            title=remote.title,
            description=remote.description,
            mime_type=remote.mime_type,
            annotations=dict(remote.annotations or {}),
        )


class PromptArgument(BaseModel):
    """One argument of a prompt."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str | None = None
    required: bool = False


class PromptSpec(BaseModel):
    """One prompt of one server, named ``namespace/prompt`` like a tool."""

    model_config = ConfigDict(frozen=True)

    name: str
    """``namespace/prompt``."""
    namespace: str
    title: str | None = None
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()

    @property
    def prompt_name(self) -> str:
        """The name the server knows the prompt by (without the namespace)."""
        return self.name.split("/", 1)[1]

    @property
    def required(self) -> tuple[str, ...]:
        """The names of the arguments the prompt cannot do without."""
        return tuple(a.name for a in self.arguments if a.required)

    @classmethod
    def of(cls, namespace: str, remote: RemotePrompt) -> PromptSpec:
        arguments = []
        for raw in remote.arguments:
            if isinstance(raw, dict) and isinstance(raw.get("name"), str):
                arguments.append(
                    PromptArgument(
                        name=raw["name"],
                        description=str(raw["description"])
                        if isinstance(raw.get("description"), str)
                        else None,
                        required=raw.get("required") is True,
                    )
                )
        return cls(
            name=f"{namespace}/{remote.name}",
            namespace=namespace,
            title=remote.title,
            description=remote.description,
            arguments=tuple(arguments),
        )


class Catalog(BaseModel):
    """Everything one server lists: tools aside, its resources, templates and prompts."""

    model_config = ConfigDict(frozen=True)

    resources: tuple[ResourceSpec, ...] = ()
    templates: tuple[ResourceTemplateSpec, ...] = ()
    prompts: tuple[PromptSpec, ...] = ()
