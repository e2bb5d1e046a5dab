"""What tests need, apart from the product: `MockTransport` and `BlockingAdapter`.

A host's own tests use these too: `MockTransport` stands in for a server (pass it to
`Runtime.start(transports={...})`), `BlockingAdapter` drives one server's adapter without the
actors. Nothing in the runtime imports this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actors.exports import lazy_exports

if TYPE_CHECKING:
    from actors.testing.blocking import BlockingAdapter
    from actors.testing.mock import Completer, MockTransport, PromptBehaviour, ResourceContent, ToolBehaviour

__all__ = [
    "BlockingAdapter",
    "Completer",
    "MockTransport",
    "PromptBehaviour",
    "ResourceContent",
    "ToolBehaviour",
]

_HOMES = {"BlockingAdapter": "actors.testing.blocking"}

if not TYPE_CHECKING:  # mypy sees the imports above; an unknown name stays an error for it
    __getattr__, __dir__ = lazy_exports(__name__, __all__, _HOMES, default="actors.testing.mock")
