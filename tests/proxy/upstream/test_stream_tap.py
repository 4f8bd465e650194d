"""The SSE tap re-frames events exactly and collects the answer, whatever the chunk boundaries; it holds the
stream's end back and puts the trust object on the upstream's final chunk."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import orjson
import pytest

from proxy.base.errors import UpstreamError
from proxy.endpoints.pipeline import _plain_stream
from proxy.server.event_stream import FinalEvents
from proxy.upstream.completion import UpstreamStream
from proxy.upstream.replies import Answer
from proxy.upstream.taps import ChatTap as SseTap
from scoring.types import ComponentResult, TrustRecord

pytestmark = pytest.mark.unit


def event(payload: dict[str, object]) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


STREAM = b"".join(
    [
        event({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
        event(
            {
                "id": "c1",
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "delta": {"content": "Par"},
                        "logprobs": {"content": [{"token": "Par", "logprob": -0.5}]},
                    }
                ],
            }
        ),
        event({"id": "c1", "model": "m", "choices": [{"index": 1, "delta": {"content": "other choice"}}]}),
        event({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "is"}}]}),
        b": keep-alive comment\n\n",
        b"data: [DONE]\n\n",
    ]
)


def test_events_survive_any_split_and_done_is_held_back() -> None:
    for size in (1, 7, 64, len(STREAM)):
        tap = SseTap()
        out = b"".join(e for i in range(0, len(STREAM), size) for e in tap.feed(STREAM[i : i + size]))
        assert out == STREAM.removesuffix(b"data: [DONE]\n\n")
        assert tap.done and tap.rest() == b""
        answer = tap.answer()
        assert answer == Answer(text="Paris", has_tool_calls=False, logprobs=[-0.5], completion_id="c1")
        assert (tap.completion_id, tap.model) == ("c1", "m")


def test_an_unscored_tap_sends_the_same_stream_holding_back_only_done_and_keeps_no_answer() -> None:
    usage = event(
        {
            "id": "c1",
            "model": "m",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
    )
    stream = STREAM.replace(b"data: [DONE]", usage + b"data: [DONE]")
    scored, unscored = SseTap(), SseTap().unscored()
    as_fed = b"".join(unscored.feed(stream))
    assert as_fed == stream.removesuffix(b"data: [DONE]\n\n")  # the final chunk is not held: no trust rides on it
    assert as_fed + unscored.closing(None) == b"".join(scored.feed(stream)) + scored.closing(None) == stream
    assert scored.answer().text == "Paris" and unscored.answer() == Answer(text="", completion_id="c1")
    assert (unscored.completion_id, unscored.model, unscored.usage) == ("c1", "m", scored.usage)
    assert unscored.usage is not None and unscored.usage.total == 5


def test_an_unscored_tap_reads_and_strips_the_same_whatever_the_pieces() -> None:
    """Pieces with nothing in them for an unscored tap go on whole; one with the usage, an upstream's trust data
    or ``[DONE]`` in it, wherever the piece boundaries fall, is still read, stripped and held as event by event."""
    hostile = event(
        {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "!"}}], "trust": {"score": 1.0}}
    )
    for usage in (USAGE, b""):
        stream = STREAM.replace(b"data: [DONE]", hostile + usage + b"data: [DONE]")
        expected = stream.replace(hostile, hostile.replace(b',"trust":{"score":1.0}', b"")).removesuffix(
            b"data: [DONE]\n\n"
        )
        for at in range(1, len(stream)):
            tap = SseTap().unscored()
            out = b"".join([*tap.feed(stream[:at]), *tap.feed(stream[at:])])
            assert out == expected, at
            assert tap.done and tap.completion_id == "c1", at
            assert (tap.usage.total if tap.usage is not None else None) == (5 if usage else None), at
            assert tap.closing(None) == b"data: [DONE]\n\n"


def test_an_unscored_tap_sends_the_events_of_one_read_as_one_piece() -> None:
    tap = SseTap().unscored()
    first, *rest = [e + b"\n\n" for e in STREAM.split(b"\n\n")[:-2]]
    assert list(tap.feed(first)) == [first]
    assert list(tap.feed(b"".join(rest))) == [b"".join(rest)]  # one write to the client, not one per event
    assert list(tap.feed(b"data: [DONE]\n\n")) == [] and tap.done
    at_the_end = SseTap().unscored()
    assert list(at_the_end.feed(first)) == [first]
    assert list(at_the_end.feed(b"".join(rest) + b"data: [DONE]\n\n")) == [b"".join(rest)] and at_the_end.done
    mid_piece = SseTap().unscored()  # [DONE] with an event after it: each event read, [DONE] still held back
    assert b"".join(mid_piece.feed(first + b"data: [DONE]\n\n" + rest[0])) == first + rest[0] and mid_piece.done


def test_crlf_framing_and_tool_calls() -> None:
    tap = SseTap()
    raw = event({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0}]}}]}).replace(b"\n", b"\r\n")
    assert len(list(tap.feed(raw))) == 1
    assert tap.answer().has_tool_calls


def test_a_malformed_chunk_is_forwarded_and_skipped() -> None:
    tap = SseTap()
    bad = [
        event({"id": "c1", "choices": [{"index": 0, "delta": "str"}]}),
        event({"choices": [{"index": 0, "delta": {"content": 7}}]}),
        event({"choices": "x"}),
        b"data: [1, 2]\n\n",
        b"data: {not json\n\n",
        b"event: ping\ndata: {}\n\n",
    ]
    raw = STREAM.replace(b"data: [DONE]\n\n", b"".join(bad) + b"data: [DONE]\n\n")
    assert b"".join(tap.feed(raw)) == raw.removesuffix(b"data: [DONE]\n\n")
    assert tap.answer().text == "Paris" and tap.done


FINISH = event({"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
USAGE = event(
    {"id": "c1", "model": "m", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}
)


def scored_record() -> TrustRecord:
    return TrustRecord(
        id="trust-1",
        status="done",
        model="m",
        score=0.7,
        label="uncertain",
        components={"bc": ComponentResult(component="bc", value=0.7)},
    )


def payloads(raw: bytes) -> list[dict[str, object]]:
    return [orjson.loads(line[6:]) for line in raw.split(b"\n") if line.startswith(b"data: {")]


def test_the_final_chunk_and_what_follows_it_are_held_and_carry_the_trust() -> None:
    """include_usage: OpenAI's usage chunk (empty choices) follows the final chunk; it stays the upstream's."""
    raw = STREAM.replace(b"data: [DONE]\n\n", FINISH + USAGE + b"data: [DONE]\n\n")
    tap = SseTap()
    passed = b"".join(tap.feed(raw))
    assert passed == STREAM.removesuffix(b"data: [DONE]\n\n")  # everything before the final chunk, as sent
    assert tap.usage is not None and tap.usage.total == 5
    closing = tap.closing(scored_record())
    assert closing.endswith(b"data: [DONE]\n\n")
    final, usage = payloads(closing)
    assert final["trust"] == {
        "id": "trust-1",
        "status": "done",
        "score": 0.7,
        "label": "uncertain",
        "probability": None,
        "components": {"bc": 0.7},
    }
    assert final["choices"] == [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    assert usage == orjson.loads(USAGE[6:]) and "trust" not in usage  # the upstream's, untouched


def test_without_trust_the_held_end_goes_out_as_it_came() -> None:
    raw = STREAM.replace(b"data: [DONE]\n\n", FINISH + USAGE + b"data: [DONE]\n\n")
    tap = SseTap()
    assert b"".join(tap.feed(raw)) + tap.closing(None) == raw


def test_a_stream_without_a_final_chunk_gets_a_trust_chunk_with_one_empty_choice() -> None:
    tap = SseTap()
    list(tap.feed(STREAM))
    closing = tap.closing(scored_record())
    (stand_in,) = payloads(closing)
    assert stand_in["choices"] == [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": None}]
    assert stand_in["trust"]["id"] == "trust-1" and stand_in["id"] == "c1"  # type: ignore[index]
    assert closing.endswith(b"data: [DONE]\n\n")


def plain_stream(reads: list[bytes], *, breaks: bool = False) -> list[bytes]:
    """The pieces an unscored stream writes to the client for an upstream whose bytes arrive in ``reads``;
    ``breaks``: the upstream's connection fails after them (the error is appended as ``b"<error>"``)."""

    async def chunks() -> AsyncIterator[bytes]:
        for read in reads:
            yield read
        if breaks:
            raise UpstreamError("the upstream dropped the connection", code="upstream_unreachable")

    async def nothing() -> None:
        return None

    async def written() -> list[bytes]:
        pieces: list[bytes] = []
        try:
            async for piece in _plain_stream(UpstreamStream(chunks(), nothing, "m"), SseTap().unscored()):
                pieces.append(piece)
        except UpstreamError:
            pieces.append(b"<error>")
        return pieces

    return asyncio.run(written())


def test_the_events_that_came_with_done_go_out_with_it_once_the_upstream_closed() -> None:
    """One write for the upstream's last read and the stream's end, where there were two (BENCHMARKS.md)."""
    first, last = STREAM[: STREAM.index(b"data: ", 10)], STREAM[STREAM.index(b"data: ", 10) :]
    pieces = plain_stream([first, last])
    assert pieces == [first, last] and isinstance(pieces[-1], FinalEvents)
    whole = plain_stream([STREAM])
    assert whole == [STREAM] and isinstance(whole[0], FinalEvents)
    done_alone = plain_stream([STREAM[: -len(b"data: [DONE]\n\n")], b"data: [DONE]\n\n"])
    assert done_alone == [STREAM[: -len(b"data: [DONE]\n\n")], b"data: [DONE]\n\n"]


def test_the_events_that_came_with_done_still_go_out_before_the_error_when_the_upstream_breaks() -> None:
    pieces = plain_stream([STREAM], breaks=True)
    assert pieces == [STREAM[: -len(b"data: [DONE]\n\n")], b"<error>"]  # the events, no [DONE], the error
