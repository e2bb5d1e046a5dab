"""`ClientInputs`: a handshake-era client's request answers its backend's questions, pure parts.

What needs a capability the client did not declare is answered (or refused) without a word to
the client; the rest goes to the client, through tests/gateway/test_input_rounds.py.
"""

from __future__ import annotations

from types import SimpleNamespace

import mcp_types as types
import pytest

from actors.gateway.client_inputs import ClientInputs
from actors.gateway.handoff import LoopHandoff
from actors.mcp.inputs import InputRefused

ELICIT = {"method": "elicitation/create", "params": {"message": "name?", "requestedSchema": {}}}
SAMPLE = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
ROOTS = {"method": "roots/list", "params": {}}


ELICITS = types.ClientCapabilities(elicitation=types.ElicitationCapability())


def _inputs(capabilities: types.ClientCapabilities) -> ClientInputs:
    session = SimpleNamespace(client_capabilities=capabilities)
    return ClientInputs(SimpleNamespace(session=session, request_id=7), LoopHandoff())


def test_what_the_client_did_not_declare_is_answered_as_it_would() -> None:
    answers = _inputs(types.ClientCapabilities()).ask({"name": ELICIT, "roots": ROOTS})
    assert answers.result(timeout=1) == {"name": {"action": "decline"}, "roots": {"roots": []}}


def test_sampling_the_client_did_not_declare_is_refused_with_32021() -> None:
    answers = _inputs(ELICITS).ask({"greeting": SAMPLE})
    with pytest.raises(InputRefused) as refused:
        answers.result(timeout=1)
    assert refused.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY
    assert refused.value.data == {"requiredCapabilities": {"sampling": {}}}


def test_a_gateway_not_serving_refuses_instead_of_hanging() -> None:
    answers = _inputs(ELICITS).ask({"name": ELICIT})
    with pytest.raises(InputRefused, match="not serving"):
        answers.result(timeout=1)
