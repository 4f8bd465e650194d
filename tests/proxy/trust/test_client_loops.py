"""The clients' plain loops run to their end with trust on, on both upstream paths.

In sync mode the trust object rides on the upstream's own final chunk
(``finish_reason``) and on ``response.completed``'s response, so the loops
users write — ``for c in stream: c.choices[0].delta.content`` — never meet a
chunk the gateway made up; the SDK keeps the trust object in ``model_extra``.
LangChain and LlamaIndex (the ``compat`` extra) run their loops the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.conftest import MASTER_KEY, sdk_client
from tests.fake_upstream import FakeUpstream
from tests.proxy.scored_gateway import AskingScorer, scoring_config, wait_for_record
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

SYNC = {"x-trustgate-mode": "sync"}
ASYNC = {"x-trustgate-mode": "async"}
MESSAGES: list[Any] = [{"role": "user", "content": "Who loops?"}]


@pytest.fixture(params=["passthrough", "litellm"])
def gateway(
    request: pytest.FixtureRequest, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> ServerThread:
    config = scoring_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"]["passthrough"] = request.param == "passthrough"
    return start_gateway(config, scorers=[AskingScorer("bc", 0.9), AskingScorer("fc", 0.5)])


def client(server: ServerThread, headers: dict[str, str]) -> openai.OpenAI:
    return sdk_client(server, **headers)


def async_client(server: ServerThread, headers: dict[str, str]) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=f"{server.url}/v1", api_key=MASTER_KEY, max_retries=0, timeout=30, default_headers=headers
    )


def docs_snippet() -> str:
    """The docs' Python block that shows where the trust object is (after the line naming this file)."""
    page = (Path(__file__).resolve().parents[3] / "docs" / "concepts" / "live-scoring.md").read_text()
    after = page[page.index("(`tests/proxy/trust/test_client_loops.py` runs this)") :]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_docs_snippet_reads_the_trust_from_the_sdk_objects(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], capsys: pytest.CaptureFixture[str]
) -> None:
    """The snippet as written, against a gateway serving its model name: a chat stream, then a Responses stream."""
    config = scoring_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["model_list"][0]["model_name"] = "local"
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9), AskingScorer("fc", 0.5)])
    code = docs_snippet().replace("http://127.0.0.1:4000", server.url).replace("sk-trustgate-local", MASTER_KEY)
    exec(compile(f"from openai import OpenAI\n{code}", "live-scoring.md", "exec"), {})
    answer, chat_trust, responses_trust = capsys.readouterr().out.splitlines()
    assert answer == "You said: What is the capital of France?"
    _, label, basis, record_id = chat_trust.split()  # score, label, basis, id: from chunk.model_extra["trust"]
    assert record_id.startswith("trust-") and label in ("trusted", "uncertain", "untrusted", "None")
    assert basis == "default"  # no label has taught the model a fit
    assert "'status': 'done'" in responses_trust and "'id': 'trust-" in responses_trust
    assert "'basis': 'default'" in responses_trust and "'kind': 'factual'" in responses_trust


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_openai_chat_plain_loop_runs_to_the_end(gateway: ServerThread, mode: str) -> None:
    headers = SYNC if mode == "sync" else ASYNC
    chunks = []
    with client(gateway, headers).chat.completions.with_streaming_response.create(
        model="fake", messages=MESSAGES, stream=True
    ) as response:
        trust_id = response.headers["x-trust-id"]
        for chunk in response.parse():
            chunks.append(chunk.choices[0].delta.content or "")  # a chunk without choices would raise IndexError here
            last = chunk
    assert "".join(chunks) == "You said: Who loops?"
    trust = (last.model_extra or {}).get("trust")
    if mode == "async":
        assert trust is None  # async mode: nothing in-band, the record lands later
    else:
        assert last.choices[0].finish_reason == "stop" and trust["id"] == trust_id
    assert wait_for_record(gateway, trust_id)["status"] == "done"

    reply = client(gateway, headers).chat.completions.with_raw_response.create(model="fake", messages=MESSAGES)
    assert reply.parse().choices[0].message.content == "You said: Who loops?"
    assert reply.headers["x-trust-status"] == ("done" if mode == "sync" else "pending")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_async_openai_client_loops_run_to_the_end(gateway: ServerThread, mode: str) -> None:
    async def run() -> tuple[str, Any, str]:
        async with async_client(gateway, SYNC if mode == "sync" else ASYNC) as sdk:
            text, last = "", None
            async for chunk in await sdk.chat.completions.create(model="fake", messages=MESSAGES, stream=True):
                text += chunk.choices[0].delta.content or ""
                last = chunk
            reply = await sdk.chat.completions.create(model="fake", messages=MESSAGES)
            return text, last, reply.choices[0].message.content or ""

    text, last, whole = asyncio.run(run())
    assert text == whole == "You said: Who loops?"
    assert ("trust" in (last.model_extra or {})) == (mode == "sync")


