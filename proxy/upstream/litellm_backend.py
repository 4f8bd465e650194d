"""The translating path: providers that do not speak OpenAI's wire format go through litellm's Router.

This is the only module that calls litellm (``config.litellm_options`` reads its
option names), and it imports it lazily (``base.litellm_module``): a gateway
whose deployments are all OpenAI-compatible never pays litellm's import time
and memory.

It behaves as the pass-through path does: failures go through the same
``UpstreamErrors`` mapping, a call is bounded by a deadline (the group's
``timeout``; for a stream its ``stream_timeout`` when set) and by
``max_response_bytes`` — counted as the body streams in and decodes, for every
provider, on the one HTTP transport all of litellm's calls take (``reply_cap``,
which also refuses redirects) — a reply must have its endpoint's shape and a
stream at least one event, and deployments are never put in cooldown — litellm would
otherwise bench a deployment for every client after one client's 401 or 404
(or a 404 on ``/responses``), which the pass-through path never does. Retries
and fallbacks are UpstreamClient's, for both paths alike.

It also holds the Responses API bridge: for a deployment that only speaks chat
completions, litellm's responses↔chat transformation turns a Responses request
into a chat completion and the answer (or stream) back into the Responses
shape, on either upstream path.

Streams differ in one way litellm imposes: it re-serialises every chunk from
what it parsed, so a chunk it cannot read (``"delta": "str"``, or not JSON)
cannot be forwarded as the pass-through path forwards it, and its Router ends
the stream there (it closes the upstream response and re-raises). The client's
stream then ends with one OpenAI-shaped error event naming the malformed reply,
and no ``[DONE]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from ..base.errors import GatewayError
from ..base.litellm_module import imported_litellm
from ..base.sdk_params import Endpoint
from ..config.settings import ConfigError, Deployment, GatewaySettings
from .completion import (
    DONE_EVENT,
    Completion,
    Forwarded,
    UpstreamStream,
    bounded_chunks,
    checked_completion,
    checked_forwarded,
    sse_event,
)
from .errors import UpstreamErrors
from .redirects import MAX_REDIRECTS
from .reply_cap import CappedTransport, ReplyCap, capped

__all__ = [
    "LitellmBackend",
    "ResponsesBridge",
    "RouterPick",
    "check_providers",
    "deployment_id",
    "listed_price",
    "provider_address",
    "router_pick",
]

# litellm reads these request fields itself (``metadata`` and ``litellm_metadata`` steer its routing and
# logging) and does not forward them, so a client's never reach it.
_LITELLM_OWN_FIELDS = frozenset({"metadata", "litellm_metadata"})

# Under the HTTP client litellm's OpenAI-SDK providers share (``litellm.aclient_session``): one for the
# process, as that client is; each call's cap comes from the call (``reply_cap.capped``).
_TRANSPORT = CappedTransport()

# Where the Router writes the deployment it chose, by endpoint (the newer APIs' name; "metadata" otherwise).
_ROUTER_METADATA: dict[Endpoint, str] = {"responses": "litellm_metadata"}

# The Router's method for each endpoint.
_ROUTER_CALLS: dict[Endpoint, str] = {
    "chat": "acompletion",
    "completions": "atext_completion",
    "embeddings": "aembedding",
    "responses": "aresponses",
}


def _import_litellm() -> Any:
    litellm = imported_litellm()
    if litellm.aclient_session is None:
        # Redirects reach the transport, which refuses them or keeps them to their origin (``redirects``).
        litellm.aclient_session = httpx.AsyncClient(
            transport=_TRANSPORT, follow_redirects=True, max_redirects=MAX_REDIRECTS
        )
    # The providers litellm reaches with its own HTTP handler (anthropic/, ...) get their transport from
    # this one factory (aiohttp's by default, which decodes and follows redirects unbounded): ours instead.
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    for name in ("create_async_transport", "_create_async_transport"):  # the factory, and its older alias
        setattr(AsyncHTTPHandler, name, staticmethod(_guarded_transport))
    # The OpenAI SDK, which litellm's OpenAI-compatible providers call, imports its ~430 resource and type
    # modules on a client's first ``.chat``: 0.6-0.9 s that the first call after start would pay, the
    # user's in the gateway or a scorer's against its deadline in a (re)started scoring worker. Paid here,
    # at start-up, instead.
    import openai.resources  # noqa: F401

    return litellm


def _guarded_transport(*args: Any, **kwargs: Any) -> CappedTransport:
    """litellm's transport factory, answered with the one transport every litellm call goes through."""
    return _TRANSPORT


