"""The one home of what an OpenAI-compatible upstream answers: every endpoint's replies and stream events.

Every reader of an upstream reply — the response path (is this a reply of the
endpoint at all?), the trust hand-off (the answer), the scorers' ``Ask`` (text
and top log-probabilities), the stream taps (chunks and Responses events), the
evaluation harness and the log-probability stripper — goes through the typed
models here, so that the shape is checked in one place and a field renamed by a
provider fails loudly rather than reading as an empty answer.

Public use:

- ``parse_completion(raw_or_dict) -> ChatCompletion``: raises ``MalformedReply``
  when the body is not a chat completion (truncated JSON, HTML, ``[1,2,3]``,
  empty, a choice without a message, ...). Callers turn that into a 502 for a
  client, or a failed component for a scorer — never a score.
- ``check_reply(data, endpoint) -> WholeReply``: a whole reply of any endpoint
  read as its model (``REPLY_MODELS``: ``ChatCompletion``, ``TextCompletion``,
  ``EmbeddingList``, ``ResponseObject``), or ``MalformedReply`` (a 200 whose
  fields are all null is not one); ``check_stream_start(data, endpoint)``: a
  stream's first event has the endpoint's shape.
- ``WholeReply``: what every whole reply offers the gateway — ``usage``,
  ``completion_id``, ``answer_text``, ``calls_tools``, ``answer_logprobs()``;
  ``Answer``: the answer as scoring reads it, of a whole reply
  (``Answer.from_reply``) or of a stream (its tap's ``answer()``).
- ``parse_payload(data, model)`` / ``parse_chunk(data)``: one SSE ``data:``
  payload as a stream event (``ChatCompletionChunk``, ``TextCompletionChunk``,
  ``ResponsesEvent``); ``None`` for anything else, which a tap skips while the
  bytes are still forwarded to the client untouched. Fields a scorer or meter
  reads but a client does not need are ``Readable``: in another shape they read
  as absent, never as a reason to refuse an answer.
- ``reported_usage(data)``: the tokens a reply or stream event of any endpoint
  reports (user traffic's share of the bill, and keys' tokens per minute).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    model_validator,
)

from ..base.sdk_params import Endpoint

__all__ = [
    "REPLY_MODELS",
    "Answer",
    "ChatCompletion",
    "ChatCompletionChunk",
    "ChoiceLogprobs",
    "ChunkChoice",
    "CompletionChoice",
    "EmbeddingList",
    "MalformedReply",
    "OpenChoices",
    "OpenResponsesPayload",
    "OutputItem",
    "OutputPart",
    "ReportedUsage",
    "ResponseObject",
    "ResponsesEvent",
    "StreamChunk",
    "TextCompletion",
    "TextCompletionChunk",
    "TokenLogprob",
    "TokenUsage",
    "WholeReply",
    "check_reply",
    "check_stream_start",
    "media_type",
    "parse_chunk",
    "parse_completion",
    "parse_payload",
    "reported_tokens",
    "reported_usage",
]


class MalformedReply(ValueError):
    """The upstream answered 200 with a body that is not what OpenAI's API would send."""


class _Lenient(BaseModel):
    # Providers add fields of their own; only the fields read here are checked.
    model_config = ConfigDict(extra="ignore", frozen=True)


class Alternative(_Lenient):
    token: str
    logprob: float | None  # None: a server that serialises -inf as null (pydantic's default)


class TokenLogprob(_Lenient):
    """One generated token: its own log-probability and its top alternatives (null when not asked for)."""

    token: str
    logprob: float | None
    top_logprobs: list[Alternative] | None = None


class ChoiceLogprobs(_Lenient):
    content: list[TokenLogprob] | None = None


class _Logprobbed(_Lenient):
    logprobs: ChoiceLogprobs | None = None

    def chosen_logprobs(self) -> list[float]:
        """The generated tokens' own log-probabilities; empty when the upstream sent none."""
        return [entry.logprob for entry in self._entries() if entry.logprob is not None]

    def chosen_tokens(self) -> list[tuple[str, float]]:
        return [(entry.token, entry.logprob) for entry in self._entries() if entry.logprob is not None]

    def top_logprobs(self) -> list[dict[str, float]]:
        """Per generated token, its alternatives as {token: logprob} (the token itself when none were asked)."""
        return [
            _known({alt.token: alt.logprob for alt in entry.top_logprobs or []}) or _known({entry.token: entry.logprob})
            for entry in self._entries()
        ]

    def _entries(self) -> list[TokenLogprob]:
        return (self.logprobs.content or []) if self.logprobs is not None else []


