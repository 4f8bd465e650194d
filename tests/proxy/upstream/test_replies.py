"""The one parser of upstream replies: a chat completion or MalformedReply, whatever the body."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from proxy.trust.ask import reply_from_completion
from proxy.upstream.replies import Answer, MalformedReply, parse_chunk, parse_completion
from scoring.types import Reply
from tests.fake_upstream import NOT_A_COMPLETION

pytestmark = pytest.mark.unit


def completion(**choice: Any) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion", "choices": [{"index": 0, **choice}]}


@pytest.mark.parametrize(
    "body",
    [
        *NOT_A_COMPLETION.values(),
        b"{}",
        b'{"choices": "x"}',
        b'{"choices": ["x"]}',
        b'{"choices": [{"message": "x"}]}',
        orjson.dumps(completion(message={"content": 7})),
        orjson.dumps(completion(message={"content": "x"}, logprobs={"content": ["junk"]})),
    ],
)
def test_what_is_not_a_chat_completion_raises(body: bytes) -> None:
    with pytest.raises(MalformedReply, match="not a chat completion"):
        parse_completion(body)


def test_answer_from_a_completion_with_tool_calls() -> None:
    reply = parse_completion(completion(message={"role": "assistant", "content": None, "tool_calls": [{"id": "t"}]}))
    assert Answer.from_reply(reply) == Answer(text=None, has_tool_calls=True, logprobs=None, completion_id="c")


def test_answer_and_scoring_reply_read_the_first_choice_and_its_logprobs() -> None:
    entries = [
        {
            "token": "Par",
            "logprob": -0.5,
            "top_logprobs": [{"token": "Par", "logprob": -0.5}, {"token": "Lon", "logprob": -1.5}],
        },
        {"token": "is", "logprob": -0.1},
    ]
    data = completion(message={"content": "Paris", "extra": 1}, logprobs={"content": entries})
    data["choices"].append({"index": 1, "message": {"content": "other"}})
    assert Answer.from_reply(parse_completion(orjson.dumps(data))) == Answer(
        text="Paris", logprobs=[-0.5, -0.1], completion_id="c"
    )
    assert reply_from_completion(data) == Reply(text="Paris", top_logprobs=[{"Par": -0.5, "Lon": -1.5}, {"is": -0.1}])
    assert reply_from_completion(completion(message={"content": None})) == Reply(text="")
    nulls = [
        {"token": "a", "logprob": None, "top_logprobs": None},
        {"token": "b", "logprob": -1, "top_logprobs": [{"token": "b", "logprob": -1}, {"token": "c", "logprob": None}]},
    ]
    with_nulls = parse_completion(completion(message={"content": "ab"}, logprobs={"content": nulls}))
    assert Answer.from_reply(with_nulls).logprobs == [-1.0]
    assert with_nulls.first is not None and with_nulls.first.top_logprobs() == [{}, {"b": -1.0}]
    assert Answer.from_reply(parse_completion({"choices": []})) == Answer(text=None)


def test_chunks() -> None:
    chunk = parse_chunk(
        orjson.dumps(
            {
                "id": "c",
                "model": "m",
                "choices": [
                    {"index": 0, "delta": {"content": "x"}, "logprobs": {"content": [{"token": "x", "logprob": -1}]}}
                ],
            }
        )
    )
    assert chunk is not None and chunk.choices[0].delta.content == "x"
    assert chunk.choices[0].chosen_logprobs() == [-1.0]
    for bad in (b'{"choices": [{"delta": "str"}]}', b"[1]", b"nope", b'{"choices": [{"index": "a"}]}'):
        assert parse_chunk(bad) is None
