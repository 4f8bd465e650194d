"""The SSE tap re-frames events exactly and collects the answer, whatever the chunk boundaries."""

from __future__ import annotations

import orjson

from proxy.sse import SseTap
from proxy.trust import Answer


def event(payload: dict[str, object]) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


STREAM = b"".join([
    event({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
    event({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "Par"},
                                                  "logprobs": {"content": [{"token": "Par", "logprob": -0.5}]}}]}),
    event({"id": "c1", "model": "m", "choices": [{"index": 1, "delta": {"content": "other choice"}}]}),
    event({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "is"}}]}),
    b": keep-alive comment\n\n",
    b"data: [DONE]\n\n",
])


def test_events_survive_any_split_and_done_is_held_back() -> None:
    for size in (1, 7, 64, len(STREAM)):
        tap = SseTap()
        out = b"".join(e for i in range(0, len(STREAM), size) for e in tap.feed(STREAM[i:i + size]))
        assert out == STREAM.removesuffix(b"data: [DONE]\n\n")
        assert tap.done and tap.rest() == b""
        answer = tap.answer()
        assert answer == Answer(text="Paris", has_tool_calls=False, logprobs=[-0.5], completion_id="c1")
        assert (tap.completion_id, tap.model) == ("c1", "m")


def test_crlf_framing_and_tool_calls() -> None:
    tap = SseTap()
    raw = event({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0}]}}]}).replace(b"\n", b"\r\n")
    assert len(list(tap.feed(raw))) == 1
    assert tap.answer().has_tool_calls


def test_a_malformed_chunk_is_forwarded_and_skipped() -> None:
    tap = SseTap()
    bad = [event({"id": "c1", "choices": [{"index": 0, "delta": "str"}]}),
           event({"choices": [{"index": 0, "delta": {"content": 7}}]}), event({"choices": "x"}),
           b"data: [1, 2]\n\n", b"data: {not json\n\n", b"event: ping\ndata: {}\n\n"]
    raw = STREAM.replace(b"data: [DONE]\n\n", b"".join(bad) + b"data: [DONE]\n\n")
    assert b"".join(tap.feed(raw)) == raw.removesuffix(b"data: [DONE]\n\n")
    assert tap.answer().text == "Paris" and tap.done