def provider_address(deployment: Deployment) -> str | None:
    """Where litellm sends a deployment's calls when the deployment names no ``api_base``: its provider's own
    address (``https://api.openai.com`` for ``openai/``); None where litellm cannot say without a call."""
    try:
        address = _import_litellm().get_api_base(model=deployment.provider_model, optional_params={})
    except Exception:  # litellm raises assorted types for what it cannot place
        return None
    return str(address) if address else None


def check_providers(deployments: Iterable[Deployment]) -> None:
    """A deployment whose provider litellm does not know is a one-line config error, not a start-up traceback."""
    litellm = _import_litellm()
    for deployment in deployments:
        try:
            litellm.get_llm_provider(model=deployment.provider_model, api_base=deployment.api_base)
        except Exception:  # litellm raises its BadRequestError with a page of advice
            raise ConfigError(
                f"model_list: `{deployment.model_name}` names `{deployment.provider_model}`, whose "
                "provider prefix litellm does not know (e.g. openai/, azure/, anthropic/)"
            ) from None


def listed_price(deployment: Deployment) -> tuple[float, float] | None:
    """The US dollars a prompt token and a completion token of ``deployment``'s model cost in litellm's own cost map
    (the entry ``litellm.get_model_info`` finds for it, in the packaged map: ``LITELLM_LOCAL_MODEL_COST_MAP``); None
    for a model the map has no price per token for. ``get_model_info`` answers 0 for what it cannot price (a model
    it only guesses the family of, one priced per second): unknown is never 0 here, so its entry must say it. An
    embedding model's completion tokens cost nothing: it has none."""
    litellm = _import_litellm()
    try:
        key = litellm.get_model_info(model=deployment.provider_model).get("key")
    except Exception:  # litellm raises its own types (ModelNotMappedError, ...) for a model it does not know
        return None
    entry = litellm.model_cost.get(key) if isinstance(key, str) else None
    if not isinstance(entry, dict) or entry.get("input_cost_per_token") is None:
        return None
    return float(entry["input_cost_per_token"]), float(entry.get("output_cost_per_token") or 0.0)


@dataclass
class RouterPick:
    """Which deployment of its group litellm's Router sent a call to (its place in the group's entries of
    ``model_list``), learnt from the Router as it chose: a try is attributed to where it went."""

    index: int | None = None


_PICK: ContextVar[RouterPick | None] = ContextVar("trustgate_router_pick", default=None)


@contextlib.contextmanager
def router_pick() -> Iterator[RouterPick]:
    """The Router's choice for the calls made inside (a try's), filled in once the Router has chosen."""
    pick = RouterPick()
    token = _PICK.set(pick)
    try:
        yield pick
    finally:
        _PICK.reset(token)


def deployment_id(group: str, index: int) -> str:
    """The ``model_info.id`` a deployment is known by, to the Router and to clients of ``/model/info`` and
    ``/health`` (unique: a group's name and a place)."""
    return f"{group}:{index}"


def _client_fields(body: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in body.items() if name not in _LITELLM_OWN_FIELDS}