def test_include_usage_keeps_openais_usage_chunk_last(gateway: ServerThread) -> None:
    """OpenAI's usage chunk (empty choices) follows the final chunk: it stays last, as the upstream's,
    in OpenAI's shape on both paths (litellm's had a filler choice and a ``cost``)."""
    chunks = list(
        client(gateway, SYNC).chat.completions.create(
            model="fake", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
    )
    *answer, final, usage = chunks
    assert "".join(c.choices[0].delta.content or "" for c in [*answer, final]) == "You said: Who loops?"
    assert final.choices[0].finish_reason == "stop" and (final.model_extra or {})["trust"]["status"] == "done"
    assert usage.choices == [] and usage.usage is not None and usage.usage.completion_tokens == 4
    assert "cost" not in (usage.usage.model_extra or {}) and "trust" not in (usage.model_extra or {})
    assert all(c.usage is None for c in [*answer, final])  # no usage on the other chunks


def test_openai_responses_loops_run_to_the_end(gateway: ServerThread) -> None:
    events = list(client(gateway, SYNC).responses.create(model="fake", input="Who loops?", stream=True))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "You said: Who loops?"
    assert events[-1].type == "response.completed"
    assert (events[-1].response.model_extra or {})["trust"]["status"] == "done"
    usage = events[-1].response.usage
    assert usage is not None and "cost" not in (usage.model_extra or {})  # litellm adds one; OpenAI has none
    whole = client(gateway, ASYNC).responses.create(model="fake", input="Who loops?")
    assert whole.output_text == text and whole.usage is not None and "cost" not in (whole.usage.model_extra or {})


def test_langchain_loops_run_to_the_end_with_trust_on(gateway: ServerThread) -> None:
    langchain_openai = pytest.importorskip("langchain_openai")
    chat = langchain_openai.ChatOpenAI(
        model="fake", base_url=f"{gateway.url}/v1", api_key=MASTER_KEY, max_retries=0, default_headers=SYNC
    )
    assert "".join(str(part.content) for part in chat.stream("stream chain")) == "You said: stream chain"

    async def astream() -> str:
        return "".join([str(part.content) async for part in chat.astream("async chain")])

    assert asyncio.run(astream()) == "You said: async chain"
    assert chat.invoke("whole chain").content == "You said: whole chain"


def test_llamaindex_loops_run_to_the_end_with_trust_on(gateway: ServerThread) -> None:
    openai_like = pytest.importorskip("llama_index.llms.openai_like")
    llama_index_llms = pytest.importorskip("llama_index.core.llms")
    completions = openai_like.OpenAILike(
        model="fake", api_base=f"{gateway.url}/v1", api_key=MASTER_KEY, max_retries=0, default_headers=SYNC
    )
    assert "".join(part.delta or "" for part in completions.stream_complete("index stream")) == "You said: index stream"
    chat = openai_like.OpenAILike(
        model="fake",
        api_base=f"{gateway.url}/v1",
        api_key=MASTER_KEY,
        is_chat_model=True,
        max_retries=0,
        default_headers=SYNC,
    )
    message = llama_index_llms.ChatMessage(role="user", content="index chat")
    assert "".join(part.delta or "" for part in chat.stream_chat([message])) == "You said: index chat"


# --- The plain loops of every endpoint, in every scoring mode --------------------------------------------------------

# A mode's headers, and the policy it needs: "held" is sync scoring with a block policy that holds the stream whole
# until its verdict (``streams: hold``), so the client gets the upstream's events replayed after scoring.
MODES: dict[str, tuple[dict[str, str], dict[str, Any]]] = {
    "off": ({"x-trustgate-mode": "off"}, {}),
    "async": (ASYNC, {}),
    "sync": (SYNC, {}),
    "held": (SYNC, {"mode": "sync", "on_low_trust": {"below": 0.1, "action": "block", "streams": "hold"}}),
}


@pytest.fixture(params=[(path, mode) for path in ("passthrough", "litellm") for mode in MODES], ids="-".join)
def loop_client(
    request: pytest.FixtureRequest, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> openai.OpenAI:
    path, mode = request.param
    headers, policy = MODES[mode]
    config = scoring_config(fake_upstream.url, **policy)  # type: ignore[attr-defined]
    config["trustgate"]["passthrough"] = path == "passthrough"
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9), AskingScorer("fc", 0.5)])
    return client(server, headers)


def test_every_endpoints_plain_loop_reads_every_event(loop_client: openai.OpenAI) -> None:
    """The loops as users write them, which read a field of every event without a guard: a completions chunk's
    ``text`` (joined as str), a chat chunk's ``delta``; and the SDK's own stream helpers, which build the whole
    answer from the events."""
    chat = loop_client.chat.completions.create(model="fake", messages=MESSAGES, stream=True)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in chat) == "You said: Who loops?"
    text = loop_client.completions.create(model="fake", prompt="Who loops?", stream=True)
    assert "".join(chunk.choices[0].text for chunk in text) == "You said: Who loops?"
    events = loop_client.responses.create(model="fake", input="Who loops?", stream=True)
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "You said: Who loops?"

    with loop_client.chat.completions.stream(model="fake", messages=MESSAGES) as helper:
        assert "".join(e.delta for e in helper if e.type == "content.delta") == "You said: Who loops?"
        assert helper.get_final_completion().choices[0].message.content == "You said: Who loops?"
    with loop_client.responses.stream(model="fake", input="Who loops?") as responses_helper:
        assert "".join(e.delta for e in responses_helper if e.type == "response.output_text.delta") == (
            "You said: Who loops?"
        )
        assert responses_helper.get_final_response().output_text == "You said: Who loops?"
