"""``bench.gateway_load``'s alternating rounds: phases add up to one result, and each round's ratio is shown."""

from __future__ import annotations

import pytest

from bench.gateway_load import LoadResult, Options, rounds_table


def _phase(target: str, requests: int, seconds: float, gateway_cpu_s: float = 0.0) -> LoadResult:
    return LoadResult(target, False, seconds, [0.01] * requests, 1, {"gateway": gateway_cpu_s})


def test_phases_of_one_target_add_up_to_one_result() -> None:
    combined = LoadResult.combined([_phase("trustgate", 600, 5.0, 0.3), _phase("trustgate", 900, 5.0, 0.6)])
    assert (combined.seconds, len(combined.latencies), combined.errors) == (10.0, 1500, 2)
    assert combined.throughput == pytest.approx(150.0)
    assert combined.cpu_ms_per_request("gateway") == pytest.approx(0.6)


def test_each_rounds_ratio_is_shown_beside_the_combined_one() -> None:
    phases = [_phase("direct", 1000, 5.0), _phase("trustgate", 900, 5.0),
              _phase("trustgate", 800, 5.0), _phase("direct", 1000, 5.0)]
    assert "| non-stream | 0.900, 0.800 | 0.850 |" in rounds_table(phases)


def test_a_round_gets_its_share_of_the_seconds_and_a_short_warm_up_after_the_first() -> None:
    options = Options(concurrency=10, warmup=5.0, seconds=20.0, stream_seconds=10.0, delay_ms=12.0,
                      noise_budget=0.0, rounds=4)
    first, later = options.one_round(first=True), options.one_round(first=False)
    assert (first.seconds, first.stream_seconds, first.warmup) == (5.0, 2.5, 5.0)
    assert (later.seconds, later.stream_seconds, later.warmup) == (5.0, 2.5, 1.0)
