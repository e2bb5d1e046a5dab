"""Resources, resource templates and prompts are listed through the runtime and the registry
actor; lists known from an earlier run are answered without starting the server again, while
reading a resource or getting a prompt starts it like a tool call."""

from __future__ import annotations

from actors import Runtime
from actors.runtime.messages import ListPrompts, ListResources, ListResourceTemplates
from tests.conftest import child_pids
from tests.servers.surface_server import COUNTER_URI, HELLO_URI, NOTE_TEMPLATE, PIXEL_URI
from tests.surface.conftest import WAIT, ServerEntry, config, read_text, text_of

NS = "s"
EV = "ev"


def test_resources_templates_and_prompts_are_listed_with_what_the_server_says(surface: ServerEntry) -> None:
    with Runtime.start(config({NS: surface()})) as rt:
        resources = {r.uri: r for r in rt.list_resources(NS)}
        assert {HELLO_URI, PIXEL_URI, COUNTER_URI} <= set(resources), sorted(resources)
        hello = resources[HELLO_URI]
        assert (hello.namespace, hello.name, hello.title) == (NS, "hello", "Hello")
        assert (hello.description, hello.mime_type) == ("A greeting.", "text/plain")
        assert resources[PIXEL_URI].mime_type == "image/png"

        [template] = rt.list_resource_templates(NS)
        assert (template.namespace, template.uri_template, template.name) == (NS, NOTE_TEMPLATE, "note")

        prompts = {p.name: p for p in rt.list_prompts(NS)}
        assert set(prompts) == {f"{NS}/greet", f"{NS}/plain"}
        greet = prompts[f"{NS}/greet"]
        assert greet.prompt_name == "greet" and greet.description == "Greet someone, in a style."
        assert [(a.name, a.required) for a in greet.arguments] == [("name", True), ("style", False)]
        assert prompts[f"{NS}/plain"].arguments == ()

        # The message API answers the same.
        asked_resources, asked_templates, asked_prompts = (
            ListResources(NS),
            ListResourceTemplates(NS),
            ListPrompts(NS),
        )
        for message in (asked_resources, asked_templates, asked_prompts):
            rt.registry.tell(message)
        assert {r.uri for r in asked_resources.reply.result(timeout=WAIT)} == set(resources)
        assert [t.uri_template for t in asked_templates.reply.result(timeout=WAIT)] == [NOTE_TEMPLATE]
        assert [p.name for p in asked_prompts.reply.result(timeout=WAIT)] == sorted(prompts)


def test_every_namespace_is_listed_when_none_is_named(surface_stdio: ServerEntry) -> None:
    with Runtime.start(config({"a": surface_stdio(), "b": surface_stdio()})) as rt:
        assert [p.name for p in rt.list_prompts()] == ["a/greet", "a/plain", "b/greet", "b/plain"]
        resources = rt.list_resources()
        assert {(r.namespace, r.uri) for r in resources} >= {("a", HELLO_URI), ("b", HELLO_URI)}
        assert {t.namespace for t in rt.list_resource_templates()} == {"a", "b"}


def test_listing_a_stopped_server_whose_lists_are_known_does_not_start_it(surface_stdio: ServerEntry) -> None:
    with Runtime.start(config({NS: surface_stdio()})) as rt:
        assert rt.status(NS)[0].state == "idle"
        resources = rt.list_resources(NS)  # never seen: this one starts it
        templates, prompts = rt.list_resource_templates(NS), rt.list_prompts(NS)
        assert resources and templates and prompts
        rt.stop_server(NS)
        children = child_pids()

        assert rt.list_resources(NS) == resources
        assert rt.list_resource_templates(NS) == templates
        assert rt.list_prompts(NS) == prompts
        status = rt.status(NS)[0]
        assert (status.state, status.pid) == ("stopped", None)
        assert child_pids() == children, "listing started a server process"

        # Reading a resource starts it, like a tool call.
        assert read_text(rt.read_resource(NS, HELLO_URI, timeout=WAIT)) == "Hello, surface!"
        assert rt.status(NS)[0].state == "running"
        rt.stop_server(NS)
        # So does getting a prompt.
        prompt = rt.get_prompt(f"{NS}/greet", {"name": "Ann"}, timeout=WAIT)
        assert prompt.success, prompt
        running = rt.status(NS)[0]
        assert running.state == "running" and running.pid is not None


def test_server_everything_lists_its_resources_templates_and_prompts(everything: ServerEntry) -> None:
    with Runtime.start(config({EV: everything()})) as rt:
        uris = {r.uri for r in rt.list_resources(EV)}
        assert any(u.startswith("demo://resource/static/document/") for u in uris), sorted(uris)
        templates = {t.uri_template for t in rt.list_resource_templates(EV)}
        assert {"demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/blob/{resourceId}"} <= (
            templates
        )
        prompts = {p.name: p for p in rt.list_prompts(EV)}
        assert {f"{EV}/simple-prompt", f"{EV}/args-prompt", f"{EV}/completable-prompt"} <= set(prompts)
        assert prompts[f"{EV}/args-prompt"].required == ("city",)
        # Lists learned once are answered again without the server.
        rt.stop_server(EV)
        assert {r.uri for r in rt.list_resources(EV)} == uris
        assert rt.status(EV)[0].state == "stopped"
        assert text_of(rt.call_tool(f"{EV}/echo", {"message": "back"}, timeout=WAIT)) == "Echo: back"
