"""Reading resources (text, binary, from a template) and getting prompts, through the runtime and
the message API; refusals that need no server, and classified answers for what does not exist."""

from __future__ import annotations

import base64

from actors import ErrorType, Runtime
from actors.runtime.messages import GetPrompt, ReadResource
from tests.conftest import child_pids
from tests.servers.surface_server import HELLO_TEXT, HELLO_URI, PIXEL, PIXEL_URI
from tests.surface.conftest import WAIT, ServerEntry, config, contents_of, read_text

NS = "s"
EV = "ev"
# What a server may answer for something it does not have: either is classified.
NOT_THERE = {ErrorType.NOT_FOUND, ErrorType.SERVER_ERROR}


def test_text_binary_and_templated_resources_are_read(surface: ServerEntry) -> None:
    with Runtime.start(config({NS: surface()})) as rt:
        [text] = contents_of(rt.read_resource(NS, HELLO_URI, timeout=WAIT))
        assert text == {"uri": HELLO_URI, "mimeType": "text/plain", "text": HELLO_TEXT}

        [blob] = contents_of(rt.read_resource(NS, PIXEL_URI, timeout=WAIT))
        assert (blob["uri"], blob["mimeType"]) == (PIXEL_URI, "image/png")
        assert "text" not in blob
        assert base64.b64decode(blob["blob"]) == PIXEL

        assert read_text(rt.read_resource(NS, "surface://notes/alpha", timeout=WAIT)) == "Note alpha"

        # The message API: the reply is the same kind of result.
        message = ReadResource(namespace=NS, uri=HELLO_URI, timeout=WAIT)
        rt.registry.tell(message)
        assert read_text(message.reply.result(timeout=WAIT)) == HELLO_TEXT
        status = rt.status(NS)[0]
        assert (status.state, status.errors, status.in_flight) == ("running", 0, 0)


def test_a_prompt_is_filled_in_with_its_arguments(surface: ServerEntry) -> None:
    with Runtime.start(config({NS: surface()})) as rt:
        result = rt.get_prompt(f"{NS}/greet", {"name": "Ann", "style": "pirate"}, timeout=WAIT)
        assert result.success, result
        assert result.output is not None
        assert result.output["description"] == "Greet someone, in a style."
        [message] = result.output["messages"]
        assert message["role"] == "user"
        assert message["content"] == {"type": "text", "text": "Say hello to Ann in a pirate style."}

        # The optional argument may be left out; the message API answers alike.
        asked = GetPrompt(namespace=NS, prompt="greet", arguments={"name": "Bo"})
        rt.registry.tell(asked)
        answer = asked.reply.result(timeout=WAIT)
        assert answer.success, answer
        assert answer.output is not None
        assert answer.output["messages"][0]["content"]["text"] == "Say hello to Bo in a plain style."
        plain = rt.get_prompt(f"{NS}/plain", timeout=WAIT)
        assert plain.output is not None and len(plain.output["messages"]) == 1


def test_missing_prompt_arguments_are_refused_without_waking_the_server(surface_stdio: ServerEntry) -> None:
    with Runtime.start(config({NS: surface_stdio()})) as rt:
        assert rt.list_prompts(NS)  # learn the prompts, then let the server go
        rt.stop_server(NS)
        children = child_pids()

        missing = rt.get_prompt(f"{NS}/greet", {"style": "formal"}, timeout=WAIT)
        assert missing.error_type == ErrorType.VALIDATION, missing
        assert "'name'" in (missing.error or ""), missing
        not_text = rt.get_prompt(f"{NS}/greet", {"name": 3}, timeout=WAIT)  # type: ignore[dict-item]
        assert not_text.error_type == ErrorType.VALIDATION, not_text
        no_such = rt.get_prompt(f"{NS}/greeet", {"name": "Ann"}, timeout=WAIT)
        assert no_such.error_type == ErrorType.NOT_FOUND, no_such
        assert "greet" in (no_such.error or "")

        status = rt.status(NS)[0]
        assert (status.state, status.pid) == ("stopped", None)
        assert child_pids() == children, "a refused request started the server"


def test_unknown_uris_prompts_and_namespaces_get_classified_answers(surface: ServerEntry) -> None:
    with Runtime.start(config({NS: surface()})) as rt:
        unknown_uri = rt.read_resource(NS, "surface://no/such/thing", timeout=WAIT)
        assert unknown_uri.error_type in NOT_THERE, unknown_uri
        assert unknown_uri.error
        unknown_prompt = rt.get_prompt(f"{NS}/no-such-prompt", {}, timeout=WAIT)
        assert unknown_prompt.error_type in NOT_THERE, unknown_prompt
        assert rt.read_resource("nowhere", HELLO_URI).error_type == ErrorType.NOT_FOUND
        assert rt.get_prompt("nowhere/greet", {"name": "Ann"}).error_type == ErrorType.NOT_FOUND
        assert rt.get_prompt("greet", {}).error_type == ErrorType.NOT_FOUND  # no namespace
        assert rt.read_resource(NS, "", timeout=WAIT).error_type == ErrorType.VALIDATION
        # None of it hurt the session.
        assert read_text(rt.read_resource(NS, HELLO_URI, timeout=WAIT)) == HELLO_TEXT
        assert rt.status(NS)[0].restarts == 0


def test_server_everything_reads_text_and_blob_and_fills_its_prompts(everything: ServerEntry) -> None:
    with Runtime.start(config({EV: everything()})) as rt:
        text = read_text(rt.read_resource(EV, "demo://resource/dynamic/text/3", timeout=WAIT))
        assert text.startswith("Resource 3: This is a plaintext resource"), text
        [blob] = contents_of(rt.read_resource(EV, "demo://resource/dynamic/blob/4", timeout=WAIT))
        assert base64.b64decode(blob["blob"]).startswith(b"Resource 4: This is a base64 blob")
        document = next(r.uri for r in rt.list_resources(EV) if r.uri.startswith("demo://resource/static/"))
        assert contents_of(rt.read_resource(EV, document, timeout=WAIT))

        weather = rt.get_prompt(f"{EV}/args-prompt", {"city": "Paris", "state": "Texas"}, timeout=WAIT)
        assert weather.output is not None, weather
        assert weather.output["messages"][0]["content"]["text"] == "What's weather in Paris, Texas?"
        embedded = rt.get_prompt(f"{EV}/resource-prompt", {"resourceType": "Text", "resourceId": "2"})
        assert embedded.output is not None, embedded
        kinds = [m["content"]["type"] for m in embedded.output["messages"]]
        assert kinds == ["text", "resource"]

        assert rt.get_prompt(f"{EV}/args-prompt", {}, timeout=WAIT).error_type == ErrorType.VALIDATION
        unknown = rt.read_resource(EV, "demo://resource/dynamic/text/0", timeout=WAIT)
        assert unknown.error_type in NOT_THERE, unknown
        refused = rt.get_prompt(f"{EV}/resource-prompt", {"resourceType": "Nope", "resourceId": "1"})
        assert refused.error_type == ErrorType.SERVER_ERROR, refused
        assert rt.status(EV)[0].state == "running"