class _LitellmCalls:
    """What both litellm users share: error mapping, the bounds on replies, SSE framing."""

    def __init__(self, litellm: Any, errors: UpstreamErrors, max_bytes: int, *, follow_redirects: bool) -> None:
        self._litellm = litellm
        self._errors = errors
        self._max_bytes = max_bytes
        self._follow_redirects = follow_redirects

    def translate(self, exc: Exception, cap: ReplyCap) -> GatewayError:
        if isinstance(exc, GatewayError):
            return exc
        if cap.exceeded:  # litellm wraps the transport's error in its own: the cap says what happened
            return self._errors.too_large(self._max_bytes)
        if cap.redirected:
            return self._errors.redirected(f"{type(exc).__name__}: {exc}")
        if cap.undecodable:
            return self._errors.undecodable(f"{type(exc).__name__}: {exc}")
        if cap.not_a_stream is not None:
            return self._errors.malformed(f"a stream answered as {cap.not_a_stream[:60]!r}")
        if cap.malformed is not None:
            return self._errors.malformed(cap.malformed)
        if isinstance(exc, self._litellm.Timeout):
            return self._errors.timed_out(f"{type(exc).__name__}: {exc}")
        return self._errors.for_exception(exc)

    async def whole(self, call: Awaitable[Any], deadline: float, group: str, endpoint: Endpoint) -> Any:
        with capped(self._max_bytes, follow_redirects=self._follow_redirects) as cap:
            try:
                async with asyncio.timeout(deadline):
                    response = await call
            except Exception as exc:  # litellm raises many unrelated types; all are mapped here
                raise self.translate(exc, cap) from exc
        raw = orjson.dumps(_without_cost(response.model_dump(mode="json", warnings=False)))
        if endpoint == "chat":
            return checked_completion(raw, group, max_bytes=self._max_bytes, errors=self._errors)
        return checked_forwarded(raw, group, endpoint, max_bytes=self._max_bytes, errors=self._errors)

    async def opened(
        self, call: Callable[[], Awaitable[Any]], deadline: float, stream_seconds: float, group: str, endpoint: Endpoint
    ) -> UpstreamStream:
        """Open a litellm stream and read its first event, so that errors before the first byte still raise.

        The stream's opening is bounded by ``deadline``, the whole stream by
        ``stream_seconds``, both from now.
        """
        started = asyncio.get_running_loop().time()
        with capped(self._max_bytes, follow_redirects=self._follow_redirects, stream=True) as cap:
            try:
                async with asyncio.timeout(min(deadline, stream_seconds)):
                    wrapper = await call()
                    chunks = bounded_chunks(
                        self._sse(wrapper, endpoint, cap),
                        self._max_bytes,
                        self._errors,
                        seconds=stream_seconds,
                        started=started,
                    )
                    first = await anext(chunks)
            except Exception as exc:
                raise self.translate(exc, cap) from exc
        return UpstreamStream(chunks=chunks, close=chunks.aclose, model_group=group, first=[first])

    async def _sse(self, wrapper: Any, endpoint: Endpoint, cap: ReplyCap) -> AsyncGenerator[bytes, None]:
        """litellm's stream objects as the SSE the endpoint's clients expect.

        Responses events are named (``event: response.output_text.delta``) and
        have no ``[DONE]``; chat and text completion chunks end with ``[DONE]``, each
        choice of theirs with every field OpenAI writes on it (``_whole_choices``).
        The upstream's connection is closed however the stream ends. A stream
        without a single event (an HTML page answered with 200, which litellm
        reads as no events) is a malformed reply, never an empty successful stream.
        """
        events = 0
        try:
            async for item in wrapper:
                events += 1
                payload = item.model_dump(mode="json", exclude_none=True, warnings=False)
                if endpoint == "responses":
                    yield sse_event(_without_cost(payload), name=str(payload.get("type", "message")))
                else:
                    yield sse_event(_whole_choices(_openai_usage_chunk(payload), endpoint))
        except Exception as exc:
            raise self.translate(exc, cap) from exc
        finally:
            await _closed(wrapper)
        if not events:
            raise self._errors.malformed("the stream ended before its first event")
        if endpoint != "responses":
            yield DONE_EVENT


# The fields OpenAI writes on every choice of a stream chunk, null or empty as they may be, with the value they
# have when there is nothing in them. Clients' loops read them without a guard (``"".join(c.choices[0].text ...)``
# fails on a missing ``text``), while litellm's chunks, dumped without their nulls (it sets many fields OpenAI
# never sends), lose them: its last text completion chunk has a ``finish_reason`` and no ``text``.
_CHOICE_FIELDS: dict[Endpoint, tuple[tuple[str, Any], ...]] = {
    "chat": (("delta", {}), ("logprobs", None), ("finish_reason", None)),
    "completions": (("text", ""), ("logprobs", None), ("finish_reason", None)),
}


def _whole_choices(payload: dict[str, Any], endpoint: Endpoint) -> dict[str, Any]:
    """``payload`` (a chat or text completion chunk) with every field OpenAI writes on each of its choices."""
    for choice in payload.get("choices") or ():
        if isinstance(choice, dict):
            for name, empty in _CHOICE_FIELDS[endpoint]:
                if name not in choice:
                    choice[name] = copy.copy(empty)
    return payload


def _openai_usage_chunk(payload: dict[str, Any]) -> dict[str, Any]:
    """A chunk's ``usage`` as OpenAI sends it: only on the usage chunk, with ``choices: []`` and no ``cost``.

    litellm gives every chunk of a text completion stream a zero ``usage``
    (dropped here: it reports nothing), and its usage chunk
    (``stream_options.include_usage``) an empty filler choice (no text, delta
    or finish_reason) and a ``cost`` field. Any other chunk is unchanged.
    """
    usage = payload.get("usage")
    if not isinstance(usage, dict):
        return payload
    if not any(usage.get(name) for name in ("prompt_tokens", "completion_tokens", "total_tokens")):
        del payload["usage"]
        return payload
    _without_cost(payload)
    choices = payload.get("choices")
    if isinstance(choices, list) and all(
        isinstance(choice, dict) and not any(value for name, value in choice.items() if name != "index")
        for choice in choices
    ):
        payload["choices"] = []
    return payload


