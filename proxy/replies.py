"""The one parser for what an OpenAI-compatible upstream answers: completions and stream chunks.

Every reader of an upstream reply — the response path (is this a chat
completion at all?), the trust hand-off (the first choice's answer), the
scorers' ``Ask`` (text and top log-probabilities) and the SSE tap (stream
deltas) — goes through the typed models here, so that the shape is checked in
one place and a field renamed by a provider fails loudly rather than reading
as an empty answer.

Public use:

- ``parse_completion(raw_or_dict) -> ChatCompletion``: raises ``MalformedReply``
  when the body is not a chat completion (truncated JSON, HTML, ``[1,2,3]``,
  empty, a choice without a message, ...). Callers turn that into a 502 for a
  client, or a failed component for a scorer — never a score.
- ``check_reply(data, endpoint)``: a whole reply of legacy completions,
  embeddings or the Responses API has that endpoint's shape (a 200 whose
  fields are all null is not one); ``first_event_data(buffer)`` and
  ``check_stream_start(data, endpoint)``: a stream's first event has it.
- ``parse_chunk(data) -> ChatCompletionChunk | None``: one SSE ``data:``
  payload; ``None`` for anything that is not a chunk, which the tap skips while
  the bytes are still forwarded to the client untouched.
- ``ChatCompletion.first`` / ``CompletionChoice.answer_text``,
  ``.chosen_logprobs()``, ``.top_logprobs()``: what scoring reads.
- ``reported_usage(data)``: the tokens a reply or stream event of any endpoint
  reports (user traffic's share of the bill, and keys' tokens per minute).
- ``text_completion_logprobs`` / ``output_text_logprobs``: the answer's token
  log-probabilities as legacy completions and the Responses API carry them.
"""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)

from .sdk_params import Endpoint

__all__ = [
    "ChatCompletion",
    "ChatCompletionChunk",
    "ChoiceLogprobs",
    "ChunkChoice",
    "CompletionChoice",
    "MalformedReply",
    "ReportedUsage",
    "TokenLogprob",
    "TokenUsage",
    "check_reply",
    "check_stream_start",
    "first_event_data",
    "media_type",
    "output_text_logprobs",
    "parse_chunk",
    "parse_completion",
    "reported_tokens",
    "reported_usage",
    "text_completion_logprobs",
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
        return [_known({alt.token: alt.logprob for alt in entry.top_logprobs or []})
                or _known({entry.token: entry.logprob}) for entry in self._entries()]

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
    """``usage``: what the call cost, as the upstream reports it."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def _usage_if_readable(value: Any, read: ValidatorFunctionWrapHandler) -> TokenUsage | None:
    """Usage in another shape reads as unreported: it is metered, never a reason to refuse an answer."""
    try:
        usage: TokenUsage | None = read(value)
    except ValidationError:
        return None
    return usage


ReportedUsage = Annotated[TokenUsage | None, WrapValidator(_usage_if_readable)]
_USAGE = TypeAdapter(ReportedUsage)


def reported_usage(data: dict[str, Any]) -> TokenUsage | None:
    """The ``usage`` of any endpoint's reply or stream event; the Responses API's is read from its own names.

    Chat and legacy completions say ``prompt_tokens`` / ``completion_tokens``;
    a Responses object says ``input_tokens`` / ``output_tokens``. None when the
    reply reports none, or in a shape neither reads.
    """
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    if "input_tokens" in usage or "output_tokens" in usage:
        usage = {"prompt_tokens": usage.get("input_tokens", 0), "completion_tokens": usage.get("output_tokens", 0)}
    return _USAGE.validate_python(usage)


def reported_tokens(data: dict[str, Any]) -> int:
    """All the tokens ``data`` reports using (prompt and completion); 0 when it reports none."""
    usage = reported_usage(data)
    return usage.total if usage is not None else 0


class ChatCompletion(_Lenient):
    """A non-streamed chat completion, as far as the gateway reads it."""

    id: str | None = None
    model: str | None = None
    choices: list[CompletionChoice]
    usage: ReportedUsage = None

    @property
    def first(self) -> CompletionChoice | None:
        """The choice scoring looks at (index 0), if the upstream sent one."""
        return next((c for c in self.choices if c.index == 0), self.choices[0] if self.choices else None)


class ChunkDelta(_Lenient):
    content: str | None = None
    tool_calls: list[Any] | None = None
    function_call: dict[str, Any] | None = None


class ChunkChoice(_Logprobbed):
    index: int = 0
    delta: ChunkDelta = Field(default_factory=ChunkDelta)
    # Set on a choice's final chunk; any value counts (a provider's odd one must not cost the chunk its text).
    finish_reason: Any = None


class ChatCompletionChunk(_Lenient):
    """One ``chat.completion.chunk`` of a stream."""

    id: str | None = None
    model: str | None = None
    choices: list[ChunkChoice] = Field(default_factory=list)
    usage: ReportedUsage = None  # the last chunk's, when the stream was asked to include usage


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
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(payload, dict):
        return None
    try:
        return ChatCompletionChunk.model_validate(payload)
    except ValidationError:
        return None


class TextLogprobs(_Lenient):
    """A legacy completion choice's ``logprobs``: one entry per token (null for a server's -inf)."""

    token_logprobs: list[float | None] = Field(default_factory=list)


_TEXT_LOGPROBS = TypeAdapter(TextLogprobs | None)
_OUTPUT_TEXT_LOGPROBS = TypeAdapter(list[Alternative] | None)


def text_completion_logprobs(value: Any) -> list[float]:
    """The sampled tokens' log-probabilities of a legacy completion choice's ``logprobs`` ([]: none, or malformed)."""
    try:
        parsed = _TEXT_LOGPROBS.validate_python(value)
    except ValidationError:
        return []
    return [lp for lp in parsed.token_logprobs if lp is not None] if parsed is not None else []


def output_text_logprobs(value: Any) -> list[float]:
    """The sampled tokens' log-probabilities of a Responses ``output_text`` part or text delta ([]: none)."""
    try:
        parsed = _OUTPUT_TEXT_LOGPROBS.validate_python(value)
    except ValidationError:
        return []
    return [entry.logprob for entry in parsed or [] if entry.logprob is not None]


