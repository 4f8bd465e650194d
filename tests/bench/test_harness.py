"""The benchmark harness's alternating rounds (phases add up to one result, each round's ratio is shown)
and its upstream's varying answer times, as ``bench.gateway_load`` names them."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.gateway_ab import Version, ratios_table, versions, versions_parser
from bench.gateway_load import method
from bench.harness.load import LoadResult, Options
from bench.harness.servers import GROUP, trustgate_config, write_yaml
from bench.harness.tables import rounds_table
from proxy import load_settings
from proxy.upstream.prices import PriceList
from tests.fake_upstream import FakeUpstream

pytestmark = pytest.mark.unit


def _phase(target: str, requests: int, seconds: float, gateway_cpu_s: float = 0.0) -> LoadResult:
    return LoadResult(target, False, seconds, [0.01] * requests, 1, {"gateway": gateway_cpu_s})


def test_phases_of_one_target_add_up_to_one_result() -> None:
    combined = LoadResult.combined([_phase("trustgate", 600, 5.0, 0.3), _phase("trustgate", 900, 5.0, 0.6)])
    assert (combined.seconds, len(combined.latencies), combined.errors) == (10.0, 1500, 2)
    assert combined.throughput == pytest.approx(150.0)
    assert combined.cpu_ms_per_request("gateway") == pytest.approx(0.6)


def test_each_rounds_ratio_is_shown_beside_the_combined_one() -> None:
    phases = [
        _phase("direct", 1000, 5.0),
        _phase("trustgate", 900, 5.0),
        _phase("trustgate", 800, 5.0),
        _phase("direct", 1000, 5.0),
    ]
    assert "| non-stream | 0.900, 0.800 | 0.850 |" in rounds_table(phases)


def test_a_round_gets_its_share_of_the_seconds_and_a_short_warm_up_after_the_first() -> None:
    options = Options(
        concurrency=10, warmup=5.0, seconds=20.0, stream_seconds=10.0, delay_ms=12.0, noise_budget=0.0, rounds=4
    )
    first, later = options.one_round(first=True), options.one_round(first=False)
    assert (first.seconds, first.stream_seconds, first.warmup) == (5.0, 2.5, 5.0)
    assert (later.seconds, later.stream_seconds, later.warmup) == (5.0, 2.5, 1.0)


def test_the_fake_upstreams_answer_times_vary_within_their_jitter_and_repeat_run_to_run() -> None:
    draws = [FakeUpstream(delay_ms=12.0, delay_jitter_ms=6.0) for _ in range(2)]
    first, second = ([fake.next_delay_ms() for _ in range(500)] for fake in draws)
    assert first == second  # seeded: every run of the benchmark sees the same answer times
    assert all(6.0 <= delay <= 18.0 for delay in first)
    assert min(first) < 7.0 and max(first) > 17.0 and 11.0 < sum(first) / len(first) < 13.0
    assert FakeUpstream(delay_ms=12.0).next_delay_ms() == 12.0


def test_the_benchmark_names_its_upstreams_answer_times() -> None:
    assert Options(10, 5.0, 20.0, 10.0, 12.0, 90.0, 4).upstream_delay == "12 ms"
    varying = Options(10, 5.0, 20.0, 10.0, 12.0, 90.0, 4, delay_jitter_ms=6.0)
    assert varying.upstream_delay == "12 ± 6 ms (uniform, seeded)"
    assert "--delay-jitter-ms 6 --http h11" in method(varying)


def test_the_benchmarks_deployment_is_priced_unless_asked_not_to_be(tmp_path: Path) -> None:
    """``--unpriced`` must turn spend tracking off: no configured price, and none from litellm's cost map."""
    for priced in (True, False):
        config = write_yaml(tmp_path / f"{priced}.yaml", trustgate_config(4000, 4001, tmp_path, priced))
        assert PriceList.of(load_settings(config)).priced(GROUP) is priced


def test_checkouts_and_unpriced_versions_keep_the_order_they_were_given_in(tmp_path: Path) -> None:
    parser = versions_parser("bench.test", None, rounds=1)
    args = parser.parse_args(["--unpriced", str(tmp_path), "--checkout", str(tmp_path)])
    assert versions(parser, args) == [Version(tmp_path, priced=False), Version(tmp_path, priced=True)]
    with pytest.raises(SystemExit):
        versions(parser, parser.parse_args(["--rounds", "2"]))


def test_each_version_is_compared_with_the_first_round_by_round() -> None:
    figures = {
        (0, "non-stream"): [(100.0, 1.0), (100.0, 1.0)],
        (0, "stream"): [(50.0, 2.0), (50.0, 2.0)],
        (1, "non-stream"): [(90.0, 1.1), (110.0, 1.3)],
        (1, "stream"): [(50.0, 2.0), (40.0, 3.0)],
    }
    table = ratios_table(figures, 2)
    assert "| 2 | non-stream | 0.90, 1.10 | 1.00 | 1.10, 1.30 | 1.20 |" in table
    assert "| 2 | stream | 1.00, 0.80 | 0.90 | 1.00, 1.50 | 1.25 |" in table
