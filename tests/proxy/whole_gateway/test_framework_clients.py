"""LangChain's ChatOpenAI and LlamaIndex's default OpenAILike against a real gateway (optional: the `compat` extra).

LlamaIndex's ``OpenAILike`` calls ``/v1/completions`` unless told it is a chat
model — the call that failed with 404 before the gateway served it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

langchain_openai = pytest.importorskip("langchain_openai")
openai_like = pytest.importorskip("llama_index.llms.openai_like")


@pytest.fixture(params=["passthrough", "litellm"])
def gateway(
    request: pytest.FixtureRequest, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> ServerThread:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {"passthrough": request.param == "passthrough"}
    return start_gateway(config)


def test_langchain_chat_openai(gateway: ServerThread) -> None:
    chat = langchain_openai.ChatOpenAI(model="fake", base_url=f"{gateway.url}/v1", api_key=MASTER_KEY, max_retries=0)
    assert chat.invoke("hello chain").content == "You said: hello chain"
    assert "".join(str(part.content) for part in chat.stream("stream chain")) == "You said: stream chain"
    assert asyncio.run(chat.ainvoke("async chain")).content == "You said: async chain"


def test_llamaindex_openai_like_default_uses_completions(gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    llm = openai_like.OpenAILike(model="fake", api_base=f"{gateway.url}/v1", api_key=MASTER_KEY, max_retries=0)
    assert llm.complete("hello index").text == "You said: hello index"
    passthrough = gateway.app.state.gateway.settings.trustgate.passthrough  # type: ignore[attr-defined]
    # forwarded to /v1/completions as is; litellm's Router asks a chat model's chat endpoint instead
    assert ("prompt" if passthrough else "messages") in fake_upstream.requests[-1]
    chat_llm = openai_like.OpenAILike(
        model="fake", api_base=f"{gateway.url}/v1", api_key=MASTER_KEY, is_chat_model=True, max_retries=0
    )
    assert "You said: chat index" in str(chat_llm.complete("chat index"))
