"""OpenAI's endpoints besides chat completions, under the same rules: auth, the key's models, policy, metrics.

Legacy completions and the Responses API are scored like chat (trust headers;
in a sync stream the trust object on the stream's end, ``taps``); embeddings
are forwarded and counted, with nothing to score. ``GET /v1/models/{id}``
answers as the listing does: a model the key may not use reads as missing.
Every route is served with and without the ``/v1`` prefix.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from ..endpoints.pipeline import serve
from ..endpoints.specs import COMPLETIONS, EMBEDDINGS, RESPONSES
from .errors import ModelNotFound
from .request_context import HttpIncoming, gateway_of

__all__ = ["router"]

router = APIRouter()


@router.post("/v1/completions")
@router.post("/completions")
async def completions(request: Request) -> Response:
    return await serve(gateway_of(request), COMPLETIONS, HttpIncoming(request))


@router.post("/v1/responses")
@router.post("/responses")
async def responses(request: Request) -> Response:
    return await serve(gateway_of(request), RESPONSES, HttpIncoming(request))


@router.post("/v1/embeddings")
@router.post("/embeddings")
async def embeddings(request: Request) -> Response:
    return await serve(gateway_of(request), EMBEDDINGS, HttpIncoming(request))


@router.get("/v1/models/{model_id:path}")
@router.get("/models/{model_id:path}")
async def retrieve_model(model_id: str, request: Request) -> JSONResponse:
    gateway = gateway_of(request)
    caller = gateway.keys.authenticate(request.headers.get("authorization"))
    if model_id not in gateway.upstream.listed_names or not (
            caller.may_use(model_id) or caller.may_use(gateway.upstream.require_group(model_id))):
        raise ModelNotFound(f"The model `{model_id}` does not exist", param="model", code="model_not_found")
    return JSONResponse({"id": model_id, "object": "model", "created": 0, "owned_by": "trustgate"})
