"""Black-box: what scoring a clearly consistent answer costs on the default settings, in upstream calls.

A real gateway on the default scoring settings (every default scorer, the built
assets) in front of the fake upstream, which plays a clearly consistent model
(it picks its own answer in every Trust_BC check) or an inconsistent one (it
never does); its judge finds support, and asked again it answers the same. The
fake counts every call it gets (at most 4 for a clearly consistent answer,
which ``sc`` does not sample).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.assets import DATA_DIR
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream, last_user_text
from tests.scripted_models import QUESTION, model
from tests.servers import ServerThread

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not (DATA_DIR / "factcheck" / "index").exists() or not (DATA_DIR / "consistency" / "vectors.bin").exists(),
        reason="scoring assets not built: `make install` builds them",
    ),
]


def scored(server: ServerThread) -> tuple[httpx.Headers, dict[str, Any]]:
    response = httpx.post(
        f"{server.url}/v1/chat/completions",
        timeout=120,
        headers={"authorization": f"Bearer {MASTER_KEY}", "x-trustgate-mode": "sync"},
        json={"model": "fake", "messages": [{"role": "user", "content": QUESTION}]},
    )
    assert response.headers["x-trust-status"] == "done"
    record: dict[str, Any] = httpx.get(
        f"{server.url}/v1/trust/{response.headers['x-trust-id']}", headers={"authorization": f"Bearer {MASTER_KEY}"}
    ).json()
    return response.headers, record


def upstream_calls(fake: FakeUpstream) -> tuple[int, int]:
    """(scoring calls, of which sc's samples) the fake got, all but the user's own call: a sample repeats the
    user's question."""
    asked_again = sum(last_user_text(body["messages"]) == QUESTION for body in fake.requests) - 1
    return len(fake.requests) - 1, asked_again


def calls_by_component(record: dict[str, Any]) -> dict[str, int]:
    return {name: component["upstream_calls"] for name, component in record["components"].items()}


@pytest.fixture(scope="module")
def on_the_defaults(fake_upstream_url: str, start_module_gateway: Callable[..., ServerThread]) -> ServerThread:
    """A gateway on the default scoring settings, shared by the tests that change none: each start loads every
    default scorer."""
    config = gateway_config(
        fake_upstream_url, trustgate={"scoring": {"data_dir": str(DATA_DIR), "allow_client_mode": "any"}}
    )
    return start_module_gateway(config, scorers=None)


def test_a_clearly_consistent_answer_costs_four_calls_on_the_defaults(
    fake_upstream: FakeUpstream, on_the_defaults: ServerThread
) -> None:
    """At most 4. Trust_BC stops after 3 agreeing checks and Trust_FC's judge is 1 call; those 3
    checks all chose the answer itself, so ``sc`` asks no samples (it would add 3) and says why."""
    fake_upstream.responder = model(consistent=True)
    headers, record = scored(on_the_defaults)
    assert calls_by_component(record) == {"bc": 3, "fc": 1, "lp": 0, "sc": 0, "ev": 0, "ov": 0}
    assert upstream_calls(fake_upstream) == (4, 0)
    bc, sc = record["components"]["bc"], record["components"]["sc"]
    assert (bc["value"], bc["label"], bc["details"]["stop_reason"]) == (1.0, "consistent", "settled")
    assert (sc.get("value"), sc["label"], sc["details"]) == (None, "unscored", {"reason": "bc_clearly_consistent"})
    assert "x-trust-sc" not in headers and "x-trust-bc" in headers
    assert record["components"]["ov"]["details"]["features"]["sc"] == 1.0  # the default reads it as full agreement
    assert record["label"] == "trusted"


def test_an_inconsistent_answer_still_gets_its_samples(
    fake_upstream: FakeUpstream, on_the_defaults: ServerThread
) -> None:
    fake_upstream.responder = model(consistent=False)
    headers, record = scored(on_the_defaults)
    assert calls_by_component(record) == {"bc": 3, "fc": 1, "lp": 0, "sc": 3, "ev": 0, "ov": 0}
    assert upstream_calls(fake_upstream) == (7, 3)
    assert record["components"]["bc"]["label"] == "inconsistent"
    sc = record["components"]["sc"]
    assert (sc["value"], sc["details"]["samples_answered"]) == (1.0, 3)
    assert headers["x-trust-sc"] == "1.0000"


def test_with_the_switch_off_every_answer_is_sampled(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    fake_upstream.responder = model(consistent=True)
    config = gateway_config(
        fake_upstream.url,
        trustgate={  # type: ignore[attr-defined]
            "scoring": {"data_dir": str(DATA_DIR), "allow_client_mode": "any", "sc": {"skip_when_consistent": False}}
        },
    )
    _, record = scored(start_gateway(config, scorers=None))
    assert calls_by_component(record) == {"bc": 3, "fc": 1, "lp": 0, "sc": 3, "ev": 0, "ov": 0}
    assert upstream_calls(fake_upstream) == (7, 3)
    assert record["components"]["sc"]["value"] == 1.0

    fake_upstream.requests.clear()
    config["trustgate"]["scoring"]["sc"] = {"enabled": False}
    _, record = scored(start_gateway(config, scorers=None))
    assert upstream_calls(fake_upstream) == (4, 0) and "sc" not in record["components"]
    assert record["label"] == "trusted"
