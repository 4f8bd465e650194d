"""OpenAI's endpoints: chat completions, legacy completions, the Responses API, embeddings, and a model's card.

Every POST endpoint goes through the one pipeline (``pipeline.serve``) under
the same rules: auth, the key's models, policy, metrics. Legacy completions and
the Responses API are scored like chat (trust headers; in a sync stream the
trust object on the stream's end, ``taps``); embeddings are forwarded and
counted, with nothing to score. ``GET /v1/models/{id}`` answers as the listing
does: a model the key may not use reads as missing. Every route is served with
and without the ``/v1`` prefix.

The POST endpoints are the gateway's traffic, so ``add_endpoint_routes`` puts
them first in the app's own route table, each as a ``RequestHandlerRoute``:
routes of included routers are matched only after the app's own, and FastAPI's
usual handler solves each request's dependencies, which these endpoints do not
have. Side by side, the gateway took about 7% less CPU per whole reply and 2.5%
less per stream (BENCHMARKS.md), with the same OpenAPI schema.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from ..base.errors import ModelNotFound
from ..server.request_context import HttpIncoming, gateway_of
from .pipeline import EndpointSpec, serve
from .specs import CHAT, COMPLETIONS, EMBEDDINGS, RESPONSES

__all__ = ["RequestHandlerRoute", "add_endpoint_routes", "router"]

router = APIRouter()

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class RequestHandlerRoute(APIRoute):
    """A route whose endpoint is its own request handler: it takes the ``Request`` and returns a ``Response``.

    Served without FastAPI's per-request wrapping (``request_response``): its two exit stacks hold what
    dependencies open, and these endpoints have none. An error goes on to the app's ``ExceptionMiddleware``,
    which answers it with the same exception handlers as the route-level wrapping would.
    """

    def __init__(self, path: str, endpoint: Handler, **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        self.app = _request_handler_app(endpoint)

    def get_route_handler(self) -> Handler:
        endpoint: Handler = self.endpoint
        return endpoint


def _request_handler_app(handler: Handler) -> ASGIApp:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        response = await handler(Request(scope, receive, send))
        await response(scope, receive, send)

    return app


async def _served(request: Request, spec: EndpointSpec) -> Response:
    return await serve(gateway_of(request), spec, HttpIncoming(request))


async def chat_completions(request: Request) -> Response:
    return await _served(request, CHAT)


async def completions(request: Request) -> Response:
    return await _served(request, COMPLETIONS)


async def responses(request: Request) -> Response:
    return await _served(request, RESPONSES)


async def embeddings(request: Request) -> Response:
    return await _served(request, EMBEDDINGS)


# Each POST endpoint, by its path under /v1 (also served without the prefix, as OpenAI and LiteLLM do).
POST_ENDPOINTS: tuple[tuple[str, Handler], ...] = (
    ("chat/completions", chat_completions),
    ("completions", completions),
    ("responses", responses),
    ("embeddings", embeddings),
)


def add_endpoint_routes(app: FastAPI) -> None:
    """The POST endpoints, ahead of every route added after this call (call it before ``include_router``)."""
    for path, endpoint in POST_ENDPOINTS:
        for prefix in ("/", "/v1/"):
            app.router.add_api_route(
                prefix + path, endpoint, methods=["POST"], route_class_override=RequestHandlerRoute
            )


@router.get("/v1/models/{model_id:path}")
@router.get("/models/{model_id:path}")
async def retrieve_model(model_id: str, request: Request) -> JSONResponse:
    gateway = gateway_of(request)
    caller = await gateway.keys.authenticate(request.headers.get("authorization"))
    if model_id not in gateway.upstream.listed_names or not (
        caller.may_use(model_id) or caller.may_use(gateway.upstream.require_group(model_id))
    ):
        raise ModelNotFound(f"The model `{model_id}` does not exist", param="model", code="model_not_found")
    return JSONResponse({"id": model_id, "object": "model", "created": 0, "owned_by": "trustgate"})
