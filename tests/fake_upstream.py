"""A deterministic OpenAI-compatible upstream, served for real over loopback.

Tests (and the benchmarks) talk to it through sockets exactly as the gateway
talks to a real provider. Its answer is chosen by ``responder(messages)``
(default: an echo); directives in the last user message make it misbehave:

    [fail:503]      answer with that HTTP status and an OpenAI error body (naming a server file path,
                    as a local server's traceback would)
    [stall:2.5]     wait that many seconds before answering (a client leaving is counted in ``disconnects``)
    [stall-stream]  stream one chunk, then hang until the client goes away
    [reset-stream]  stream one chunk, then drop the connection mid-body
    [done-then-reset]  stream one chunk and ``data: [DONE]``, then drop the connection
                    (what llama.cpp's server does to a request it interrupts)
    [delay-ms:15]   answer after that many milliseconds (instead of ``delay_ms`` ± ``delay_jitter_ms``)
    [reply:html]    answer 200 with a body that is not a chat completion: html, truncated, array, empty,
                    no-message (a choice without its message)
    [drip:0.2]      send a valid completion one byte every that many seconds (streamed: the first event at
                    once, then the rest one byte at a time)
    [big:5000000]   answer with a completion whose text is that many bytes (streamed: that many bytes of chunks)
    [unsized]       send a non-streamed answer in 64 KiB pieces without a Content-Length (chunked encoding);
                    [unsized:gzip] gzip-compressed first when the request accepts gzip
    [reset]         send half of the body, then drop the connection
    [bad-chunk]     stream a chunk whose ``delta`` is a string among the good ones ([bad-chunk:not-json]: an
                    event whose data is not JSON)
    [tool-call]     answer (not streamed) with a call of a ``lookup`` tool instead of text; [tool-call:answer]: the
                    text as the call's argument ``answer``, no content; [tool-call:beside]: the text as content,
                    the call beside it (``calls_tools``: a call beside the responder's text, for the
                    conversations it says yes to)
    [too-long:gpt-4o-mini]  refuse (400) a request for that model as too long for its context window
    [filtered:gpt-4o-mini]  refuse (400) a request for that model by its content policy

Besides chat completions it serves ``/v1/completions``, ``/v1/embeddings`` and
``/v1/responses`` (stream and not; ``responses_supported=False`` makes the last
a 404, as on servers that only speak chat completions). ``rate_limited`` answers
that many requests with 429 (and ``retry_after`` as its ``Retry-After``) first.

Every request is recorded (headers and body) so tests can assert what the
gateway forwarded.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import itertools
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

Responder = Callable[[list[dict[str, Any]]], str]


def never(messages: list[dict[str, Any]]) -> bool:
    return False


_DIRECTIVE = re.compile(
    r"\[(fail|stall|stall-stream|reset-stream|done-then-reset|delay-ms|reply|drip|big|reset"
    r"|bad-chunk|unsized|tool-call|too-long|filtered)(?::([\w.-]+))?\]"
)
SERVER_PATH = "/opt/fake-upstream/models/server_internal.py"

# 200 bodies that are not chat completions, by name.
NOT_A_COMPLETION = {
    "html": b"<html><body>502 Bad Gateway</body></html>",
    "truncated": b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "mess',
    "array": b"[1, 2, 3]",
    "empty": b"",
    "no-message": b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0}]}',
}


# A provider's own wording of the refusals that LiteLLM's context-window and content-policy fallbacks are for.
_REFUSALS = {
    "too-long": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
    "filtered": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.",
}


def echo(messages: list[dict[str, Any]]) -> str:
    return f"You said: {last_user_text(messages)}"


def last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def token_logprobs(text: str, top: int) -> list[dict[str, Any]]:
    """Deterministic per-word log-probabilities, with ``top`` alternatives each."""
    entries = []
    for index, token in enumerate(text.split(" ")):
        logprob = -0.05 * (index % 7)
        alternatives = [{"token": token, "logprob": logprob, "bytes": list(token.encode())}]
        alternatives += [
            {"token": f"alt{k}", "logprob": logprob - 1.0 - k, "bytes": list(f"alt{k}".encode())}
            for k in range(max(top - 1, 0))
        ]
        entries.append(
            {"token": token, "logprob": logprob, "bytes": list(token.encode()), "top_logprobs": alternatives[:top]}
        )
    return entries


@dataclass
class FakeUpstream:
    responder: Responder = echo
    api_key: str | None = None
    model: str = "fake-model"
    requests: list[dict[str, Any]] = field(default_factory=list)
    answered: list[dict[str, Any]] = field(default_factory=list)  # the non-streamed chat completions sent back
    headers: list[dict[str, str]] = field(default_factory=list)
    stream_disconnects: int = 0
    model_listings: int = 0  # GET /v1/models calls (the gateway's readiness probes)
    disconnects: int = 0  # non-streamed requests whose client left while the fake was still working
    record: bool = True
    delay_ms: float = 0.0  # added to every answer: a stand-in for model time in benchmarks
    # Each answer's delay drawn uniformly this far either side of delay_ms: a model's answer time varies,
    # and a constant one keeps a benchmark's closed loop of clients in lockstep (BENCHMARKS.md).
    delay_jitter_ms: float = 0.0
    jitter_draws: random.Random = field(default_factory=lambda: random.Random(0), repr=False)  # seeded: runs repeat
    token_ms: float = 0.0  # paused after each streamed word: a stand-in for generation time in benchmarks
    without_logprobs: bool = False  # an upstream that ignores `logprobs` (returns none)
    logprobs_need_top: bool = False  # as llama.cpp's server: chat `logprobs: true` alone returns none
    responses_supported: bool = True
    rate_limited: int = 0  # the next this many requests get 429
    retry_after: str | None = None  # the Retry-After header of those 429s
    # Whether a (non-streamed) chat answer calls a tool beside the responder's text (none when the text is empty).
    calls_tools: Callable[[list[dict[str, Any]]], bool] = never

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/v1/completions", self._text_completion, methods=["POST"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/responses", self._responses, methods=["POST"]),
            ]
        )

    async def _models(self, request: Request) -> Response:
        self.model_listings += 1
        return _json(
            {"object": "list", "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "fake"}]}
        )

    async def _chat(self, request: Request) -> Response:
        body = orjson.loads(await request.body())
        if self.record:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return _error(401, "Incorrect API key provided: " + request.headers.get("authorization", ""))
        if (throttled := self._throttled()) is not None:
            return throttled
        messages = body.get("messages", [])
        directives = dict(_DIRECTIVE.findall(last_user_text(messages)))
        if "fail" in directives:
            return _error(
                int(float(directives["fail"])), f"fake upstream failure {directives['fail']} in {SERVER_PATH} line 42"
            )
        if (
            refusal := _REFUSALS.get(
                next((d for d in ("too-long", "filtered") if directives.get(d) == body.get("model")), "")
            )
        ) is not None:
            return _error(400, refusal)
        if "reply" in directives:
            return Response(NOT_A_COMPLETION[directives["reply"]], media_type="application/json")
        if "stall" in directives and not await self._wait_unless_client_leaves(request, float(directives["stall"])):
            return Response(status_code=204)
        delay_ms = float(directives.get("delay-ms") or self.next_delay_ms())
        if delay_ms:
            await asyncio.sleep(delay_ms / 1000)
        text = self.responder(messages)
        if "big" in directives:
            text = " ".join(str(n).rjust(999, "x") for n in range(max(int(directives["big"]) // 1000, 1)))
        top = int(body.get("top_logprobs") or 1)
        gives = (
            body.get("logprobs")
            and not self.without_logprobs
            and not (self.logprobs_need_top and body.get("top_logprobs") is None)
        )
        logprobs = {"content": token_logprobs(text, top)} if gives else None
        if body.get("stream"):
            stream = self._stream(
                body, text, logprobs, "stall-stream" in directives, bad_chunk=directives.get("bad-chunk")
            )
            if "reset-stream" in directives or "done-then-reset" in directives:
                stream = _cut(stream, done_first="done-then-reset" in directives)
            if "drip" in directives:
                stream = _drip_after_first(stream, float(directives["drip"]))
            return StreamingResponse(stream, media_type="text/event-stream")
        completion = self._completion(body, text, logprobs)
        how = directives.get("tool-call")
        if how is not None or self.calls_tools(messages):
            arguments = orjson.dumps({"answer": text}).decode() if how == "answer" else "{}"
            for choice in completion["choices"]:
                choice["finish_reason"] = "tool_calls"
                choice["message"] = {
                    "role": "assistant",
                    "content": (text if how == "beside" else None) if how is not None else text or None,
                    "tool_calls": [
                        {"id": "call-1", "type": "function", "function": {"name": "lookup", "arguments": arguments}}
                    ],
                }
        if self.record:
            self.answered.append(completion)
        payload = orjson.dumps(completion)
        if "drip" in directives:
            return StreamingResponse(_drip(payload, float(directives["drip"])), media_type="application/json")
        if "unsized" in directives:
            headers = {}
            if directives["unsized"] == "gzip" and "gzip" in request.headers.get("accept-encoding", ""):
                payload, headers["content-encoding"] = gzip.compress(payload), "gzip"
            return StreamingResponse(_pieces(payload, 64 * 1024), media_type="application/json", headers=headers)
        if "reset" in directives:
            return StreamingResponse(
                _reset_halfway(payload), media_type="application/json", headers={"content-length": str(len(payload))}
            )
        return Response(payload, media_type="application/json")

    async def _wait_unless_client_leaves(self, request: Request, seconds: float) -> bool:
        """Sleep ``seconds``; False (and counted) as soon as the client disconnects."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if await request.is_disconnected():
                self.disconnects += 1
                return False
            await asyncio.sleep(0.02)
        return True

    def next_delay_ms(self) -> float:
        """The next answer's delay: ``delay_ms``, or a seeded draw within ``delay_jitter_ms`` of it."""
        if not self.delay_jitter_ms:
            return self.delay_ms
        return max(self.delay_ms + self.jitter_draws.uniform(-self.delay_jitter_ms, self.delay_jitter_ms), 0.0)

    def _completion(self, body: dict[str, Any], text: str, logprobs: dict[str, Any] | None) -> dict[str, Any]:
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        choices = [
            {
                "index": i,
                "message": {"role": "assistant", "content": text},
                "logprobs": logprobs,
                "finish_reason": "stop",
            }
            for i in range(int(body.get("n") or 1))
        ]
        return {
            "id": f"chatcmpl-fake-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(text.split()),
                "total_tokens": prompt_tokens + len(text.split()),
            },
        }

    async def _stream(
        self,
        body: dict[str, Any],
        text: str,
        logprobs: dict[str, Any] | None,
        stall: bool,  # type: ignore[no-untyped-def]
        *,
        bad_chunk: str | None = None,
    ):
        base = {
            "id": "chatcmpl-fake-stream",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", self.model),
        }
        words = text.split(" ")
        try:
            yield _sse(
                {
                    **base,
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
                }
            )
            for index, word in enumerate(words):
                piece = word if index == 0 else " " + word
                choice: dict[str, Any] = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
                if logprobs:
                    choice["logprobs"] = {"content": [logprobs["content"][index]]}
                yield _sse({**base, "choices": [choice]})
                if self.token_ms:
                    await asyncio.sleep(self.token_ms / 1000)
                if bad_chunk is not None and index == 0:
                    yield (
                        b"data: {not json\n\n"
                        if bad_chunk == "not-json"
                        else _sse({**base, "choices": [{"index": 0, "delta": "str", "finish_reason": None}]})
                    )
                if stall:
                    await asyncio.sleep(3600)
            yield _sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            if (body.get("stream_options") or {}).get("include_usage"):
                yield _sse(
                    {
                        **base,
                        "choices": [],
                        "usage": {"prompt_tokens": 1, "completion_tokens": len(words), "total_tokens": 1 + len(words)},
                    }
                )
            yield b"data: [DONE]\n\n"
        except asyncio.CancelledError:
            self.stream_disconnects += 1
            raise

    def _throttled(self) -> Response | None:
        if self.rate_limited <= 0:
            return None
        self.rate_limited -= 1
        response = _error(429, "fake upstream rate limit")
        if self.retry_after is not None:
            response.headers["retry-after"] = self.retry_after
        return response

    async def _recorded_body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = orjson.loads(await request.body())
        if self.record:
            self.requests.append(body)
            self.headers.append(dict(request.headers))
        return body

    async def _text_completion(self, request: Request) -> Response:
        body = await self._recorded_body(request)
        if (throttled := self._throttled()) is not None:
            return throttled
        prompt = body.get("prompt")
        text = self.responder([{"role": "user", "content": prompt if isinstance(prompt, str) else str(prompt)}])
        base = {
            "id": "cmpl-fake",
            "object": "text_completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
        }
        asked = body.get("logprobs") is not None and not self.without_logprobs
        entries = token_logprobs(text, int(body.get("logprobs") or 0) + 1) if asked else []
        if body.get("stream"):

            async def chunks():  # type: ignore[no-untyped-def]
                for index, word in enumerate(text.split(" ")):
                    piece = word if index == 0 else " " + word
                    yield _sse(
                        {
                            **base,
                            "choices": [
                                {
                                    "index": 0,
                                    "text": piece,
                                    "logprobs": _text_logprobs(entries[index : index + 1]) if asked else None,
                                    "finish_reason": None,
                                }
                            ],
                        }
                    )
                yield _sse({**base, "choices": [{"index": 0, "text": "", "logprobs": None, "finish_reason": "stop"}]})
                if (body.get("stream_options") or {}).get("include_usage"):
                    words = len(text.split(" "))
                    usage = {"prompt_tokens": 1, "completion_tokens": words, "total_tokens": 1 + words}
                    yield _sse({**base, "choices": [], "usage": usage})
                yield b"data: [DONE]\n\n"

            return StreamingResponse(chunks(), media_type="text/event-stream")
        words = len(text.split())
        return _json(
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "text": text,
                        "logprobs": _text_logprobs(entries) if asked else None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": words, "total_tokens": 1 + words},
            }
        )

    async def _embeddings(self, request: Request) -> Response:
        body = await self._recorded_body(request)
        if (throttled := self._throttled()) is not None:
            return throttled
        inputs = body.get("input")
        inputs = inputs if isinstance(inputs, list) else [inputs]
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(str(text))), 0.5, -0.5]}
            for i, text in enumerate(inputs)
        ]
        return _json(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", self.model),
                "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
            }
        )

    async def _responses(self, request: Request) -> Response:
        body = await self._recorded_body(request)
        if not self.responses_supported:
            return Response(b"Not Found", status_code=404, media_type="text/plain")
        if (throttled := self._throttled()) is not None:
            return throttled
        text = self.responder(_responses_messages(body))
        asked = "message.output_text.logprobs" in (body.get("include") or []) and not self.without_logprobs
        entries = token_logprobs(text, int(body.get("top_logprobs") or 0)) if asked else []
        response = {
            "id": "resp_fake",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": body.get("model", self.model),
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": None,
            "instructions": body.get("instructions"),
            "metadata": {},
            "temperature": None,
            "top_p": None,
        }
        message = {
            "type": "message",
            "id": "msg_fake",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": entries}],
        }
        words = len(text.split())
        done = {
            **response,
            "output": [message],
            "usage": {
                "input_tokens": 1,
                "output_tokens": words,
                "total_tokens": 1 + words,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }
        if not body.get("stream"):
            return _json(done)
        return StreamingResponse(
            _responses_events(response, message, text, done, entries), media_type="text/event-stream"
        )


def _text_logprobs(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Token log-probabilities in the legacy completions' shape (parallel lists)."""
    offsets = list(itertools.accumulate((len(e["token"]) + 1 for e in entries), initial=0))[: len(entries)]
    return {
        "tokens": [e["token"] for e in entries],
        "token_logprobs": [e["logprob"] for e in entries],
        "top_logprobs": [{alt["token"]: alt["logprob"] for alt in e["top_logprobs"]} for e in entries],
        "text_offset": offsets,
    }


def _responses_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("input")
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return [
        {"role": item.get("role"), "content": item.get("content")}
        for item in items or []
        if isinstance(item, dict) and "role" in item
    ]


async def _responses_events(
    response: dict[str, Any],
    message: dict[str, Any],
    text: str,  # type: ignore[no-untyped-def]
    done: dict[str, Any],
    entries: list[dict[str, Any]],
):
    in_progress = {**response, "status": "in_progress"}
    empty_item = {**message, "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": in_progress},
        {"type": "response.in_progress", "response": in_progress},
        {"type": "response.output_item.added", "output_index": 0, "item": empty_item},
        {
            "type": "response.content_part.added",
            "item_id": "msg_fake",
            "output_index": 0,
            "content_index": 0,
            "part": part,
        },
    ]
    for index, word in enumerate(text.split(" ")):
        events.append(
            {
                "type": "response.output_text.delta",
                "item_id": "msg_fake",
                "output_index": 0,
                "content_index": 0,
                "delta": word if index == 0 else " " + word,
                "logprobs": entries[index : index + 1],
            }
        )
    events += [
        {
            "type": "response.output_text.done",
            "item_id": "msg_fake",
            "output_index": 0,
            "content_index": 0,
            "text": text,
            "logprobs": entries,
        },
        {
            "type": "response.content_part.done",
            "item_id": "msg_fake",
            "output_index": 0,
            "content_index": 0,
            "part": {**part, "text": text, "logprobs": entries},
        },
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        {"type": "response.completed", "response": done},
    ]
    for number, event in enumerate(events):
        yield f"event: {event['type']}\n".encode() + _sse({**event, "sequence_number": number})


async def _drip(payload: bytes, every: float):  # type: ignore[no-untyped-def]
    for index in range(len(payload)):
        yield payload[index : index + 1]
        await asyncio.sleep(every)


async def _drip_after_first(stream, every: float):  # type: ignore[no-untyped-def]
    first = True
    async for event in stream:
        if first:
            first = False
            yield event
            continue
        for index in range(len(event)):
            yield event[index : index + 1]
            await asyncio.sleep(every)


async def _pieces(payload: bytes, size: int):  # type: ignore[no-untyped-def]
    for start in range(0, len(payload), size):
        yield payload[start : start + size]


async def _reset_halfway(payload: bytes):  # type: ignore[no-untyped-def]
    yield payload[: len(payload) // 2]
    raise ConnectionResetError("fake upstream drops the connection mid-body")


class _ConnectionCut(Exception):
    """Raised inside a streaming body: uvicorn then drops the connection without ending the body."""


async def _cut(stream, *, done_first: bool):  # type: ignore[no-untyped-def]
    """The stream's first two events (role, first word), optionally ``[DONE]``, then a dropped connection."""
    sent = 0
    async for event in stream:
        yield event
        sent += 1
        if sent == 2:
            break
    if done_first:
        yield b"data: [DONE]\n\n"
    await asyncio.sleep(0.05)  # let the events reach the client before the connection drops
    raise _ConnectionCut


def _sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def _json(payload: dict[str, Any], status: int = 200) -> Response:
    return Response(orjson.dumps(payload), status_code=status, media_type="application/json")


def _error(status: int, message: str) -> Response:
    return _json({"error": {"message": message, "type": "fake_error", "param": None, "code": None}}, status)


def main() -> None:
    """Serve the fake upstream as its own process (used by the benchmarks)."""
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument(
        "--delay-jitter-ms",
        type=float,
        default=0.0,
        help="draw each answer's delay uniformly this far either side of --delay-ms (seeded)",
    )
    parser.add_argument(
        "--reply-words",
        type=int,
        default=0,
        help="cut each echo to this many words, as a model held to a small max_tokens answers (0: the whole echo)",
    )
    parser.add_argument(
        "--http",
        choices=("h11", "httptools"),
        default="h11",
        help="uvicorn's HTTP implementation: the benchmarks' baselines were all taken on h11",
    )
    args = parser.parse_args()
    fake = FakeUpstream(record=False, delay_ms=args.delay_ms, delay_jitter_ms=args.delay_jitter_ms)
    if args.reply_words:
        fake.responder = lambda messages: " ".join(echo(messages).split()[: args.reply_words])
    uvicorn.run(fake.app(), host="127.0.0.1", port=args.port, log_level="warning", access_log=False, http=args.http)


if __name__ == "__main__":
    main()
