"""End to end: the gateway starts the real llama.cpp server with the packaged SmolLM2 and proxies to it.

SmolLM2-135M's answers are not judged here (it is a demo model); the test
checks that a real completion, streamed and not, makes the whole trip.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import httpx
import openai
import pytest

from evaluation.fitting import fit_calibrator
from proxy import default_config_path, load_settings
from proxy.upstream.local_model import packaged_model_path
from scoring.calibration import load_calibration, save_calibration
from tests.assets import DATA_DIR
from tests.conftest import MASTER_KEY
from tests.servers import ServerThread

pytestmark = pytest.mark.e2e


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_packaged_model_file_is_found() -> None:
    path = packaged_model_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000


def local_model_config(**trustgate: object) -> dict[str, object]:
    """The embedded defaults, on a free port so tests never collide with a running `make serve`."""
    settings = load_settings(default_config_path(), {})
    port = free_port()
    return {
        "model_list": [
            {
                "model_name": "local",
                "litellm_params": {
                    "model": f"openai/{settings.trustgate.local_upstream.model_alias}",
                    "api_base": f"http://127.0.0.1:{port}/v1",
                    "api_key": "none",
                    "timeout": 120,
                },
            }
        ],
        "general_settings": {"master_key": MASTER_KEY},
        "trustgate": {"local_upstream": {"enabled": True, "port": port, "n_ctx": 2048}, **trustgate},
    }


def test_real_completion_through_the_gateway(start_gateway: Callable[..., ServerThread]) -> None:
    server = start_gateway(local_model_config())
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=MASTER_KEY, max_retries=0, timeout=120)
    messages = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
    reply = client.chat.completions.create(model="local", messages=messages, max_tokens=16, temperature=0)
    assert reply.choices[0].message.content and reply.choices[0].message.content.strip()
    assert reply.usage is not None and reply.usage.completion_tokens > 0
    stream = client.chat.completions.create(model="local", messages=messages, max_tokens=16, temperature=0, stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text.strip()


@pytest.mark.skipif(not (DATA_DIR / "factcheck" / "index").exists(), reason="scoring assets not built")
def test_real_model_gets_real_trust_scores(start_gateway: Callable[..., ServerThread], tmp_path: Path) -> None:
    """The whole product on the demo model: answer, re-ask the same model, fact-check, combine, calibrate."""
    calibration = tmp_path / "calibration.json"  # fitted as `trustgate eval` fits it, on made-up labels
    save_calibration(
        fit_calibrator(
            [0.0, 0.2, 0.4, 0.6, 0.8, 1.0] * 2, [0, 0, 0, 1, 1, 1, 0, 1, 0, 1, 1, 1], fitted_on={"components": "bc+fc"}
        ),
        calibration,
    )
    scoring = {
        "data_dir": str(DATA_DIR),
        "mode": "sync",
        "sync_timeout_s": 240,
        # Every component shares the one model server: on a busy 2-core machine Trust_BC's checks wait behind the
        # others' calls past the default 25 s. This asks whether each component scores, not how fast.
        "queue": {"scorer_timeout_s": 200},
        "combine": "paper",
        "consistency": {"max_checks": 3, "seed": 1},
        "calibration_path": str(calibration),
    }
    server = start_gateway(local_model_config(scoring=scoring), scorers=None)
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=MASTER_KEY, max_retries=0, timeout=300)
    raw = client.chat.completions.with_raw_response.create(
        model="local",
        messages=[{"role": "user", "content": "Who wrote Romeo and Juliet?"}],
        max_tokens=24,
        temperature=0,
    )
    assert raw.headers["x-trust-status"] == "done"
    for header in ("x-trust-score", "x-trust-bc", "x-trust-fc"):
        assert 0.0 <= float(raw.headers[header]) <= 1.0
    assert raw.headers["x-trust-label"] in {"trusted", "uncertain", "untrusted"}
    record = httpx.get(
        f"{server.url}/v1/trust/{raw.headers['x-trust-id']}", headers={"authorization": f"Bearer {MASTER_KEY}"}
    ).json()
    expected = load_calibration(calibration).probability(record["score"])
    assert record["probability"] == pytest.approx(expected)
    assert float(raw.headers["x-trust-probability"]) == pytest.approx(expected, abs=5e-5)
