"""The two pure parts under the defences against a hostile upstream: bounded decoding, stripping reserved names.

The integration tests (test_hostile_upstream.py) show the gateway's behaviour;
these pin the edge cases a hostile upstream could reach for: a bomb stopped
before it is decoded, raw deflate, and trust data hidden the ways an SSE
reader would still find it.
"""

from __future__ import annotations

import itertools
import tracemalloc
import zlib

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy.upstream.content_decoding import DecodedTooLarge, UnsupportedEncoding, decoder_for
from proxy.upstream.reserved import stripped_event, stripped_reply
from proxy.upstream.sse import EventReader, FirstEventReader, events_in
from proxy.upstream.taps import ChatTap as SseTap
from proxy.upstream.taps import ResponsesTap, TextCompletionTap
from tests.hostile_upstream import bomb

pytestmark = pytest.mark.unit

LIMIT = 1_000_000


@pytest.mark.parametrize("coding", ["zstd", "gzip"])
def test_a_bomb_is_stopped_once_past_the_cap_never_decoded_whole(coding: str) -> None:
    """About 1 GiB (zstd) or 32 MiB (gzip) decoded; the decoder stops at the cap, holding about that much."""
    compressed = bomb(coding)
    decoder = decoder_for(coding, LIMIT)
    produced = 0
    tracemalloc.start()
    try:
        with pytest.raises(DecodedTooLarge):
            for piece in decoder.feed(compressed):
                produced += len(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert produced <= LIMIT
    assert peak < 3 * LIMIT, f"decoding held {peak / 1e6:.1f} MB"


@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("gzip", lambda data: zlib.compress(data, wbits=31)),
        ("deflate", zlib.compress),
        ("deflate", lambda data: zlib.compress(data, wbits=-15)),  # raw deflate, as some servers send it
        ("identity", lambda data: data),
        ("", lambda data: data),
    ],
    ids=["gzip", "deflate", "raw-deflate", "identity", "none"],
)
def test_what_fits_under_the_cap_decodes_to_the_original_in_any_split(coding: str, encode: object) -> None:
    original = orjson.dumps({"choices": [{"message": {"content": "word " * 20_000}}]})
    encoded = encode(original)  # type: ignore[operator]
    decoder = decoder_for(coding, LIMIT)
    pieces = [piece for start in range(0, len(encoded), 777) for piece in decoder.feed(encoded[start : start + 777])]
    assert b"".join([*pieces, *decoder.flush()]) == original


@pytest.mark.parametrize("coding", ["br", "compress", "gzip, zstd", "x-anything"])
def test_other_codings_are_refused(coding: str) -> None:
    with pytest.raises(UnsupportedEncoding):
        decoder_for(coding, LIMIT)


def test_a_reply_without_the_names_is_left_byte_for_byte() -> None:
    raw = b'{"choices": [{"message": {"content": "I trust you"}}],   "trustworthy": 1}'
    assert stripped_reply(raw) is raw


def test_a_top_level_trust_field_is_taken_out_however_it_is_spelled() -> None:
    raw = b'{"choices": [], "tr\\u0075st": {"score": 1}, "nested": {"trust": 2}}'
    assert orjson.loads(stripped_reply(raw)) == {"choices": [], "nested": {"trust": 2}}


@pytest.mark.parametrize(
    "event",
    [
        b'event: trustgate.trust\ndata: {"sequence_number": 3}',
        b"event:trustgate.trust\ndata: {}",
        b'data: {"type": "trustgate.trust", "trust": {"score": 1}}',
        b'data: {"type": "trustgate.tr\\u0075st"}',
    ],
    ids=["named", "named-without-space", "typed", "typed-escaped"],
)
def test_a_trust_event_is_dropped(event: bytes) -> None:
    assert stripped_event(event) is None


def test_a_chunk_loses_its_trust_field_and_keeps_the_rest() -> None:
    kept = stripped_event(b'id: 7\ndata: {"choices": [{"delta": {"content": "hi"}}],\ndata: "trust": {"s": 1}}')
    assert kept is not None and kept.startswith(b"id: 7\ndata: ")
    assert orjson.loads(kept.split(b"data: ", 1)[1]) == {"choices": [{"delta": {"content": "hi"}}]}


def test_events_glued_by_lone_carriage_returns_are_each_judged() -> None:
    """A client's SSE reader ends lines at a lone CR: what the tap frames as one event may be three."""
    glued = b'data: {"choices": []}\r\revent: trustgate.trust\rdata: {}\r\rdata: {"choices": [], "trust": 1}'
    kept = stripped_event(glued)
    assert kept is not None
    events = kept.split(b"\n\n")
    assert [orjson.loads(event.removeprefix(b"data: ")) for event in events] == [{"choices": []}, {"choices": []}]


def test_an_event_without_the_names_is_left_byte_for_byte() -> None:
    event = b'data: {"choices": [{"delta": {"content": "I trust you"}}]}'
    assert stripped_event(event) is event


