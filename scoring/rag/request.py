"""The gateway's side of a RAG request: read and remove the extension fields, show the upstream the documents.

Three optional fields extend OpenAI's chat body: ``documents`` (a list of
``{id, title, text}`` or strings; the n-th is cited as ``[n]``),
``answerable`` (bool) and ``reference_claims`` (list of strings). No upstream
knows them, so they are always removed before forwarding. When documents come
only through the field, the upstream has never seen them and could not cite
them, so they are appended to the last user message as numbered passages in
Trust-Eval's format. When the messages already hold numbered passages, the
messages are left alone. Pure: the client's body is never mutated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from ..types import MAX_REFERENCE_CLAIMS, RagLabels
from .documents import Document, documents_in_messages, format_passages, job_documents

__all__ = [
    "MAX_DOCUMENTS",
    "RAG_FIELDS",
    "InvalidRagField",
    "RagRequest",
    "parse_documents",
    "parse_labels",
    "prepare_rag_request",
]

RAG_FIELDS = ("documents", "answerable", "reference_claims")
MAX_DOCUMENTS = 100  # each cited document can cost judge calls; beyond this a request is refused
_LABELS = TypeAdapter(RagLabels)  # the one check of the labels, a job's included (scoring.types.JobPolicy)
_NO_LABELS = RagLabels()  # what a request without the extension fields says: nothing
_LABEL_ERRORS = {
    "answerable": "'answerable' must be true or false",
    "reference_claims": f"'reference_claims' must be a list of at most {MAX_REFERENCE_CLAIMS} non-empty strings",
}


class InvalidRagField(ValueError):
    """A RAG extension field the client sent is malformed; ``param`` names it (a 400 for the client)."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True, slots=True)
class RagRequest:
    """A request that carries documents: them, where they came from, and the client's labels.

    ``source`` is "field" when the ``documents`` field gave them (it wins over
    passages in the messages), "messages" when they were found in the prompt;
    ``appended`` says whether the forwarded body gained them as passages.
    """

    documents: tuple[Document, ...]
    source: Literal["field", "messages"]
    appended: bool
    labels: RagLabels

    def job_documents(self) -> list[dict[str, Any]]:
        """For ``ScoringJob.documents``."""
        return job_documents(self.documents)


def parse_documents(value: Any) -> tuple[Document, ...]:
    """The ``documents`` field, numbered in order; raises ``InvalidRagField``."""
    if not isinstance(value, list) or not value:
        raise InvalidRagField(
            "'documents' must be a non-empty list of {id, title, text} objects or strings", "documents"
        )
    if len(value) > MAX_DOCUMENTS:
        raise InvalidRagField(f"'documents' holds {len(value)} documents; at most {MAX_DOCUMENTS}", "documents")
    documents = []
    for number, item in enumerate(value, start=1):
        param = f"documents[{number - 1}]"
        if isinstance(item, str):
            item = {"text": item}
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
            raise InvalidRagField(f"'{param}' must be a string or an object with a non-empty string 'text'", param)
        title, identifier = item.get("title", ""), item.get("id")
        if not isinstance(title, str) or not (identifier is None or isinstance(identifier, (str, int))):
            raise InvalidRagField(f"'{param}': 'title' must be a string and 'id' a string or integer", param)
        documents.append(Document(number, title, item["text"], None if identifier is None else str(identifier)))
    return tuple(documents)


def parse_labels(fields: dict[str, Any]) -> RagLabels:
    """``answerable`` and ``reference_claims`` from a request body (or a case); raises ``InvalidRagField``."""
    try:
        return _LABELS.validate_python({name: fields[name] for name in _LABEL_ERRORS if name in fields})
    except ValidationError as exc:
        param = str(exc.errors()[0]["loc"][0])
        raise InvalidRagField(_LABEL_ERRORS[param], param) from exc


def _with_passages(messages: list[Any], documents: tuple[Document, ...]) -> list[Any]:
    """The messages with the passages after the last user message's text (Trust-Eval: question, then documents)."""
    passages = format_passages(documents)
    last_user = max(
        (i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"), default=None
    )
    if last_user is None:
        return [*messages, {"role": "user", "content": passages}]
    message = dict(messages[last_user])
    content = message.get("content")
    if isinstance(content, list):
        message["content"] = [*content, {"type": "text", "text": "\n\n" + passages}]
    else:
        message["content"] = f"{content or ''}\n\n{passages}".lstrip()
    return [*messages[:last_user], message, *messages[last_user + 1 :]]


def prepare_rag_request(body: dict[str, Any]) -> tuple[dict[str, Any], RagRequest | None]:
    """The body to forward (without the extension fields; with the documents as passages when only the
    field had them) and the request's RAG view, None when it carries no documents (closed-book).

    Raises ``InvalidRagField`` for a malformed extension field. Labels sent
    without any documents are dropped with the fields: there is nothing to
    ground them in.
    """
    fields = {name: body[name] for name in RAG_FIELDS if name in body}
    forward = {name: value for name, value in body.items() if name not in fields}
    labels = parse_labels(fields) if fields else _NO_LABELS
    in_prompt = documents_in_messages(forward.get("messages"))
    if "documents" in fields:
        documents = parse_documents(fields["documents"])
        appended = in_prompt is None and isinstance(forward.get("messages"), list)
        if appended:
            forward["messages"] = _with_passages(forward["messages"], documents)
        return forward, RagRequest(documents, "field", appended, labels)
    if in_prompt is None:
        return forward, None
    return forward, RagRequest(tuple(in_prompt), "messages", False, labels)
