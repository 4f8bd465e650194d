"""Request fields that name objects in the operator's upstream account: refused unless the key is allowed them.

The gateway calls its upstreams with the operator's credentials, so every key
shares one upstream account. A field that names a stored object there — a
stored response or conversation, a file, a vector store, a code-interpreter
container — or asks the upstream to store one, would let one key read or
extend what another key (or the operator) left in that account. Each such
field is listed here once, per endpoint, with the reason a refusal gives; a
request carrying one is a 400 unless its key's config says
``allow_account_references: true`` (a key the operator trusts with the
account, e.g. its only tenant).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..base.sdk_params import Endpoint

__all__ = ["ACCOUNT_REFERENCES", "AccountReference", "account_reference_in"]

Body = dict[str, Any]


@dataclass(frozen=True)
class AccountReference:
    """One kind of field that reaches the operator's account, and how to find it in a request body."""

    param: str  # the top-level parameter it sits in, as the 400 names it
    where: str  # the field itself, as a client reads it: "tools[].vector_store_ids"
    why: str
    found: Callable[[Body], bool]


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object inside ``value`` (the body is at most ``request.MAX_NESTING`` deep: iterative anyway)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            yield item
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


def _present(name: str) -> Callable[[Body], bool]:
    return lambda body: body.get(name) is not None


def _stores(body: Body) -> bool:
    return body.get("store") is True


def _names_a_file(param: str) -> Callable[[Body], bool]:
    """Any object under ``param`` carrying a ``file_id`` (or ``file_ids``): input_file, input_image, file parts."""
    return lambda body: any(d.get("file_id") is not None or d.get("file_ids") for d in _dicts(body.get(param)))


def _stored_audio(body: Body) -> bool:
    """An assistant message naming an earlier audio answer by id, which the upstream keeps for a while."""
    messages = body.get("messages")
    return isinstance(messages, list) and any(
        isinstance(m, dict) and isinstance(m.get("audio"), dict) and m["audio"].get("id") is not None for m in messages
    )


def _item_reference(body: Body) -> bool:
    return any(d.get("type") == "item_reference" for d in _dicts(body.get("input")))


def _tools_of(body: Body, kind: str) -> Iterator[dict[str, Any]]:
    tools = body.get("tools")
    return (t for t in tools if isinstance(t, dict) and t.get("type") == kind) if isinstance(tools, list) else iter(())


def _vector_stores(body: Body) -> bool:
    return any(t.get("vector_store_ids") for t in _tools_of(body, "file_search"))


def _container(body: Body) -> bool:
    """A code interpreter in an existing container (its id), or one given the account's files."""
    return any(
        isinstance(t.get("container"), str) or (isinstance(t.get("container"), dict) and t["container"].get("file_ids"))
        for t in _tools_of(body, "code_interpreter")
    )


# include values that return what a tool read in the account (a vector store's passages, a container's files).
_ACCOUNT_INCLUDES = frozenset({"file_search_call.results", "code_interpreter_call.outputs"})


def _includes_account_results(body: Body) -> bool:
    include = body.get("include")
    return isinstance(include, list) and bool(_ACCOUNT_INCLUDES & {i for i in include if isinstance(i, str)})


_SHARED = "shared by every key of this gateway"
_STORE = AccountReference(
    "store", "store: true", f"stores the answer in the operator's upstream account, {_SHARED}", _stores
)

_RESPONSES = (
    AccountReference(
        "previous_response_id",
        "previous_response_id",
        f"continues a response stored in the operator's upstream account, {_SHARED}",
        _present("previous_response_id"),
    ),
    AccountReference(
        "conversation",
        "conversation",
        f"a conversation stored in the operator's upstream account, {_SHARED}",
        _present("conversation"),
    ),
    AccountReference(
        "prompt",
        "prompt",
        f"a prompt template stored in the operator's upstream account, {_SHARED}",
        _present("prompt"),
    ),
    _STORE,
    AccountReference(
        "input",
        "input[].file_id (input_file, input_image)",
        f"names a file uploaded to the operator's upstream account, {_SHARED}",
        _names_a_file("input"),
    ),
    AccountReference(
        "input",
        "input[] of type item_reference",
        f"names an item stored in the operator's upstream account, {_SHARED}",
        _item_reference,
    ),
    AccountReference(
        "tools",
        "tools[].vector_store_ids (file_search)",
        f"searches a vector store in the operator's upstream account, {_SHARED}",
        _vector_stores,
    ),
    AccountReference(
        "tools",
        "tools[].container (code_interpreter)",
        f"runs code in a container or on files of the operator's upstream account, {_SHARED}",
        _container,
    ),
    AccountReference(
        "tools",
        "tools[].file_id",
        f"names a file uploaded to the operator's upstream account, {_SHARED}",
        _names_a_file("tools"),
    ),
    AccountReference(
        "include",
        "include: " + ", ".join(sorted(_ACCOUNT_INCLUDES)),
        f"returns what a tool read in the operator's upstream account, {_SHARED}",
        _includes_account_results,
    ),
)

_CHAT = (
    _STORE,
    AccountReference(
        "messages",
        "messages[].content[].file.file_id",
        f"names a file uploaded to the operator's upstream account, {_SHARED}",
        _names_a_file("messages"),
    ),
    AccountReference(
        "messages",
        "messages[].audio.id",
        f"names an audio answer kept in the operator's upstream account, {_SHARED}",
        _stored_audio,
    ),
)

ACCOUNT_REFERENCES: Mapping[Endpoint, tuple[AccountReference, ...]] = MappingProxyType(
    {
        "chat": _CHAT,
        "completions": (),
        "embeddings": (),
        "responses": _RESPONSES,
    }
)


def account_reference_in(body: Body, endpoint: Endpoint) -> AccountReference | None:
    """The first field of ``body`` that reaches the operator's account, or None."""
    return next((ref for ref in ACCOUNT_REFERENCES[endpoint] if ref.found(body)), None)
