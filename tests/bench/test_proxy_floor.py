"""``bench.proxy_floor``: the bare proxy forwards what TrustGate forwards, and a short run reports all three targets."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.harness.phases import check_answers
from bench.harness.processes import BenchError, free_port, running
from bench.harness.servers import Target, fake_upstream
from bench.proxy_floor import bare_proxy, main

pytestmark = pytest.mark.integration


def test_the_bare_proxy_answers_whole_and_streamed_requests_through_the_upstream(tmp_path: Path) -> None:
    upstream_port, port = free_port(), free_port()
    with running(
        fake_upstream(upstream_port, 1.0, tmp_path), f"http://127.0.0.1:{upstream_port}/v1/models", timeout=30
    ) as upstream:
        served_before = upstream.cpu_seconds()
        with running(bare_proxy(port, upstream_port, tmp_path), f"http://127.0.0.1:{port}/ready", timeout=30):
            check_answers(Target("bare-proxy", f"http://127.0.0.1:{port}", "unused", "gpt-4o-mini"))
        assert upstream.cpu_seconds() > served_before  # answered by the upstream, not by the proxy itself
    with (
        running(bare_proxy(port, free_port(), tmp_path), f"http://127.0.0.1:{port}/ready", timeout=30),
        pytest.raises(BenchError),
    ):  # no upstream behind it: the check fails loudly
        check_answers(Target("bare-proxy", f"http://127.0.0.1:{port}", "unused", "gpt-4o-mini"))


def test_a_short_run_reports_each_target_against_the_direct_upstream(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["--seconds", "1", "--stream-seconds", "1", "--warmup", "0", "--rounds", "1", "--noise-budget", "0"]) == 0
    )
    out = capsys.readouterr().out
    for target in ("direct", "bare-proxy", "trustgate"):
        assert re.search(rf"^\| {target} \| non-stream \| [1-9]\d* \| 0 \|", out, re.MULTILINE), target
        assert re.search(rf"^\| {target} \| stream \| [1-9]\d* \| 0 \|", out, re.MULTILINE), target
    floor = re.findall(
        r"^\| (non-stream|stream) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", out, re.MULTILINE
    )
    assert [mode for mode, *_ in floor] == ["non-stream", "stream"]
    for _, bare, ours, ours_vs_bare, *cpu in floor:
        assert float(ours_vs_bare) == pytest.approx(float(ours) / float(bare), abs=0.002)
        assert all(float(value) > 0 for value in cpu)
