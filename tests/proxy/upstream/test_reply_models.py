"""Every endpoint's replies and stream events read through one set of typed models (``replies``).

Whole replies are refused when a client would misread them; the fields only
scoring or metering reads (answer text parts, log-probabilities, usage) read as
absent in another shape, never as a reason to refuse. The log-probability
stripper rewrites through the open models, keeping every field it does not touch.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from proxy.upstream.logprobs import LogprobsAdded
from proxy.upstream.replies import (
    Answer,
    MalformedReply,
    ResponsesEvent,
    TextCompletionChunk,
    check_reply,
    parse_payload,
    reported_usage,
)

pytestmark = pytest.mark.unit


def test_a_legacy_completion_answers_with_its_first_choice() -> None:
    reply = check_reply(
        {
            "id": "cmpl-1",
            "choices": [{"text": "Paris", "logprobs": {"token_logprobs": [-0.5, None, -0.25]}}, {"text": "other"}],
        },
        "completions",
    )
    assert Answer.from_reply(reply) == Answer(text="Paris", logprobs=[-0.5, -0.25], completion_id="cmpl-1")
    odd = check_reply({"id": 7, "choices": [{"text": "x", "logprobs": "junk"}]}, "completions")
    assert Answer.from_reply(odd) == Answer(text="x")
    with pytest.raises(MalformedReply, match="text completion"):
        check_reply({"choices": [{"text": None}]}, "completions")


def test_a_responses_object_answers_with_its_message_text_and_marks_tool_calls() -> None:
    output: list[Any] = [
        {"type": "reasoning", "content": "not a list of parts"},
        {
            "type": "message",
            "content": [
                {"type": "output_text", "text": "Hel", "logprobs": [{"token": "Hel", "logprob": -0.1}]},
                {"type": "refusal", "refusal": "no"},
                7,
                {"type": "output_text", "text": 3},
                {"type": "output_text", "text": "lo", "logprobs": "junk"},
            ],
        },
        {"type": "function_call", "name": "f"},
    ]
    reply = check_reply(
        {"id": "resp_1", "output": output, "usage": {"input_tokens": 2, "output_tokens": 3}}, "responses"
    )
    assert Answer.from_reply(reply) == Answer(
        text="Hello", has_tool_calls=True, logprobs=[-0.1], completion_id="resp_1"
    )
    assert reply.usage is not None and (reply.usage.prompt_tokens, reply.usage.total) == (2, 5)
    assert Answer.from_reply(check_reply({"id": "r", "output": []}, "responses")).text is None
    with pytest.raises(MalformedReply, match="Responses object"):
        check_reply({"id": "r", "output": ["not an item"]}, "responses")


def test_usage_reads_either_naming_and_another_shape_as_unreported() -> None:
    totals = [
        usage.total if (usage := reported_usage({"usage": given})) is not None else None
        for given in ({"prompt_tokens": 1, "completion_tokens": 2}, {"input_tokens": 4})
    ]
    assert totals == [3, 4]
    assert reported_usage({"usage": {"prompt_tokens": "many"}}) is None
    assert reported_usage({"usage": 5}) is None and reported_usage({}) is None


def test_stream_events_read_their_fields_only_in_the_expected_shape() -> None:
    event = parse_payload(
        orjson.dumps(
            {
                "type": "response.output_text.delta",
                "delta": "hi",
                "sequence_number": 3,
                "logprobs": [{"token": "hi", "logprob": -1}],
                "response": "odd",
            }
        ),
        ResponsesEvent,
    )
    assert event is not None and (event.delta, event.sequence_number, event.response) == ("hi", 3, None)
    assert event.chosen_logprobs() == [-1.0]
    chunk = parse_payload(
        orjson.dumps(
            {
                "id": "c",
                "choices": ["junk", {"index": 0, "text": "a"}, {"index": 1, "text": "b", "finish_reason": "stop"}],
            }
        ),
        TextCompletionChunk,
    )
    assert chunk is not None and (chunk.answer_text(), chunk.finishes) == ("a", True)
    assert parse_payload(b"[1]", ResponsesEvent) is None and parse_payload(b"nope", ResponsesEvent) is None


def test_the_stripper_keeps_every_field_it_does_not_touch() -> None:
    reply = {
        "id": "x",
        "object": "chat.completion",
        "provider_field": {"kept": [1, 2]},
        "choices": [
            {
                "index": 0,
                "message": {"content": "hi"},
                "finish_reason": "stop",
                "logprobs": {
                    "content": [
                        {"token": "hi", "logprob": -1, "bytes": [104], "top_logprobs": [{"token": "hi", "logprob": -1}]}
                    ]
                },
            },
            "not a choice",
        ],
    }
    hidden = orjson.loads(LogprobsAdded("chat").body(orjson.dumps(reply)))
    assert hidden == {**reply, "choices": [{**reply["choices"][0], "logprobs": None}, "not a choice"]}
    alternatives = orjson.loads(LogprobsAdded("chat", alternatives_only=True).body(orjson.dumps(reply)))
    entry = alternatives["choices"][0]["logprobs"]["content"][0]
    assert entry == {"token": "hi", "logprob": -1, "bytes": [104], "top_logprobs": []}
    untouched = orjson.dumps({"choices": [{"index": 0, "text": "a", "logprobs": None}]})
    assert LogprobsAdded("completions").body(untouched) == untouched


def test_the_stripper_empties_every_responses_text_part_and_text_event() -> None:
    part = {"type": "output_text", "text": "a", "annotations": [], "logprobs": [{"token": "a", "logprob": -1}]}
    response = {"id": "r", "object": "response", "output": [{"type": "message", "id": "m", "content": [part]}]}
    added = LogprobsAdded("responses")
    cleared = {**part, "logprobs": []}
    assert orjson.loads(added.body(orjson.dumps(response)))["output"][0]["content"] == [cleared]
    completed = orjson.dumps({"type": "response.completed", "response": response})
    event = added.event(b"event: response.completed\ndata: " + completed)
    assert event.startswith(b"event: response.completed\ndata: ")
    assert orjson.loads(event.split(b"data: ", 1)[1])["response"]["output"][0]["content"] == [cleared]
    for payload, where in (
        ({"type": "response.content_part.done", "part": part}, ("part",)),
        ({"type": "response.output_item.done", "item": {"type": "message", "content": [part]}}, ("item", "content", 0)),
        ({"type": "response.output_text.delta", "delta": "a", "logprobs": [{"token": "a"}]}, ()),
    ):
        found: Any = orjson.loads(added.event(b"data: " + orjson.dumps(payload))[6:])
        for key in where:
            found = found[key]
        assert found["logprobs"] == []