def _without_cost(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` without the ``cost`` litellm adds to a reply's ``usage`` (a Responses event's: its response's).

    OpenAI's usage has no such field, and a client reading litellm's would read its price map's guess.
    """
    for holder in (payload, payload.get("response")):
        usage = holder.get("usage") if isinstance(holder, dict) else None
        if isinstance(usage, dict):
            usage.pop("cost", None)
    return payload


async def _closed(wrapper: Any) -> None:
    """Close a litellm stream object (its HTTP response); a failure to close changes nothing, the stream is over."""
    close = getattr(wrapper, "aclose", None)
    if close is not None:
        with contextlib.suppress(Exception):
            await close()


_CALLBACK_LISTS = (
    "callbacks",
    "input_callback",
    "service_callback",
    "success_callback",
    "failure_callback",
    "_async_success_callback",
    "_async_failure_callback",
)


def _unhook_router(litellm: Any, router: Any) -> None:
    """Take a finished Router's callbacks out of litellm's module-wide lists.

    litellm caps those lists at 100 entries and never empties them, so each reload or gateway in a process
    would leave its Router's hooks behind until new Routers' routing strategies (latency, least busy) stopped
    being told about calls. ``Router.discard`` unhooks the Router's own methods but not its strategy's
    logger, which is the Router attribute that is a litellm ``CustomLogger``."""
    router.discard()
    strategy_loggers = [
        value for value in vars(router).values() if isinstance(value, litellm.integrations.custom_logger.CustomLogger)
    ]
    for name in _CALLBACK_LISTS:
        hooks = getattr(litellm, name)
        hooks[:] = [hook for hook in hooks if not any(hook is logger for logger in strategy_loggers)]


class LitellmBackend:
    def __init__(self, settings: GatewaySettings, groups: Iterable[str], errors: UpstreamErrors) -> None:
        self._litellm = _import_litellm()
        wanted = set(groups)
        router_settings = settings.router_settings
        groups_here = {name: ds for name, ds in settings.model_groups().items() if name in wanted}
        # Each deployment by an id of its place, which the Router reports back for the call it routed.
        self._places = {
            deployment_id(name, index): index for name, ds in groups_here.items() for index in range(len(ds))
        }
        model_list = [
            {
                "model_name": name,
                "litellm_params": d.litellm_params_plain(),
                "model_info": {"id": deployment_id(name, index)},
            }
            for name, ds in groups_here.items()
            for index, d in enumerate(ds)
        ]
        # Fallbacks and retries (with backoff, Retry-After and scoring's budget) are
        # applied by UpstreamClient for both backends alike, so the Router itself does neither.
        self._router = self._litellm.Router(
            model_list=model_list,
            num_retries=0,
            timeout=router_settings.timeout,
            disable_cooldowns=True,
            routing_strategy=router_settings.routing_strategy,
        )
        # The Router picks the deployment, so a call is bounded by its group's slowest one.
        self._deadlines = {
            name: max(d.deadline(router_settings.timeout) for d in ds) for name, ds in groups_here.items()
        }
        self._stream_deadlines = {
            name: max(d.stream_deadline(router_settings.timeout) for d in ds) for name, ds in groups_here.items()
        }
        self._calls = _LitellmCalls(
            self._litellm,
            errors,
            settings.trustgate.upstream.max_response_bytes,
            follow_redirects=settings.trustgate.upstream.follow_redirects,
        )
        self._with_logprobs = {
            name for name, ds in groups_here.items() if all(_takes_logprobs(self._litellm, d) for d in ds)
        }

    def gives_logprobs(self, group: str) -> bool:
        """Whether every deployment of ``group`` has a provider that litellm lists as taking ``logprobs``."""
        return group in self._with_logprobs

    async def complete(self, group: str, body: dict[str, Any]) -> Completion:
        completion: Completion = await self._calls.whole(
            self._call(group, body, "chat"), self._deadlines[group], group, "chat"
        )
        return completion

    async def complete_at(self, group: str, index: int, body: dict[str, Any]) -> Completion:
        """A chat completion from ``group``'s ``index``-th deployment itself, whatever the Router would pick (the
        Router routes a call named by a deployment's id to that deployment)."""
        call = self._router.acompletion(**_client_fields(body), model=deployment_id(group, index))
        completion: Completion = await self._calls.whole(call, self._deadlines[group], group, "chat")
        return completion

    async def forward(self, group: str, body: dict[str, Any], endpoint: Endpoint) -> Forwarded:
        forwarded: Forwarded = await self._calls.whole(
            self._call(group, body, endpoint), self._deadlines[group], group, endpoint
        )
        return forwarded

    async def open_stream(self, group: str, body: dict[str, Any], endpoint: Endpoint = "chat") -> UpstreamStream:
        return await self._calls.opened(
            lambda: self._call(group, {**body, "stream": True}, endpoint),
            self._deadlines[group],
            self._stream_deadlines[group],
            group,
            endpoint,
        )

    async def _call(self, group: str, body: dict[str, Any], endpoint: Endpoint) -> Any:
        """The Router's call for ``endpoint``; a Responses call the deployment refuses (404) goes over the bridge."""
        call = getattr(self._router, _ROUTER_CALLS[endpoint])
        body = _client_fields(body)
        try:
            return await self._picked(call, endpoint, {**body, "model": group})
        except self._litellm.NotFoundError:
            if endpoint != "responses":
                raise
        return await self._picked(call, endpoint, {**body, "model": group, "use_chat_completions_api": True})

    async def _picked(self, call: Callable[..., Awaitable[Any]], endpoint: Endpoint, arguments: dict[str, Any]) -> Any:
        """``call``, noting in the current ``RouterPick`` the deployment the Router chose: it writes the chosen
        deployment's ``model_info`` into the metadata dict it is handed (``metadata``; ``litellm_metadata``
        for the Responses API), before the call succeeds or fails. tests/proxy/whole_gateway/test_tracing.py checks that
        against the deployments the upstream saw, on every endpoint."""
        chosen: dict[str, Any] = {}
        try:
            return await call(**arguments, **{_ROUTER_METADATA.get(endpoint, "metadata"): chosen})
        finally:
            pick = _PICK.get()
            if pick is not None:
                pick.index = self._places.get(str((chosen.get("model_info") or {}).get("id")))

    async def aclose(self) -> None:
        close = getattr(self._router, "aclose", None)
        if close is not None:
            await close()
        _unhook_router(self._litellm, self._router)
        await _TRANSPORT.close_loop_pool()


class ResponsesBridge:
    """Responses API calls for pass-through deployments without ``/responses``, as chat completions via litellm."""

    def __init__(
        self, errors: UpstreamErrors, default_timeout: float, max_bytes: int, *, follow_redirects: bool
    ) -> None:
        self._errors = errors
        self._default_timeout = default_timeout
        self._max_bytes = max_bytes
        self._follow_redirects = follow_redirects
        self._calls: _LitellmCalls | None = None

    def _loaded(self) -> _LitellmCalls:
        if self._calls is None:
            self._calls = _LitellmCalls(
                _import_litellm(), self._errors, self._max_bytes, follow_redirects=self._follow_redirects
            )
        return self._calls

    def _call(self, deployment: Deployment, body: dict[str, Any]) -> Awaitable[Any]:
        params = deployment.litellm_params_plain()
        return self._loaded()._litellm.aresponses(
            **{
                **_client_fields(body),
                "model": deployment.provider_model,
                "api_base": deployment.api_base,
                "api_key": params.get("api_key"),
                "timeout": deployment.deadline(self._default_timeout),
                "use_chat_completions_api": True,
            }
        )

    async def aclose(self) -> None:
        if self._calls is not None:
            await _TRANSPORT.close_loop_pool()

    async def forward(self, deployment: Deployment, body: dict[str, Any]) -> Forwarded:
        forwarded: Forwarded = await self._loaded().whole(
            self._call(deployment, body), deployment.deadline(self._default_timeout), deployment.model_name, "responses"
        )
        return forwarded

    async def open_stream(self, deployment: Deployment, body: dict[str, Any]) -> UpstreamStream:
        return await self._loaded().opened(
            lambda: self._call(deployment, {**body, "stream": True}),
            deployment.deadline(self._default_timeout),
            deployment.stream_deadline(self._default_timeout),
            deployment.model_name,
            "responses",
        )


def _takes_logprobs(litellm: Any, deployment: Deployment) -> bool:
    """Whether litellm passes ``logprobs`` to this deployment's provider (rather than refusing or dropping it)."""
    try:
        model, provider, _, _ = litellm.get_llm_provider(model=deployment.provider_model, api_base=deployment.api_base)
        supported = litellm.get_supported_openai_params(model=model, custom_llm_provider=provider)
    except Exception:  # litellm raises assorted types for models it cannot place: then it is not asked
        return False
    return "logprobs" in (supported or [])
