"""End to end: the gateway starts the real llama.cpp server with the packaged SmolLM2 and proxies to it.

SmolLM2-135M's answers are not judged here (it is a demo model); the test
checks that a real completion, streamed and not, makes the whole trip.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

import openai
import pytest

from proxy import default_config_path, load_settings
from proxy.local_upstream import packaged_model_path
from tests.conftest import MASTER_KEY
from tests.servers import ServerThread

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_packaged_model_file_is_found() -> None:
    path = packaged_model_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000


def test_real_completion_through_the_gateway(start_gateway: Callable[..., ServerThread]) -> None:
    settings = load_settings(default_config_path(), {})
    port = free_port()
    config = {
        "model_list": [{"model_name": "local", "litellm_params": {
            "model": f"openai/{settings.trustgate.local_upstream.model_alias}",
            "api_base": f"http://127.0.0.1:{port}/v1", "api_key": "none", "timeout": 120}}],
        "general_settings": {"master_key": MASTER_KEY},
        "trustgate": {"local_upstream": {"enabled": True, "port": port, "n_ctx": 1024}},
    }
    server = start_gateway(config)
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=MASTER_KEY, max_retries=0, timeout=120)
    messages = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
    reply = client.chat.completions.create(model="local", messages=messages, max_tokens=16, temperature=0)
    assert reply.choices[0].message.content and reply.choices[0].message.content.strip()
    assert reply.usage is not None and reply.usage.completion_tokens > 0
    stream = client.chat.completions.create(model="local", messages=messages, max_tokens=16, temperature=0,
                                            stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text.strip()