def _known(logprobs: dict[str, float | None]) -> dict[str, float]:
    return {token: value for token, value in logprobs.items() if value is not None}


class ReplyMessage(_Lenient):
    content: str | None = None
    tool_calls: list[Any] | None = None
    function_call: dict[str, Any] | None = None

    @property
    def calls_tools(self) -> bool:
        return bool(self.tool_calls) or self.function_call is not None


class CompletionChoice(_Logprobbed):
    index: int = 0
    message: ReplyMessage

    @property
    def answer_text(self) -> str | None:
        return self.message.content


class TokenUsage(_Lenient):
    """``usage``: what the call cost, as the upstream reports it.

    Chat and legacy completions say ``prompt_tokens`` / ``completion_tokens``;
    a Responses object says ``input_tokens`` / ``output_tokens``, read here under the same names.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @model_validator(mode="before")
    @classmethod
    def _responses_names(cls, value: Any) -> Any:
        if isinstance(value, dict) and ("input_tokens" in value or "output_tokens" in value):
            return {"prompt_tokens": value.get("input_tokens", 0), "completion_tokens": value.get("output_tokens", 0)}
        return value

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def _none_if_unreadable(value: Any, read: ValidatorFunctionWrapHandler) -> Any:
    """A field in another shape reads as absent: it is read for scoring or metering, never a reason to refuse."""
    try:
        return read(value)
    except ValidationError:
        return None


def _readable_items(value: Any, read: ValidatorFunctionWrapHandler) -> Any:
    """The items of a list that read as the item type; anything else (or no list at all) is passed over."""
    if not isinstance(value, list):
        return []
    kept = []
    for item in value:
        try:
            kept.extend(read([item]))
        except ValidationError:
            continue
    return kept


T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
Readable = Annotated[T | None, WrapValidator(_none_if_unreadable)]  # None when not in the expected shape
ReadableList = Annotated[list[T], WrapValidator(_readable_items)]  # the items that read; [] when not a list
ReportedUsage = Readable[TokenUsage]
_USAGE = TypeAdapter(ReportedUsage)


def reported_usage(data: dict[str, Any]) -> TokenUsage | None:
    """The ``usage`` of any endpoint's reply or stream event (``TokenUsage`` reads both namings).

    None when the reply reports none, or in a shape neither reads.
    """
    usage = data.get("usage")
    return _USAGE.validate_python(usage) if isinstance(usage, dict) else None


def reported_tokens(data: dict[str, Any]) -> int:
    """All the tokens ``data`` reports using (prompt and completion); 0 when it reports none."""
    usage = reported_usage(data)
    return usage.total if usage is not None else 0


class WholeReply(_Lenient):
    """A whole (non-streamed) reply of any endpoint, as the gateway reads it: what it cost, and its answer.

    Each endpoint's model says where its answer lives; one without an answer to score (embeddings) has none.
    """

    usage: ReportedUsage = None

    @property
    def completion_id(self) -> str | None:
        return None

    @property
    def answer_text(self) -> str | None:
        return None

    @property
    def calls_tools(self) -> bool:
        return False

    def answer_logprobs(self) -> list[float]:
        """The answer's tokens' own log-probabilities; empty when the upstream sent none."""
        return []


@dataclass(frozen=True)
class Answer:
    text: str | None
    has_tool_calls: bool = False
    logprobs: list[float] | None = None
    completion_id: str | None = None  # the upstream's id for the completion (``chatcmpl-…``)

    @classmethod
    def from_reply(cls, reply: WholeReply) -> Answer:
        """The answer of a whole reply of any endpoint (validated as that endpoint's already)."""
        return cls(
            text=reply.answer_text,
            has_tool_calls=reply.calls_tools,
            logprobs=reply.answer_logprobs() or None,
            completion_id=reply.completion_id,
        )


class ChatCompletion(WholeReply):
    """A non-streamed chat completion, as far as the gateway reads it."""

    id: str | None = None
    model: str | None = None
    choices: list[CompletionChoice]

    @property
    def first(self) -> CompletionChoice | None:
        """The choice scoring looks at (index 0), if the upstream sent one."""
        return next((c for c in self.choices if c.index == 0), self.choices[0] if self.choices else None)

    @property
    def completion_id(self) -> str | None:
        return self.id

    @property
    def answer_text(self) -> str | None:
        return self.first.answer_text if self.first is not None else None

    @property
    def calls_tools(self) -> bool:
        return self.first is not None and self.first.message.calls_tools

    def answer_logprobs(self) -> list[float]:
        return self.first.chosen_logprobs() if self.first is not None else []


class ChunkDelta(_Lenient):
    content: str | None = None
    tool_calls: list[Any] | None = None
    function_call: dict[str, Any] | None = None


class ChunkChoice(_Logprobbed):
    index: int = 0
    delta: ChunkDelta = Field(default_factory=ChunkDelta)
    # Set on a choice's final chunk; any value counts (a provider's odd one must not cost the chunk its text).
    finish_reason: Any = None


class StreamChunk(_Lenient):
    """A chunk of a chat or legacy completions stream, as a tap reads it: the first choice's share of the answer."""

    id: str | None = None
    model: str | None = None
    usage: ReportedUsage = None  # the last chunk's, when the stream was asked to include usage
    choices: list[Any] = Field(default_factory=list)  # each endpoint's chunk reads its own

    @property
    def finishes(self) -> bool:
        """Whether this is a final chunk: a choice has a ``finish_reason``."""
        return False

    @property
    def usage_only(self) -> bool:
        """Whether this is the usage chunk ``stream_options.include_usage`` asks for: usage, and no choice."""
        return self.usage is not None and not self.choices

    def answer_text(self) -> str:
        return ""

    @property
    def calls_tools(self) -> bool:
        return False

    def answer_logprobs(self) -> list[float]:
        return []


class ChatCompletionChunk(StreamChunk):
    """One ``chat.completion.chunk`` of a stream."""

    choices: list[ChunkChoice] = Field(default_factory=list)

    @property
    def finishes(self) -> bool:
        return any(choice.finish_reason is not None for choice in self.choices)

    def answer_text(self) -> str:
        return "".join(c.delta.content or "" for c in self._first())

    @property
    def calls_tools(self) -> bool:
        return any(c.delta.tool_calls or c.delta.function_call is not None for c in self._first())

    def answer_logprobs(self) -> list[float]:
        return [lp for c in self._first() for lp in c.chosen_logprobs()]

    def _first(self) -> list[ChunkChoice]:
        return [choice for choice in self.choices if choice.index == 0]


def parse_completion(body: bytes | dict[str, Any]) -> ChatCompletion:
    """The chat completion in ``body`` (the upstream's bytes, or JSON already parsed); else ``MalformedReply``."""
    try:
        if isinstance(body, dict):
            return ChatCompletion.model_validate(body)
        return ChatCompletion.model_validate_json(body)
    except ValidationError as exc:
        raise MalformedReply(_describe(exc)) from exc


def parse_chunk(data: bytes) -> ChatCompletionChunk | None:
    """One SSE ``data:`` payload as a chunk; None when it is not one (the tap skips it)."""
    return parse_payload(data, ChatCompletionChunk)


class TextLogprobs(_Lenient):
    """A legacy completion choice's ``logprobs``: one entry per token (null for a server's -inf)."""

    token_logprobs: list[float | None] = Field(default_factory=list)

    def chosen(self) -> list[float]:
        return [lp for lp in self.token_logprobs if lp is not None]


class TextChoice(_Lenient):
    """A legacy completion's choice: its text (required, as clients read it first) and what else scoring reads."""

    text: str
    logprobs: Readable[TextLogprobs] = None


class TextCompletion(WholeReply):
    """A legacy completion: its choices carry text; the answer is the first choice's."""

    id: Readable[str] = None
    choices: list[TextChoice]

    @property
    def completion_id(self) -> str | None:
        return self.id or None

    @property
    def answer_text(self) -> str | None:
        return self.choices[0].text if self.choices else None

    def answer_logprobs(self) -> list[float]:
        logprobs = self.choices[0].logprobs if self.choices else None
        return logprobs.chosen() if logprobs is not None else []


class TextChunkChoice(_Lenient):
    index: Any = 0
    text: Readable[str] = None
    logprobs: Readable[TextLogprobs] = None
    finish_reason: Any = None  # set on a choice's final chunk; any value counts


class TextCompletionChunk(StreamChunk):
    """One event of a legacy completions stream; what does not read as one is a chunk without choices."""

    id: Readable[str] = None
    model: Readable[str] = None
    choices: ReadableList[TextChunkChoice] = Field(default_factory=list)

    @property
    def finishes(self) -> bool:
        return any(choice.finish_reason is not None for choice in self.choices)

    def answer_text(self) -> str:
        return "".join(c.text or "" for c in self._first())

    def answer_logprobs(self) -> list[float]:
        return [lp for c in self._first() if c.logprobs is not None for lp in c.logprobs.chosen()]

    def _first(self) -> list[TextChunkChoice]:
        return [choice for choice in self.choices if choice.index == 0]


def _chosen(alternatives: list[Alternative] | None) -> list[float]:
    return [entry.logprob for entry in alternatives or [] if entry.logprob is not None]


class OutputPart(_Lenient):
    """A content part of a Responses output item: ``output_text`` carries the answer's text."""

    type: Readable[str] = None
    text: Readable[str] = None
    logprobs: Readable[list[Alternative]] = None

    @property
    def answer_text(self) -> str | None:
        return self.text if self.type == "output_text" else None


class OutputItem(_Lenient):
    """An item of a Responses object's ``output``: a message (its parts), a function call, or another kind."""

    type: Readable[str] = None
    content: ReadableList[OutputPart] = Field(default_factory=list)

    @property
    def texts(self) -> list[OutputPart]:
        """The message's text parts (none for another kind of item)."""
        return [part for part in self.content if part.answer_text is not None] if self.type == "message" else []


_TOOL_CALL_ITEMS = ("function_call", "custom_tool_call")


class ResponseObject(WholeReply):
    """A Responses API object: an id and its output items; the answer is the text of its message items."""

    id: str
    output: list[OutputItem]

    @property
    def completion_id(self) -> str | None:
        return self.id or None

    @property
    def answer_text(self) -> str | None:
        parts = [part for item in self.output for part in item.texts]
        return "".join(part.text or "" for part in parts) if parts else None

    @property
    def calls_tools(self) -> bool:
        return any(item.type in _TOOL_CALL_ITEMS for item in self.output)

    def answer_logprobs(self) -> list[float]:
        return [lp for item in self.output for part in item.texts for lp in _chosen(part.logprobs)]


class ResponseHead(_Lenient):
    """The response object a Responses stream event carries, as far as a tap reads it."""

    id: Readable[str] = None
    usage: ReportedUsage = None


class ResponsesEvent(_Lenient):
    """One event of a Responses stream; its fields are read only where they have the expected shape."""

    type: Readable[str] = None
    sequence_number: Readable[StrictInt] = None
    response: Readable[ResponseHead] = None
    delta: Readable[str] = None
    logprobs: Readable[list[Alternative]] = None
    item: Readable[OutputItem] = None

    def chosen_logprobs(self) -> list[float]:
        return _chosen(self.logprobs)


class _Embedding(_Lenient):
    embedding: list[float] | str  # a string when the client asked for base64


class EmbeddingList(WholeReply):
    """An embeddings reply: nothing in it is scored, only its usage is read."""

    data: list[_Embedding]


class _Open(BaseModel):
    """A reply read to be rewritten (``logprobs``): the fields named are typed, every other field is kept as it
    came and written back (``dump``); a named field in another shape is kept as it came too."""

    model_config = ConfigDict(extra="allow")

    def dump(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True)


OrKept = Annotated[T | Any, Field(union_mode="left_to_right")]  # the model when it reads as one, else as it came


class OpenTokenLogprob(_Open):
    top_logprobs: Any = None


class OpenChoiceLogprobs(_Open):
    content: OrKept[list[OrKept[OpenTokenLogprob]]] = None


class OpenChoice(_Open):
    logprobs: OrKept[OpenChoiceLogprobs] = None


class OpenChoices(_Open):
    """A chat or legacy completion, or one of their stream chunks, read for its choices' log-probabilities."""

    choices: OrKept[list[OrKept[OpenChoice]]] = None

    def readable_choices(self) -> list[OpenChoice]:
        return [c for c in self.choices if isinstance(c, OpenChoice)] if isinstance(self.choices, list) else []


class OpenText(_Open):
    """A Responses ``output_text`` part, or a text event: what carries an answer text's log-probabilities."""

    type: Any = None
    logprobs: Any = None


class OpenItem(_Open):
    content: OrKept[list[OrKept[OpenText]]] = None


class OpenResponse(_Open):
    output: OrKept[list[OrKept[OpenItem]]] = None


class OpenResponsesPayload(OpenText, OpenResponse):
    """A Responses object or stream event: a text event itself, or a part, an item or a response that holds them."""

    part: OrKept[OpenText] = None
    item: OrKept[OpenItem] = None
    response: OrKept[OpenResponse] = None

    def texts(self) -> list[OpenText]:
        """Every text part and text event in the payload, wherever it nests them."""
        responses = [r for r in (self, self.response) if isinstance(r, OpenResponse)]
        items = [i for r in responses if isinstance(r.output, list) for i in r.output if isinstance(i, OpenItem)]
        items += [self.item] if isinstance(self.item, OpenItem) else []
        parts = [p for i in items if isinstance(i.content, list) for p in i.content if isinstance(p, OpenText)]
        return [self, *([self.part] if isinstance(self.part, OpenText) else []), *parts]


class _StreamChunk(_Lenient):
    """The first event of a chat or legacy completions stream: a chunk with its choices (maybe none yet)."""

    choices: list[dict[str, Any]]


class _StreamEvent(_Lenient):
    """The first event of a Responses stream: a typed event."""

    type: str


# Per endpoint: what its whole reply and its stream's first event must be, and what the reply is called.
REPLY_MODELS: dict[Endpoint, type[WholeReply]] = {
    "chat": ChatCompletion,
    "completions": TextCompletion,
    "embeddings": EmbeddingList,
    "responses": ResponseObject,
}
_FIRST_EVENT: dict[Endpoint, type[_Lenient]] = {
    "chat": _StreamChunk,
    "completions": _StreamChunk,
    "embeddings": _StreamChunk,
    "responses": _StreamEvent,
}
_NAMES: dict[Endpoint, str] = {
    "chat": "chat completion",
    "completions": "text completion",
    "embeddings": "embedding list",
    "responses": "Responses object",
}


def parse_payload(data: bytes, model: type[M]) -> M | None:
    """One SSE ``data:`` payload as ``model``; None when it is not a JSON object in that shape."""
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(payload, dict):
        return None
    try:
        return model.model_validate(payload)
    except ValidationError:
        return None


def check_reply(data: dict[str, Any], endpoint: Endpoint) -> WholeReply:
    """``data`` read as a whole reply of ``endpoint``; ``MalformedReply`` unless it has that shape."""
    try:
        return REPLY_MODELS[endpoint].model_validate(data)
    except ValidationError as exc:
        raise MalformedReply(_describe(exc, _NAMES[endpoint])) from exc


def media_type(content_type: str | None) -> str:
    """The media type of a ``Content-Type`` header, lower case and without its parameters (``""`` when absent)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def check_stream_start(data: bytes, endpoint: Endpoint) -> None:
    """``MalformedReply`` unless the first event's ``data`` has the shape of ``endpoint``'s stream events."""
    try:
        _FIRST_EVENT[endpoint].model_validate_json(data)
    except ValidationError as exc:
        raise MalformedReply(_describe(exc, f"{_NAMES[endpoint]} stream")) from exc


def _describe(exc: ValidationError, what: str = "chat completion") -> str:
    """A short reason, without echoing the upstream's text back (it goes to logs, not clients)."""
    error = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in error["loc"]) or "body"
    return f"not a {what}: {where}: {error['msg']}"
