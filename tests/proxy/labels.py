"""Teaching a gateway: a user's label on a record, and what the calibration endpoint then lists."""

from __future__ import annotations

from typing import Any

import httpx

from tests.proxy.scored_gateway import AUTH
from tests.servers import ServerThread


def label(server: ServerThread, record_id: str, correct: bool) -> None:
    response = httpx.post(
        f"{server.url}/v1/trust/{record_id}/feedback", headers=AUTH, json={"correct": correct}, timeout=10
    )
    assert response.status_code == 200, response.text


def calibration(server: ServerThread) -> list[dict[str, Any]]:
    response = httpx.get(f"{server.url}/v1/trust/calibration", headers=AUTH, timeout=10)
    assert response.status_code == 200, response.text
    return list(response.json()["data"])
