"""Which client capabilities a call with its own inputs declares to its server: the session's
own, with sampling, elicitation, roots and the extensions as the inputs say (never one more):
a server must not make a task of a call whose caller cannot follow one."""

from __future__ import annotations

from actors.mcp.sdk_transport.rounds import narrowed

OWN = {"sampling": {}, "elicitation": {"form": {}}, "roots": {"listChanged": True}, "extensions": {"x": {}}}


def test_the_inputs_narrow_what_the_call_declares() -> None:
    assert narrowed(OWN, {"sampling": {}}) == {"sampling": {}}
    assert narrowed(OWN, {"extensions": {"x": {"v": 1}, "y": {}}}) == {"extensions": {"x": {}}}


def test_the_inputs_never_widen_it() -> None:
    assert narrowed({"roots": {}}, {"sampling": {}, "roots": {}}) == {"roots": {}}


def test_the_inputs_values_are_declared() -> None:
    assert narrowed(OWN, {"elicitation": {"url": {}}})["elicitation"] == {"url": {}}
