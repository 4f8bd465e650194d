"""``on_low_trust`` on real scores: the default scorers (built assets) judge what two fake upstreams answer.

The cheap group's upstream never picks its own answer in a Trust_BC check and
its judge finds the evidence against it, so its answers score low; the strong
group's always picks its own answer and finds support, so its answers score
high. The policy escalates from one to the other, a held stream too, over real
sockets. (The other low-trust tests pin scores with a stand-in scorer; this one
shows that the real Trust_OV drives the action.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.assets import DATA_DIR
from tests.conftest import sdk_client
from tests.fake_upstream import FakeUpstream, last_user_text
from tests.proxy.endpoints.low_trust import config, record
from tests.scripted_models import ANSWER, QUESTION, model
from tests.servers import ServerThread

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not (DATA_DIR / "factcheck" / "index").exists() or not (DATA_DIR / "consistency" / "vectors.bin").exists(),
        reason="scoring assets not built: `make install` builds them",
    ),
]


def doubtful(messages: list[dict[str, Any]]) -> str:
    """The inconsistent model, whose judge also finds the evidence against its answer."""
    if last_user_text(messages).startswith("INSTRUCTION: Assess whether the provided evidence"):
        return "contradict"
    return model(consistent=False)(messages)


def test_real_scores_escalate_a_low_answer_to_a_model_that_scores_high(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    fake_upstream.responder = doubtful
    strong = FakeUpstream(responder=model(consistent=True))
    with ServerThread(strong.app()) as strong_server:
        settings = config(
            fake_upstream.url,
            "passthrough",
            strong_base=f"{strong_server.url}/v1",  # type: ignore[attr-defined]
            action="escalate",
            escalate_to="strong",
            streams="hold",
            below=0.5,
        )
        settings["trustgate"]["scoring"]["data_dir"] = str(DATA_DIR)
        server = start_gateway(settings, scorers=None)
        client = sdk_client(server)
        messages = [{"role": "user", "content": QUESTION}]

        raw = client.chat.completions.with_raw_response.create(model="cheap", messages=messages)
        assert raw.headers["x-trust-action"] == "escalated" and raw.parse().choices[0].message.content == ANSWER
        assert float(raw.headers["x-trust-score"]) >= 0.5 and raw.headers["x-trust-bc"] == "1.0000"
        first = record(server, raw.headers["x-trust-escalated-from"]).json()  # the real verdict that acted
        assert first["score"] < 0.5 and first["components"]["bc"]["label"] == "inconsistent"

        stream = client.chat.completions.with_raw_response.create(model="cheap", messages=messages, stream=True)
        text = ""
        for chunk in stream.parse():  # the SDK's plain loop
            text += chunk.choices[0].delta.content or ""
        assert stream.headers["x-trust-action"] == "escalated" and text == ANSWER
        assert sum(body.get("messages") == messages for body in strong.requests) == 2  # one escalation each
