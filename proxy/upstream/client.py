"""UpstreamClient: the one door through which every upstream call passes.

User traffic and the scorers' own re-asks both call ``complete`` /
``open_stream`` with a model group name. Each group goes either to the
pass-through backend (all its deployments speak OpenAI's wire format) or to
litellm's Router. Retries within a group (``proxy.upstream.retries``: backoff,
``Retry-After``, scoring's budget) and fallbacks to other groups are applied
here for both, so the behaviour of a config does not depend on
which path serves it — and so that a fallback to a group the caller's key may
not use is skipped (and counted) on both.

Every endpoint (chat, legacy completions, embeddings, Responses) takes the same
way. A pass-through deployment that answers ``/responses`` with 404 or 405 is
remembered as speaking only chat completions, and its Responses calls go over
litellm's responses↔chat bridge from then on. A pass-through deployment that
answers a chat call's ``logprobs: true`` without them is remembered as needing
``top_logprobs: 1`` (``logprobs.LogprobAsking``; the embedded llama.cpp server
is known to from the start); behind litellm, whose Router picks the deployment,
a model group is. Calls to the embedded single-slot
model server wait for a slot here, user calls ahead of scoring calls (``slots.PrioritySlots``).
Which deployment of a pass-through group each try goes to is ``routing.GroupRouter``'s choice
(``routing_strategy``, ``weight``, ``max_parallel_requests``); litellm's Router makes it for the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import httpx
from opentelemetry.trace import NoOpTracerProvider, Tracer

from exporters import place_upstream_span, upstream_span

from ..base.errors import ModelNotFound, UpstreamError, UpstreamRateLimited
from ..base.limits import Limiter, MemoryCounters
from ..base.sdk_params import Endpoint
from ..config.settings import Deployment, GatewaySettings
from .completion import Completion, Forwarded, UpstreamStream
from .errors import UpstreamErrors, fallback_kind
from .litellm_backend import LitellmBackend, ResponsesBridge, deployment_id, provider_address, router_pick
from .logprobs import LogprobAsking, Where
from .passthrough import PassthroughBackend
from .probes import DeploymentProbe, probe_deployments
from .replies import reported_tokens
from .retries import OnScoringShed, RetryPolicy
from .routing import GroupRouter
from .slots import Priority, PrioritySlots
from .taps import ChatTap

__all__ = ["DeploymentHealth", "ModelFilter", "OnFallbackSkipped", "UpstreamClient"]

T = TypeVar("T")

ModelFilter = Callable[[str], bool]  # may the caller use this model group?
DeploymentCall = Callable[[Deployment], Awaitable[T]]  # one try at one deployment
OnFallbackSkipped = Callable[[str, str], None]  # (group asked for, fallback skipped)
OnTry = Callable[[str, str, bool, float], None]  # (group, deployment "group:index", succeeded, seconds)


def _any_model(group: str) -> bool:
    return True


@functools.lru_cache(maxsize=256)
def _host(api_base: str | None) -> str | None:
    """The host a deployment's span names, parsed once per ``api_base`` rather than on every try."""
    return httpx.URL(api_base).host if api_base else None


def _where(deployment: Deployment) -> Where:
    return deployment.api_base, deployment.wire_model


def _placed(result: T, deployment: int) -> T:
    """``result`` as the answer of its group's ``deployment``-th entry, whose price it is priced at."""
    if isinstance(result, Completion | Forwarded | UpstreamStream):
        return cast("T", result.at(deployment))
    return result


def _watched(stream: UpstreamStream, on_end: Callable[[bool, bool], None]) -> UpstreamStream:
    """``stream`` as it was, read as it passes; once it ends, ``on_end(had text, had log-probabilities)``."""
    tap = ChatTap()
    for chunk in stream.first:
        for _ in tap.feed(chunk):
            pass

    async def chunks() -> AsyncIterator[bytes]:
        async for chunk in stream.chunks:
            for _ in tap.feed(chunk):
                pass
            yield chunk
        answer = tap.answer()
        on_end(bool(answer.text) and not answer.has_tool_calls, bool(answer.logprobs))

    return UpstreamStream(chunks=chunks(), close=stream.close, model_group=stream.model_group, first=stream.first)


