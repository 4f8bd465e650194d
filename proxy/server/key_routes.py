"""LiteLLM's key endpoints: ``/key/generate``, ``/key/info``, ``/key/update``, ``/key/delete``, ``/key/list``.

The master key makes, changes and deletes keys: a key is a bill and a door to
models, and those are the operator's. Admin keys (configured ``admin: true``,
or made so by the master key) may also read them (``/key/info``,
``/key/list``): they already read every key's trust records, by the same
names, and no answer here carries a key, only its token. Any other key is
refused (403). The plaintext key is in ``/key/generate``'s answer only; every
later answer names a key by its token, even where LiteLLM would echo the key
it was given.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from scoring import StoreUnavailable

from ..base.errors import NotFound, PermissionDenied, ServiceUnavailable
from .auth import Caller
from .key_management import KeyManager
from .key_requests import (
    MAX_KEY_BODY,
    DeleteKeysBody,
    GenerateKeyBody,
    KeyInfoQuery,
    KeyListQuery,
    UpdateKeyBody,
    key_info,
    parse_body,
)
from .request_context import gateway_of, read_body
from .trust_list import parse_params

__all__ = ["router"]

router = APIRouter()
log = logging.getLogger("trustgate.keys")


@contextlib.asynccontextmanager
async def _managing(request: Request, *, reading: bool = False) -> AsyncIterator[tuple[KeyManager, Caller]]:
    """The key manager and the caller, who must hold the master key (an admin key, ``reading``); a key store that
    cannot answer is a 503 (counted and logged), never a missing key."""
    gateway = gateway_of(request)
    caller = await gateway.keys.authenticate(request.headers.get("authorization"))
    if gateway.key_manager is None:
        raise NotFound(
            "Keys made at run time are off on this gateway (trustgate.generated_keys)", code="key_management_off"
        )
    if not (caller.master or (reading and caller.admin)):
        raise PermissionDenied(
            "Only the master key manages keys" + (" (admin keys may read them)" if reading else ""),
            code="master_key_required",
        )
    try:
        yield gateway.key_manager, caller
    except StoreUnavailable as exc:
        gateway.metrics.store_errors.labels(operation="keys").inc()
        log.warning("key store unavailable on %s: %s", request.url.path, exc)
        raise ServiceUnavailable("The key store is unavailable; retry later", code="key_store_unavailable") from None


@router.post("/key/generate")
async def generate_key(request: Request) -> JSONResponse:
    async with _managing(request) as (manager, caller):
        body = parse_body(GenerateKeyBody, await read_body(request, MAX_KEY_BODY))
        key, stored = await manager.generate(body, by=caller.name)
    log.info("key %s (token %s) made by %s", stored.name, stored.token, caller.name)
    return JSONResponse({**key_info(stored, manager.now(), with_token=True), "key": key, "token_id": stored.token})


@router.get("/key/info")
async def get_key_info(request: Request) -> JSONResponse:
    async with _managing(request, reading=True) as (manager, _):
        stored = await manager.info(parse_params(KeyInfoQuery, request.query_params).key)
    return JSONResponse({"key": stored.token, "info": key_info(stored, manager.now(), with_token=False)})


@router.post("/key/update")
async def update_key(request: Request) -> JSONResponse:
    async with _managing(request) as (manager, caller):
        body = parse_body(UpdateKeyBody, await read_body(request, MAX_KEY_BODY))
        stored = await manager.update(body, by=caller.name)
    log.info("key %s (token %s) changed by %s", stored.name, stored.token, caller.name)
    return JSONResponse({**key_info(stored, manager.now(), with_token=True), "key": stored.token})


@router.post("/key/delete")
async def delete_keys(request: Request) -> JSONResponse:
    async with _managing(request) as (manager, caller):
        body = parse_body(DeleteKeysBody, await read_body(request, MAX_KEY_BODY))
        deleted = await manager.delete(body)
    log.info("keys %s deleted by %s", ", ".join(deleted), caller.name)
    return JSONResponse({"deleted_keys": deleted})


@router.get("/key/list")
async def list_keys(request: Request) -> JSONResponse:
    async with _managing(request, reading=True) as (manager, _):
        query = parse_params(KeyListQuery, request.query_params)
        page = await manager.page(query)
    now = manager.now()
    keys = [key_info(key, now, with_token=True) if query.return_full_object else key.token for key in page.keys]
    return JSONResponse(
        {
            "keys": keys,
            "total_count": page.total_count,
            "current_page": page.current_page,
            "total_pages": page.total_pages,
        }
    )