class _TextChoice(_Lenient):
    text: str


class _TextCompletion(_Lenient):
    """A legacy completion: its choices carry text."""

    choices: list[_TextChoice]


class _Embedding(_Lenient):
    embedding: list[float] | str  # a string when the client asked for base64


class _EmbeddingList(_Lenient):
    data: list[_Embedding]


class _ResponseObject(_Lenient):
    """A Responses API object: an id and its output items."""

    id: str
    output: list[dict[str, Any]]


class _StreamChunk(_Lenient):
    """The first event of a chat or legacy completions stream: a chunk with its choices (maybe none yet)."""

    choices: list[dict[str, Any]]


class _StreamEvent(_Lenient):
    """The first event of a Responses stream: a typed event."""

    type: str


# Per endpoint: what its whole reply and its stream's first event must be, and what the reply is called.
_WHOLE: dict[Endpoint, type[_Lenient]] = {"chat": ChatCompletion, "completions": _TextCompletion,
                                          "embeddings": _EmbeddingList, "responses": _ResponseObject}
_FIRST_EVENT: dict[Endpoint, type[_Lenient]] = {"chat": _StreamChunk, "completions": _StreamChunk,
                                                "embeddings": _StreamChunk, "responses": _StreamEvent}
_NAMES: dict[Endpoint, str] = {"chat": "chat completion", "completions": "text completion",
                               "embeddings": "embedding list", "responses": "Responses object"}


def check_reply(data: dict[str, Any], endpoint: Endpoint) -> None:
    """``MalformedReply`` unless ``data`` has the shape of a whole reply of ``endpoint``."""
    try:
        _WHOLE[endpoint].model_validate(data)
    except ValidationError as exc:
        raise MalformedReply(_describe(exc, _NAMES[endpoint])) from exc


def first_event_data(buffer: bytes) -> bytes | None:
    """The data of the first complete SSE event in ``buffer`` that carries data; None while there is none yet.

    Lines end at CRLF, LF or a lone CR, as a client's SSE reader ends them.
    Comment-only events (``: ping``) carry none and are passed over, as that
    reader passes over them; several ``data:`` lines are joined as it joins them.
    """
    events = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n\n")
    for event in events[:-1]:  # the last is not known to be complete yet
        data = [line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")]
        if data:
            return b"\n".join(data)
    return None


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