FIRST_EVENTS = [
    (b': keep-alive\n\ndata: {"choices": []}\n\n', b'{"choices": []}'),
    (b'data: {"choices":\r\ndata: []}\r\n\r\n', b'{"choices":\n[]}'),
    (b'data: {"choices": []}\n\r\n', b'{"choices": []}'),
    (b'data: {"choices": []}\r\r', b'{"choices": []}'),
    (b'data: {"choices": []}\n', None),  # not ended yet
    (b"<html><body>\n\n</body></html>", None),  # complete, but no event carries data
    (b": a\r\n\r\n: b\r\rdata: [1]\r\n\r\n", b"[1]"),
    (b"data: [1]\r\n", None),  # a CRLF, not a blank line: not ended yet
]
FIRST_EVENT_IDS = [
    "after-a-comment",
    "two-data-lines",
    "mixed-line-ends",
    "lone-cr",
    "incomplete",
    "html",
    "crlf-comments",
    "one-crlf",
]


@pytest.mark.parametrize(("buffer", "data"), FIRST_EVENTS, ids=FIRST_EVENT_IDS)
def test_a_streams_first_event_is_read_as_an_sse_client_reads_it(buffer: bytes, data: bytes | None) -> None:
    assert FirstEventReader().feed(buffer) == data


@pytest.mark.parametrize(("buffer", "data"), FIRST_EVENTS, ids=FIRST_EVENT_IDS)
def test_the_first_event_reads_the_same_in_any_pieces(buffer: bytes, data: bytes | None) -> None:
    """Split anywhere (a CRLF or a blank line between two pieces), or byte by byte, as read whole."""
    splits = [[buffer[:at], buffer[at:]] for at in range(1, len(buffer))] + [[bytes([b]) for b in buffer]]
    for pieces in splits:
        reader = FirstEventReader()
        found = [reader.feed(piece) for piece in pieces]
        assert [d for d in found if d is not None][:1] == ([data] if data is not None else []), pieces


def test_a_streams_events_read_the_same_in_any_pieces() -> None:
    stream = b'data: {"a": 1}\n\n: ping\n\ndata: [2]\ndata: [3]\n\n\n\ndata: tail'
    whole = EventReader()
    expected = (list(whole.feed(stream)), whole.rest)
    assert expected == ([b'data: {"a": 1}', b": ping", b"data: [2]\ndata: [3]", b""], b"data: tail")
    for pieces in [[stream[:at], stream[at:]] for at in range(1, len(stream))] + [[bytes([b]) for b in stream]]:
        reader = EventReader()
        events = [event for piece in pieces for event in reader.feed(piece)]
        assert (events, reader.rest) == expected, pieces


@settings(max_examples=300, deadline=None)
@given(
    stream=st.binary().map(lambda raw: bytes(b"ad:\n"[byte % 4] for byte in raw)),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=6),
)
def test_events_are_parted_the_same_whatever_the_pieces_runs_of_line_ends_included(
    stream: bytes, cuts: list[int]
) -> None:
    """Event by event (``feed``) or as runs (``feed_block``), split anywhere: the events of the whole stream,
    found as a reader finds them, one blank line after the other from the start."""
    events, start = [], 0
    while (end := stream.find(b"\n\n", start)) >= 0:
        events.append(stream[start:end])
        start = end + 2
    expected = (events, stream[start:])
    bounds = sorted({0, len(stream), *(cut for cut in cuts if cut < len(stream))})
    pieces = [stream[start:end] for start, end in itertools.pairwise(bounds)]
    by_event, by_block = EventReader(), EventReader()
    assert ([event for piece in pieces for event in by_event.feed(piece)], by_event.rest) == expected
    blocks = [by_block.feed_block(piece) for piece in pieces]
    assert ([event for block in blocks for event in events_in(block)], by_block.rest) == expected
    assert all(block.endswith(b"\n\n") for block in blocks if block)


def test_megabytes_of_comment_lines_in_small_pieces_before_the_first_event() -> None:
    """A hostile upstream's opening: 8 MB of comment lines in 1 KiB pieces, never a blank line, then an event.
    None of it is data; the event after it is found. (A reader that rejoined and rescanned all it had seen at
    every piece would take some 30 CPU seconds here; ``FirstEventReader`` takes well under one.)"""
    reader = FirstEventReader()
    line = b": " + b"x" * 1021 + b"\n"
    assert all(reader.feed(line) is None for _ in range(8 * 1024))
    assert reader.feed(b'\ndata: {"choices": []}\n\n') == b'{"choices": []}'


@pytest.mark.parametrize("tap", [SseTap, ResponsesTap, TextCompletionTap])
def test_a_stream_that_ends_mid_event_keeps_no_trust_data_either(tap: type[SseTap | ResponsesTap]) -> None:
    reader = tap()
    forwarded = b"".join(reader.feed(b'data: {"choices": []}\n\ndata: {"choices": [], "trust": {"score": 1}}\n'))
    assert forwarded == b'data: {"choices": []}\n\n'
    assert b"trust" not in reader.rest() and b"choices" in reader.rest()
    ended = tap()
    list(ended.feed(b'event: trustgate.trust\ndata: {"trust": {"score": 1}}'))
    assert ended.rest() == b""