@dataclass(frozen=True)
class DeploymentHealth:
    """How one deployment answered a health check (``UpstreamClient.check_health``)."""

    group: str
    index: int  # its place among its group's deployments
    deployment: Deployment
    error: str | None  # None: it answered

    @property
    def model_id(self) -> str:
        return deployment_id(self.group, self.index)


class UpstreamClient:
    def __init__(
        self,
        settings: GatewaySettings,
        http: httpx.AsyncClient,
        *,
        on_fallback_skipped: OnFallbackSkipped = lambda group, fallback: None,
        on_scoring_shed: OnScoringShed = lambda group, reason: None,
        limiter: Limiter | None = None,
        tracer: Tracer | None = None,
        on_try: OnTry = lambda group, deployment, succeeded, seconds: None,
        local_slots: PrioritySlots | None = None,
    ) -> None:
        """``local_slots``: the embedded model server's slots when another process holds them (a local
        scoring worker borrows its gateway's, so that user calls still go first); by default its own."""
        self._groups = settings.model_groups()
        self._deployments = settings.model_list
        self._on_try = on_try
        self._tracer = tracer or NoOpTracerProvider().get_tracer("trustgate")
        self._on_fallback_skipped = on_fallback_skipped
        self._router_settings = settings.router_settings
        self._aliases = settings.router_settings.aliases()
        self._http = http
        errors = UpstreamErrors(settings.secrets())
        bounds = settings.trustgate.upstream
        self._passthrough = PassthroughBackend(
            default_timeout=settings.router_settings.timeout,
            errors=errors,
            max_response_bytes=bounds.max_response_bytes,
            follow_redirects=bounds.follow_redirects,
        )
        self._fast_groups = settings.passthrough_groups()
        slow_groups = set(self._groups) - self._fast_groups
        self._litellm = LitellmBackend(settings, slow_groups, errors) if slow_groups else None
        self._bridge = ResponsesBridge(
            errors,
            settings.router_settings.timeout,
            bounds.max_response_bytes,
            follow_redirects=bounds.follow_redirects,
        )
        self._chat_only: set[tuple[str | None, str]] = set()  # (api_base, model) without /responses
        # litellm's Router chooses its groups' deployments and holds their max_parallel_requests itself.
        strategy = settings.router_settings.routing_strategy
        self._routers = {
            name: GroupRouter(
                deployments,
                strategy if name in self._fast_groups else "simple-shuffle",
                default_timeout=settings.router_settings.timeout,
                limit_parallel=name in self._fast_groups,
            )
            for name, deployments in self._groups.items()
        }
        self._limiter = limiter or Limiter(MemoryCounters())
        self._retries = RetryPolicy(
            settings.router_settings, settings.trustgate.retries, on_scoring_shed=on_scoring_shed
        )
        self._default_timeout = settings.router_settings.timeout
        local = settings.trustgate.local_upstream
        self._local_base = local.base_url if local.enabled else None
        self._local_slots = local_slots if local_slots is not None else PrioritySlots(local.slots)
        self._logprob_asking = LogprobAsking(
            needs_top=[
                _where(d)
                for ds in self._groups.values()
                for d in ds
                if self._local_base and d.api_base == self._local_base and d.is_openai_compatible
            ]
        )

    @property
    def local_slots(self) -> PrioritySlots:
        """The embedded model server's slots (what a local scoring worker borrows)."""
        return self._local_slots

    def _slots_for(self, deployment: Deployment) -> PrioritySlots | None:
        return self._local_slots if self._local_base and deployment.api_base == self._local_base else None

    @property
    def model_groups(self) -> list[str]:
        return list(self._groups)

    def gives_logprobs(self, group: str, endpoint: Endpoint) -> bool:
        """Whether ``group``'s deployments take a request for the answer's log-probabilities on ``endpoint``.

        Pass-through deployments speak OpenAI's API, which has them. Behind
        litellm, only providers it lists as taking ``logprobs`` are asked, and
        not on legacy completions: litellm turns a text completion for a chat
        model into a chat call with the integer ``logprobs`` unchanged, which
        a chat API may refuse, and drops them from the answer anyway.
        """
        if group in self._fast_groups:
            return True
        return self._litellm is not None and endpoint != "completions" and self._litellm.gives_logprobs(group)

    def streams_usage_when_asked(self, group: str, endpoint: Endpoint) -> bool:
        """Whether a stream of ``endpoint`` from ``group`` may be asked to report its usage
        (``stream_options.include_usage``) without changing what else it sends.

        Chat streams may, on both paths. Legacy completions streams only on the
        pass-through path: litellm's text-completion stream, asked for usage,
        fails on a chunk without choices that carries no usage (an upstream's
        first chunk of content-filter results, say), which it passes over
        otherwise. A Responses stream reports its usage unasked.
        """
        return endpoint == "chat" or (endpoint == "completions" and group in self._fast_groups)

    @property
    def listed_names(self) -> list[str]:
        """What /v1/models lists: the groups and their visible aliases."""
        return [*self._groups, *self._router_settings.listed_aliases()]

    def require_group(self, name: str) -> str:
        """The model group ``name`` is, or is an alias of (``model_group_alias``); 404 when neither."""
        group = self._aliases.get(name, name)
        if group not in self._groups:
            raise ModelNotFound(f"The model `{name}` does not exist", param="model", code="model_not_found")
        return group

    async def complete(
        self, group: str, body: dict[str, Any], *, may_use: ModelFilter = _any_model, priority: Priority = Priority.USER
    ) -> Completion:
        """A non-streamed chat completion from ``group`` (or those of its fallbacks ``may_use`` allows).

        A scoring call (``Priority.SCORING``, ``SYNC_SCORING``) retries within a budget and is shed
        while the group is rate limited (``proxy.upstream.retries``), and waits behind users
        for the embedded model server's slot.
        """
        self.require_group(group)
        return await self._with_fallbacks(
            group,
            may_use,
            lambda g: self._retrying(g, self._complete_at(g, body, priority), priority.for_scoring, "chat"),
        )

    async def forward(
        self, group: str, body: dict[str, Any], endpoint: Endpoint, *, may_use: ModelFilter = _any_model
    ) -> Forwarded:
        """A whole reply of another endpoint (completions, embeddings, Responses): same retries and fallbacks."""
        self.require_group(group)
        return await self._with_fallbacks(
            group,
            may_use,
            lambda g: self._retrying(g, self._forward_at(g, body, endpoint, Priority.USER), False, endpoint),
        )

    async def open_stream(
        self,
        group: str,
        body: dict[str, Any],
        *,
        may_use: ModelFilter = _any_model,
        endpoint: Endpoint = "chat",
        priority: Priority = Priority.USER,
    ) -> UpstreamStream:
        """An opened stream from ``group`` (or its allowed fallbacks); errors before the first byte raise."""
        self.require_group(group)
        return await self._with_fallbacks(
            group, may_use, lambda g: self._retrying(g, self._stream_at(g, body, endpoint, priority), False, endpoint)
        )

    async def _with_fallbacks(self, group: str, may_use: ModelFilter, call: Callable[[str], Awaitable[T]]) -> T:
        """``group``, then each fallback of the failure's kind the caller may use; the last error is raised.

        A fallback the caller's key may not use is skipped when its turn comes
        (and reported), so a failing group never opens a door to another.
        """
        try:
            return await call(group)
        except UpstreamError as exc:
            kind = fallback_kind(exc)
            if kind is None:
                raise
            failure = exc
        for fallback in self._router_settings.fallbacks_for(group, kind):
            if not may_use(fallback):
                self._on_fallback_skipped(group, fallback)
                continue
            try:
                return await call(fallback)
            except UpstreamError as exc:
                if fallback_kind(exc) is None:
                    raise
                failure = exc
        raise failure

    def _complete_at(self, group: str, body: dict[str, Any], priority: Priority) -> DeploymentCall[Completion]:
        """One try at ``group``: litellm's Router picks its deployment, the pass-through path is given one."""
        litellm = self._litellm
        if litellm is not None and group not in self._fast_groups:
            if not litellm.gives_logprobs(group):  # a provider litellm passes no logprobs to: nothing to learn
                return lambda d: litellm.complete(group, body)
            # The Router's pick is unknown here: learnt per group.
            return lambda d: self._chat_learning((None, group), body, lambda sent: litellm.complete(group, sent))
        return lambda d: self._in_slot(
            d, priority, lambda: self._chat_learning(_where(d), body, lambda sent: self._passthrough.complete(d, sent))
        )

    async def _chat_learning(
        self, where: Where, body: dict[str, Any], call: Callable[[dict[str, Any]], Awaitable[Completion]]
    ) -> Completion:
        """A chat call asked as ``where`` needs to return log-probabilities; its reply teaches ``LogprobAsking``
        whether it does."""
        completion = await call(self._logprob_asking.body_for(where, body))
        choice = completion.reply.first if self._logprob_asking.learning(where, body) else None
        if choice is not None:
            self._logprob_asking.observe(
                where, body, text=bool(choice.answer_text), logprobs=bool(choice.chosen_logprobs())
            )
        return completion

    async def _chat_stream_learning(
        self, where: Where, body: dict[str, Any], opener: Callable[[dict[str, Any]], Awaitable[UpstreamStream]]
    ) -> UpstreamStream:
        """A chat stream, asked and learnt from as ``_chat_learning`` does (read as it passes)."""
        opened = await opener(self._logprob_asking.body_for(where, body))
        if not self._logprob_asking.learning(where, body):
            return opened
        return _watched(
            opened, lambda text, logprobs: self._logprob_asking.observe(where, body, text=text, logprobs=logprobs)
        )

    def _forward_at(
        self, group: str, body: dict[str, Any], endpoint: Endpoint, priority: Priority
    ) -> DeploymentCall[Forwarded]:
        litellm = self._litellm
        if litellm is not None and group not in self._fast_groups:
            return lambda d: litellm.forward(group, body, endpoint)
        if endpoint == "responses":
            return lambda d: self._in_slot(
                d, priority, lambda: self._responses_at(d, body, self._passthrough.forward, self._bridge.forward)
            )
        return lambda d: self._in_slot(d, priority, lambda: self._passthrough.forward(d, body, endpoint))

    async def _in_slot(self, deployment: Deployment, priority: Priority, call: Callable[[], Awaitable[T]]) -> T:
        """``call``, holding a slot of the embedded model server when ``deployment`` is it."""
        slots = self._slots_for(deployment)
        if slots is None:
            return await call()
        async with slots.held(priority, deployment.deadline(self._default_timeout)):
            return await call()

    def _stream_at(
        self, group: str, body: dict[str, Any], endpoint: Endpoint, priority: Priority
    ) -> DeploymentCall[UpstreamStream]:
        litellm = self._litellm
        if litellm is not None and group not in self._fast_groups:
            if endpoint == "chat" and litellm.gives_logprobs(group):
                return lambda d: self._chat_stream_learning(
                    (None, group), body, lambda sent: litellm.open_stream(group, sent, endpoint)
                )
            return lambda d: litellm.open_stream(group, body, endpoint)
        if endpoint == "responses":
            return lambda d: self._stream_in_slot(
                d,
                priority,
                lambda: self._responses_at(d, body, self._passthrough.open_stream, self._bridge.open_stream),
            )
        if endpoint == "chat":
            return lambda d: self._stream_in_slot(
                d,
                priority,
                lambda: self._chat_stream_learning(
                    _where(d), body, lambda sent: self._passthrough.open_stream(d, sent, "chat")
                ),
            )
        return lambda d: self._stream_in_slot(d, priority, lambda: self._passthrough.open_stream(d, body, endpoint))

    async def _stream_in_slot(
        self, deployment: Deployment, priority: Priority, opener: Callable[[], Awaitable[UpstreamStream]]
    ) -> UpstreamStream:
        """A stream that holds a slot of the embedded model server until it ends, when ``deployment`` is it."""
        slots = self._slots_for(deployment)
        if slots is None:
            return await opener()
        return await slots.open_stream(priority, deployment.deadline(self._default_timeout), opener)

    async def _responses_at(
        self,
        deployment: Deployment,
        body: dict[str, Any],
        native: Callable[[Deployment, dict[str, Any], Endpoint], Awaitable[T]],
        bridged: Callable[[Deployment, dict[str, Any]], Awaitable[T]],
    ) -> T:
        """A Responses call forwarded as is, or over the bridge for a deployment known to lack ``/responses``."""
        where = (deployment.api_base, deployment.wire_model)
        if where not in self._chat_only:
            try:
                return await native(deployment, body, "responses")
            except UpstreamError as exc:
                if exc.status_code not in (404, 405):
                    raise
            self._chat_only.add(where)
        return await bridged(deployment, body)

    async def _retrying(self, group: str, call: DeploymentCall[T], for_scoring: bool, endpoint: Endpoint) -> T:
        """One deployment per try, chosen by the group's routing strategy, retrying what LiteLLM would retry;
        each try is a client span."""
        deployments, router = self._groups[group], self._routers[group]
        tried: list[int] = []

        async def attempt_at(attempt: int) -> T:
            index = router.choose(tried)
            tried.append(index)
            deployment, name = deployments[index], f"deployment:{group}:{index}"
            label, started, succeeded = f"{group}:{index}", time.perf_counter(), False

            async def within_limits() -> T:
                await self._within_limits(name, deployment)
                return await call(deployment)

            # litellm's Router chooses a deployment of its own: the try learns which; the pass-through path's is ours.
            picking = contextlib.nullcontext(None) if group in self._fast_groups else router_pick()
            try:
                with (
                    upstream_span(
                        self._tracer,
                        endpoint=endpoint,
                        group=group,
                        model=deployment.wire_model,
                        deployment=label,
                        attempt=attempt,
                        address=_host(deployment.api_base),
                    ) as span,
                    picking as pick,
                ):
                    try:
                        # Counted in flight from the choice on (no await between), so concurrent tries see it.
                        result = await router.run(index, name, within_limits)
                        succeeded = True
                    finally:
                        if pick is not None and pick.index is not None and pick.index != index:  # it chose another
                            chosen = deployments[pick.index]
                            label = f"{group}:{pick.index}"
                            place_upstream_span(
                                span,
                                endpoint=endpoint,
                                model=chosen.wire_model,
                                deployment=label,
                                address=_host(chosen.api_base),
                            )
            finally:
                self._on_try(group, label, succeeded, time.perf_counter() - started)
            if deployment.tpm is not None and isinstance(result, (Completion, Forwarded)):
                await self._limiter.add_tokens(name, reported_tokens(result.data))
            answered = pick.index if pick is not None and pick.index is not None else index
            return _placed(result, answered)

        return await self._retries.run(group, attempt_at, for_scoring=for_scoring)

    async def _within_limits(self, name: str, deployment: Deployment) -> None:
        """A deployment's own ``rpm`` / ``tpm``: over one, the try fails as the provider's 429 would."""
        if deployment.tpm is None and deployment.rpm is None:
            return
        for kind, limit, over in (
            ("tpm", deployment.tpm, self._limiter.over_tpm),
            ("rpm", deployment.rpm, self._limiter.over_rpm),
        ):
            wait = await over(name, limit) if limit is not None else None
            if wait is not None:
                raise UpstreamRateLimited(
                    f"{name} is at its {kind} limit ({limit})", code="deployment_rate_limited", retry_after=wait
                )

    async def check_health(self, timeout: float) -> list[DeploymentHealth]:
        """Every deployment asked a one-token question, as LiteLLM's ``/health`` asks it: healthy when it answers.

        Each call goes to its deployment itself (on either path), once, without
        retries or fallbacks, behind users for the embedded model server, and
        within ``timeout`` seconds. Not counted as user or scoring traffic.
        """
        body: dict[str, Any] = {"messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}
        litellm = self._litellm

        async def ask(group: str, index: int, deployment: Deployment) -> DeploymentHealth:
            try:
                async with asyncio.timeout(timeout):
                    if litellm is not None and group not in self._fast_groups:
                        await litellm.complete_at(group, index, body)
                    else:
                        await self._in_slot(
                            deployment, Priority.SCORING, lambda: self._passthrough.complete(deployment, body)
                        )
            except UpstreamError as exc:
                return DeploymentHealth(group, index, deployment, exc.message)
            except TimeoutError:
                return DeploymentHealth(group, index, deployment, f"no answer within {timeout:g}s")
            return DeploymentHealth(group, index, deployment, None)

        return list(
            await asyncio.gather(
                *(ask(group, index, d) for group, ds in self._groups.items() for index, d in enumerate(ds))
            )
        )

    async def check_ready(self, timeout: float = 2.0) -> list[DeploymentProbe]:
        """Whether anybody answers at each deployment's address (``probes``), in ``model_list`` order."""
        return await probe_deployments(self._http, self._deployments, self._address, timeout)

    @staticmethod
    def _address(deployment: Deployment) -> str | None:
        return deployment.api_base or provider_address(deployment)

    async def aclose(self) -> None:
        await self._passthrough.aclose()
        if self._litellm is not None:
            await self._litellm.aclose()
        await self._bridge.aclose()
