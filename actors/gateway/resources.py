"""Resources through the gateway: lists, reads, and updates followed for clients.

A handshake-era client subscribes to a URI (``resources/subscribe``); a 2026-07-28 client names
URIs in its ``subscriptions/listen`` stream. Either way the gateway follows each URI at the
backend that serves it, once however many clients want it (`actors.gateway.watches`), and each
backend update is published on the bus once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection
from typing import Any

import mcp_types as types
from mcp.server.subscriptions import ListenHandler, SubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated, ServerEvent

from actors.gateway import hints
from actors.gateway.access.gate import AccessGate, Admission, refusal_error
from actors.gateway.access.principal import Principal, principal_of
from actors.gateway.access.use import CedarAction, Use
from actors.gateway.conversion import protocol_error, resource, template, template_pattern
from actors.gateway.handoff import LoopHandoff
from actors.gateway.routing import AffinityRouter, RuntimeRequests
from actors.gateway.skill_uris import inward, outward
from actors.gateway.watches import Followed, ResourceWatches
from actors.mcp.catalog import ResourceSpec, ResourceTemplateSpec
from actors.runtime.messages import (
    ListResources,
    ListResourceTemplates,
    ReadResource,
    ResourceSubscription,
    SubscribeResource,
)

__all__ = ["Resources"]

logger = logging.getLogger(__name__)


class Resources:
    """The resource handlers and the clients' subscriptions.

    Owned by the gateway's loop: the handlers run on it, and the subscribers and watches are
    touched only there. A backend's update arrives on the host thread, another replica's on the
    bus's: both are handed to the loop (`updated`, `tell_subscribers`).
    """

    def __init__(
        self,
        requests: RuntimeRequests,
        handoff: LoopHandoff,
        bus: SubscriptionBus,
        affinity: AffinityRouter | None,
        cache_hints: hints.CacheHints,
        gate: AccessGate,
        namespaces: Callable[[], Collection[str]] = tuple,
    ) -> None:
        self._requests = requests
        self._namespaces = namespaces
        """The servers configured now: a ``skill://`` URI is under one's (`skill_uris`)."""
        self._hints = cache_hints
        self._gate = gate
        self._handoff = handoff
        self._bus = bus
        self._affinity = affinity
        self._subscribers: dict[tuple[int, str], tuple[Any, Principal, Use]] = {}
        """(id of the client's session, URI) → that session, its caller and its subscription,
        for ``resources/subscribe``."""
        self._listen = ListenHandler(bus)
        self._watches = ResourceWatches(self._watch)

    async def list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        self._requests.seen(ctx)
        asked = ListResources()
        resources: list[ResourceSpec] = await self._requests.ask(asked, ctx)
        resources = await self._gate.visible(principal_of(ctx), resources, _resource_use)
        answer = [_skill_outward(resource(r), r.namespace) for r in resources]
        return types.ListResourcesResult(resources=answer, **self._hints.of(ctx, hints.listed(asked)))

    async def list_resource_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        self._requests.seen(ctx)
        asked = ListResourceTemplates()
        templates: list[ResourceTemplateSpec] = await self._requests.ask(asked, ctx)
        templates = await self._gate.visible(principal_of(ctx), templates, _template_use)
        answer = [template(t) for t in templates]
        fields = self._hints.of(ctx, hints.listed(asked))
        return types.ListResourceTemplatesResult(resource_templates=answer, **fields)

    async def owner_of(self, uri: str) -> str:
        """The namespace serving ``uri`` (see `served_by`)."""
        namespace, _ = await self.served_by(uri)
        return namespace

    async def served_by(self, uri: str) -> tuple[str, str | None]:
        """The namespace serving ``uri``, and the URI template it is served by: a server that
        lists it (None), else one whose template matches it (a lookup: from what the registry
        knows, never waiting for a stale list)."""
        resources: list[ResourceSpec] = await self._requests.ask(ListResources(refresh=False))
        for spec in resources:
            if spec.uri == uri:
                return spec.namespace, None
        templates: list[ResourceTemplateSpec] = await self._requests.ask(ListResourceTemplates(refresh=False))
        for known in templates:
            if template_pattern(known.uri_template).fullmatch(uri):
                return known.namespace, known.uri_template
        raise _not_found(uri)

    async def read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        skill_file = inward(uri, self._namespaces())
        if skill_file is not None:  # a backend's skill file, under its namespace
            (namespace, backend), serving = skill_file, None
        else:
            (namespace, serving), backend = await self.served_by(uri), uri
        # A skill file is decided by the gateway's URI: two backends may serve the same one.
        async with self._gate.guard(principal_of(ctx), Use.read(namespace, uri, serving)) as admission:
            _check(admission, uri)
            result = await self._requests.request(ctx, namespace, ReadResource(namespace, backend))
        if not result.success:
            raise protocol_error(result)
        output = result.output or {"contents": []}
        if skill_file is not None:
            output = {**output, "contents": [{**c, "uri": uri} for c in output.get("contents", ())]}
        answer = types.ReadResourceResult.model_validate(output)
        # The backend's own hint, passed through (private when the answer depends on the caller).
        return answer.model_copy(update=self._hints.of(ctx, hints.read(result)))

    async def subscribe(self, ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        self._requests.seen(ctx)
        uri = str(params.uri)
        namespace, serving = await self.served_by(uri)  # a URI nobody serves is the client's error
        use, principal = Use.read(namespace, uri, serving, CedarAction.SUBSCRIBE), principal_of(ctx)
        async with self._gate.guard(principal, use) as admission:
            _check(admission, uri)
            key = (id(ctx.session), uri)
            if key in self._subscribers:
                return types.EmptyResult()
            # One backend subscription per URI, shared with listen streams (`_watch`).
            self._subscribers[key] = (ctx.session, principal, use)
            try:
                await self._watches.hold([uri])
            except BaseException:
                self._subscribers.pop(key, None)
                self._watches.release([uri])
                raise
        return types.EmptyResult()

    async def unsubscribe(self, ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        uri = str(params.uri)
        if self._subscribers.pop((id(ctx.session), uri), None) is not None:
            self._watches.release([uri])
        return types.EmptyResult()

    async def listen(
        self, ctx: Any, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        # 2026-07-28: the resources a stream names are followed at their backends while it lasts.
        uris = list(dict.fromkeys(params.notifications.resource_subscriptions or ()))
        listen = self._listen
        if self._gate.polices and uris:
            principal = principal_of(ctx)
            uses = await self._uses(uris)
            # Acknowledged as asked, as a URI nobody serves is; what the caller may not follow is
            # not followed for them, and its updates are withheld (decided again at each, so
            # that a reload that takes it away stops them).
            uris = [uri for uri in uris if uri not in uses or self._gate.permits(principal, uses[uri])]
            listen = ListenHandler(_Withholding(self._bus, self._gate, principal, uses))
        try:
            await self._watches.hold(uris)
            return await listen(ctx, params)
        finally:
            self._watches.release(uris)

    async def _uses(self, uris: list[str]) -> dict[str, Use]:
        """The subscription each of ``uris`` would be (but a URI nobody serves)."""
        uses: dict[str, Use] = {}
        for uri in uris:
            try:
                namespace, serving = await self.served_by(uri)
            except MCPError:
                continue
            uses[uri] = Use.read(namespace, uri, serving, CedarAction.SUBSCRIBE)
        return uses

    async def _watch(self, uri: str) -> Followed | None:
        try:
            namespace = await self.owner_of(uri)
        except MCPError:
            return None  # a URI nobody serves is honoured and never fires, as for any server

        def subscribe() -> Awaitable[ResourceSubscription]:
            return self._requests.ask(SubscribeResource(namespace, uri, self.updated))

        try:
            if self._affinity is not None and self._affinity.routes(namespace):
                return await self._affinity.watch(namespace, uri, subscribe)
            subscription: ResourceSubscription = await subscribe()
        except Exception as exc:
            logger.warning("gateway: cannot follow %s at %s: %s", uri, namespace, exc)
            return None
        return subscription

    def updated(self, uri: str) -> None:
        """A backend's update of ``uri`` (on the host thread). One publish per backend update:
        the bus tells this replica's listen streams and the other replicas; this replica's
        handshake-era subscribers are told here."""
        self._handoff.send_soon(self._bus.publish(ResourceUpdated(uri)))
        self.tell_subscribers(uri)

    def tell_subscribers(self, uri: str) -> None:
        """Tell the handshake-era subscribers of ``uri`` that it changed (from any thread)."""
        self._handoff.call(self._tell_on_loop, uri)

    def _tell_on_loop(self, uri: str) -> None:
        for (_, subscribed), (session, principal, use) in list(self._subscribers.items()):
            # Decided again: a reload may have taken the resource away from its subscriber.
            if subscribed == uri and self._gate.permits(principal, use):
                self._handoff.start(session.send_resource_updated(uri))


def _skill_outward(listed: types.Resource, namespace: str) -> types.Resource:
    """A backend's ``skill://`` resource under its namespace, as the gateway's skills are."""
    uri = outward(namespace, str(listed.uri))
    return listed if uri is None else listed.model_copy(update={"uri": uri})


def _not_found(uri: str) -> MCPError:
    return MCPError(types.INVALID_PARAMS, f"Resource not found: {uri}")


def _check(admission: Admission, uri: str) -> None:
    """Raise what a denied use of ``uri`` is answered with: what the caller may not see is not
    found; what they may see says the rules."""
    if admission.hidden:
        raise _not_found(uri)
    if admission.refused:
        raise refusal_error(admission)


def _resource_use(spec: ResourceSpec) -> Use:
    return Use.read(spec.namespace, outward(spec.namespace, spec.uri) or spec.uri)


def _template_use(spec: ResourceTemplateSpec) -> Use:
    return Use.listed_template(spec.namespace, spec.uri_template)


class _Withholding:
    """A listen stream's view of the bus without the updates its caller may not follow (``uses``:
    the stream's subscriptions, decided at each update). On the loop, like the bus's listeners."""

    def __init__(
        self, bus: SubscriptionBus, gate: AccessGate, principal: Principal, uses: dict[str, Use]
    ) -> None:
        self._bus = bus
        self._gate = gate
        self._principal = principal
        self._uses = uses

    async def publish(self, event: ServerEvent) -> None:
        await self._bus.publish(event)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        def deliver(event: ServerEvent) -> None:
            use = self._uses.get(event.uri) if isinstance(event, ResourceUpdated) else None
            if use is None or self._gate.permits(self._principal, use):
                listener(event)

        return self._bus.subscribe(deliver)
