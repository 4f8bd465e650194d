"""An ``Ask`` over ``proxy.upstream.client.UpstreamClient`` and scripted MCQ answerers for the fake upstream.

``ClientAsk`` is the thin adapter the tests (and the benchmark) use; the gateway
binds its own to the deployment that answered. ``Answerer`` plays a model: it
reads the options of the last question in the prompt and picks the original's
letter or another one, following a script.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from proxy import settings_from_dict
from proxy.base.errors import GatewayError
from proxy.upstream.client import UpstreamClient
from scoring.types import Reply, UpstreamFailure
from tests.conftest import gateway_config
from tests.fake_upstream import last_user_text

_OPTION = re.compile(r"^([A-E])\) (.*)$")


def reply_from_data(data: dict[str, Any]) -> Reply:
    choice = (data.get("choices") or [{}])[0]
    text = str((choice.get("message") or {}).get("content") or "")
    entries = (choice.get("logprobs") or {}).get("content")
    if not entries:
        return Reply(text=text)
    return Reply(
        text=text,
        top_logprobs=[{alt["token"]: float(alt["logprob"]) for alt in entry["top_logprobs"]} for entry in entries],
    )


class ClientAsk:
    """Ask one model group of an UpstreamClient; counts calls and the most ever in flight."""

    def __init__(self, upstream: UpstreamClient, group: str) -> None:
        self._upstream, self._group = upstream, group
        self.calls = self.in_flight = self.most_in_flight = 0

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int = 16,
        temperature: float = 0.0,
        logprobs: bool = False,
        top_logprobs: int | None = None,
    ) -> Reply:
        body: dict[str, Any] = {"messages": messages, "max_tokens": max_tokens, "temperature": temperature}
        if logprobs:
            body.update(logprobs=True, top_logprobs=top_logprobs or 5)
        self.calls += 1
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            completion = await self._upstream.complete(self._group, body)
        except GatewayError as exc:  # the Ask contract: scoring sees an UpstreamFailure
            raise UpstreamFailure(str(exc)) from exc
        finally:
            self.in_flight -= 1
        return reply_from_data(completion.data)


@contextlib.asynccontextmanager
async def upstream_ask(url: str) -> AsyncIterator[ClientAsk]:
    """An Ask bound to model group ``fake`` of a gateway config pointing at ``url``."""
    async with httpx.AsyncClient() as http:
        upstream = UpstreamClient(settings_from_dict(gateway_config(url)), http)
        try:
            yield ClientAsk(upstream, "fake")
        finally:
            await upstream.aclose()


def shown_options(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Letter -> option text of the last question in the prompt."""
    last = last_user_text(messages).rsplit("Question:", 1)[-1]
    return {m.group(1): m.group(2) for m in map(_OPTION.match, last.splitlines()) if m}


class Answerer:
    """A scripted model: ``plan(call_number)`` says what the n-th check answers.

    Plans return "original", "other", "none" or any other string, sent verbatim;
    ``form`` turns a chosen letter and its option into the reply text.
    """

    def __init__(
        self, answer: str, plan: Callable[[int], str], form: Callable[[str, str], str] = lambda letter, text: letter
    ) -> None:
        self.answer, self.plan, self.form = answer, plan, form
        self.count = 0

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        options = shown_options(messages)
        step, self.count = self.plan(self.count), self.count + 1
        original = next(letter for letter, text in options.items() if text == self.answer)
        if step == "original":
            return self.form(original, options[original])
        if step == "none":
            return self.form(max(options), options[max(options)])
        if step == "other":
            other = next(letter for letter in sorted(options) if letter not in (original, max(options)))
            return self.form(other, options[other])
        return step
