"""The answer's log-probabilities for the ``lp`` component, asked on the user's own call and hidden again.

Scoring the answer's token log-probabilities costs no extra upstream call only
if the user's call returns them. When the request is scored and the client did
not ask for them, the gateway asks upstream in the endpoint's own words and
takes them out of the response (non-streamed body and each streamed event)
before the client sees it, so the client gets what it asked for:

* chat completions: ``logprobs: true``; each choice's ``logprobs`` back to null.
  Some servers (llama.cpp's) return none for ``logprobs: true`` alone: the
  upstream client learns per deployment that it must also send
  ``top_logprobs: 1`` (``LogprobAsking``), and a client that asked for
  ``logprobs`` but no alternatives gets each token's ``top_logprobs`` emptied
  again, as OpenAI sends them when none were asked;
* legacy completions: ``logprobs: 1`` (the sampled token's, plus one
  alternative: some servers return nothing for 0); each choice's ``logprobs``
  back to null. Not with ``echo``, whose log-probabilities would mix the
  prompt's tokens into the answer's;
* the Responses API: ``include: ["message.output_text.logprobs"]``; every
  ``output_text`` part's and text event's ``logprobs`` back to ``[]``, as
  when none were included.

The strippers read replies through the open models of ``replies`` (each field
they touch typed, every other kept as it came); anything they cannot read is
left as it was: a body that carries no log-probabilities has none to hide.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from ..base.sdk_params import Endpoint
from .replies import OpenChoiceLogprobs, OpenChoices, OpenResponsesPayload, OpenTokenLogprob
from .sse import rewritten

__all__ = ["RESPONSES_LOGPROBS", "LogprobAsking", "LogprobsAdded", "ask_for_logprobs"]

log = logging.getLogger("trustgate.logprobs")

RESPONSES_LOGPROBS = "message.output_text.logprobs"  # the Responses API's `include` entry for them
# Responses payloads that carry an answer text's log-probabilities: the part, and the text events.
_RESPONSES_CARRIERS = frozenset({"output_text", "response.output_text.delta", "response.output_text.done"})


@dataclass(frozen=True)
class LogprobsAdded:
    """The gateway asked for log-probabilities the client did not: take them out of what goes back."""

    endpoint: Endpoint
    # True: the client asked for the tokens' log-probabilities but not their alternatives (chat only), so
    # only the alternatives the gateway's ``top_logprobs`` brought go; False: every log-probability goes.
    alternatives_only: bool = False

    def body(self, raw: bytes) -> bytes:
        """A non-streamed reply without the log-probabilities."""
        try:
            payload = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
        hidden = self._hidden(payload)
        return orjson.dumps(hidden) if hidden is not None else raw

    def event(self, event: bytes) -> bytes:
        """One SSE event (its ``data:`` lines) without the log-probabilities."""
        return rewritten(event, self._hidden)

    def _hidden(self, payload: Any) -> dict[str, Any] | None:
        """``payload`` without the log-probabilities; None when it carries none (or is no reply at all)."""
        if not isinstance(payload, dict):
            return None
        if self.endpoint == "responses":
            return _without_responses_logprobs(OpenResponsesPayload.model_validate(payload))
        choices = OpenChoices.model_validate(payload)
        if self.alternatives_only:
            return _without_alternatives(choices)
        return _without_choice_logprobs(choices)


def ask_for_logprobs(
    body: dict[str, Any], endpoint: Endpoint, *, wanted: bool = True
) -> tuple[dict[str, Any], LogprobsAdded | None]:
    """``body`` asking for the answer's log-probabilities (when ``wanted``), and what to strip from the reply
    (None: nothing).

    A client that asked for them itself gets them as it asked; one that asked
    for a chat answer's ``logprobs`` without ``top_logprobs`` gets no
    alternatives, whether or not the gateway had to ask for one
    (``LogprobAsking``). An endpoint without log-probabilities (embeddings) is
    left alone.
    """
    if endpoint == "chat":
        if body.get("logprobs") is True:
            return body, LogprobsAdded(endpoint, alternatives_only=True) if body.get("top_logprobs") is None else None
        if not wanted:
            return body, None
        return {**body, "logprobs": True}, LogprobsAdded(endpoint)
    if not wanted:
        return body, None
    if endpoint == "completions":
        if body.get("logprobs") is not None or body.get("echo"):
            return body, None
        return {**body, "logprobs": 1}, LogprobsAdded(endpoint)
    if endpoint == "responses":
        include = body.get("include")
        include = list(include) if isinstance(include, list) else []
        if RESPONSES_LOGPROBS in include:
            return body, None
        return {**body, "include": [*include, RESPONSES_LOGPROBS]}, LogprobsAdded(endpoint)
    return body, None


# A deployment: (api_base, the model name its server expects); behind litellm (None, the model group).
Where = tuple[str | None, str]


class LogprobAsking:
    """Per deployment, how a chat call gets the answer's log-probabilities: ``logprobs: true`` alone, or with
    ``top_logprobs: 1`` for a server that returns none without it (llama.cpp's).

    Learnt from replies: a deployment that answered a ``logprobs: true`` call
    with text but no log-probabilities gets ``top_logprobs: 1`` from then on
    (as a deployment without ``/responses`` is remembered by the upstream
    client). ``needs_top`` seeds deployments known in advance: the embedded
    llama.cpp server, so that its first scored answer already has them.
    """

    def __init__(self, needs_top: Iterable[Where] = ()) -> None:
        self._needs_top: set[Where] = set(needs_top)
        self._plain_works: set[Where] = set()  # returned them for logprobs: true alone: no reply need be watched

    def body_for(self, where: Where, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` as this deployment needs it to return the log-probabilities it asks for."""
        if where in self._needs_top and _asks_tokens_only(body):
            return {**body, "top_logprobs": 1}
        return body

    def learning(self, where: Where, body: dict[str, Any]) -> bool:
        """Whether a reply to ``body`` from this deployment could teach anything (else nobody need watch it)."""
        return where not in self._needs_top and where not in self._plain_works and _asks_tokens_only(body)

    def observe(self, where: Where, body: dict[str, Any], *, text: bool, logprobs: bool) -> None:
        """A reply to ``body``: one with answer text but no log-probabilities means ``top_logprobs`` is needed."""
        if not self.learning(where, body):
            return
        if logprobs:
            self._plain_works.add(where)
        elif text:
            self._needs_top.add(where)
            log.info(
                "deployment %s (%s) returned no log-probabilities for logprobs: true; asking with "
                "top_logprobs: 1 from now on",
                where[1],
                where[0],
            )


def _asks_tokens_only(body: dict[str, Any]) -> bool:
    return body.get("logprobs") is True and body.get("top_logprobs") is None


def _without_alternatives(reply: OpenChoices) -> dict[str, Any] | None:
    """Each token's ``top_logprobs`` emptied in every choice (a message's or a chunk's), as when none were asked."""
    entries = [
        entry
        for choice in reply.readable_choices()
        if isinstance(choice.logprobs, OpenChoiceLogprobs) and isinstance(choice.logprobs.content, list)
        for entry in choice.logprobs.content
        if isinstance(entry, OpenTokenLogprob) and entry.top_logprobs
    ]
    for entry in entries:
        entry.top_logprobs = []
    return reply.dump() if entries else None


def _without_choice_logprobs(reply: OpenChoices) -> dict[str, Any] | None:
    """Every choice's ``logprobs`` set to null, as when none were asked."""
    carriers = [choice for choice in reply.readable_choices() if choice.logprobs is not None]
    for choice in carriers:
        choice.logprobs = None
    return reply.dump() if carriers else None


def _without_responses_logprobs(payload: OpenResponsesPayload) -> dict[str, Any] | None:
    """The ``logprobs`` of every output text part and text event emptied.

    A response object holds them in ``output[].content[]``, a ``response.*``
    event in its response's, an item event in ``item.content[]``, a part event
    in ``part``, a text event at its top.
    """
    carriers = [text for text in payload.texts() if text.type in _RESPONSES_CARRIERS and text.logprobs]
    for text in carriers:
        text.logprobs = []
    return payload.dump() if carriers else None
