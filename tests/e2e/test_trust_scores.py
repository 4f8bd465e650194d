"""The gateway with its real scorers — built knowledge graph, vectors and evidence index — over real sockets.

A scripted fake upstream plays the answering model: it answers the user, then
picks a letter in each multiple-choice check (the original answer's, or a
distractor's) and labels the evidence when asked as judge. The scores must
follow what it does. The assets are built by the README's install step.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from proxy import load_settings
from tests.assets import DATA_DIR
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.scripted_models import ANSWER, scripted
from tests.servers import ServerThread

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not (DATA_DIR / "factcheck" / "index").exists() or not (DATA_DIR / "consistency" / "vectors.bin").exists(),
        reason="scoring assets not built: `make install` builds them",
    ),
]


@pytest.fixture(scope="module")
def real_scorer_gateway(fake_upstream_url: str, start_module_gateway: Callable[..., ServerThread]) -> ServerThread:
    """Shared by the module's tests, which only send it requests: its start loads the real scorers."""
    config = gateway_config(fake_upstream_url)
    config["trustgate"] = {
        "scoring": {
            "data_dir": str(DATA_DIR),
            "mode": "sync",
            "combine": "paper",
            "consistency": {"max_checks": 4, "seed": 7},
        }
    }
    return start_module_gateway(config, scorers=None)  # None: the scorers the config enables


def ask(server: ServerThread) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={"authorization": f"Bearer {MASTER_KEY}"},
        json={"model": "fake", "messages": [{"role": "user", "content": "What is the capital of France?"}]},
        timeout=60,
    )


@pytest.mark.parametrize("consistent", [True, False])
def test_scores_follow_the_model_behaviour(
    real_scorer_gateway: ServerThread, fake_upstream: FakeUpstream, consistent: bool
) -> None:
    fake_upstream.responder = scripted(consistent)
    response = ask(real_scorer_gateway)
    assert response.json()["choices"][0]["message"]["content"] == ANSWER
    assert response.headers["x-trust-status"] == "done"
    record = httpx.get(
        f"{real_scorer_gateway.url}/v1/trust/{response.headers['x-trust-id']}",
        headers={"authorization": f"Bearer {MASTER_KEY}"},
    ).json()
    bc, fc, ov = (record["components"][name] for name in ("bc", "fc", "ov"))
    assert bc["details"]["binary"] == (1.0 if consistent else 0.0)
    checks = bc["details"]["checks"]
    assert all(ANSWER in check["options"] and len(set(check["options"])) == 5 for check in checks)
    assert fc["label"] == "support"
    assert any(e["id"] == "wikipedia:Paris" for e in fc["details"]["evidence"])
    assert ov["details"]["table3"] == (1.0 if consistent else 0.8)  # paper Table 3: (in)consistent × support
    assert record["score"] == pytest.approx(1.0 if consistent else 0.8)  # graded; the judge's mass is all on support
    assert response.headers["x-trust-bc"] == ("1.0000" if consistent else "0.0000")
    assert record["components"]["bc"]["upstream_calls"] == len(checks)


def test_default_config_enables_both_scorers() -> None:
    scoring = load_settings(Path("proxy/config/default_config.yaml"), {}).trustgate.scoring
    assert scoring.consistency.enabled and scoring.factcheck.enabled
