"""``make bench`` names the figures that got worse than the last committed ones by more than 10 %."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bench import gateway_load
from bench.gateway_load import headline_figures
from bench.harness.load import LoadResult
from bench.regressions import FIGURES, REFERENCES, committed_figures, compare, report, write_figures

COMMITTED = {
    "non-stream.throughput_vs_direct": 0.90,
    "non-stream.gateway_cpu_ms_per_request": 1.20,
    "non-stream.gateway_cpu_vs_upstream": 2.0,
    "non-stream.added_p50_ms": 1.0,
    "non-stream.added_p99_ms": 8.0,
    "stream.throughput_vs_direct": 0.90,
    "stream.gateway_cpu_ms_per_request": 1.70,
    "stream.gateway_cpu_vs_upstream": 1.5,
    "stream.added_p50_ms": 2.0,
    "stream.added_p99_ms": 10.0,
    "non-stream.upstream_cpu_ms_per_request": 0.6,
    "stream.upstream_cpu_ms_per_request": 1.1,
}
UPSTREAM = "12 ± 6 ms (uniform, seeded)"


def _worse(measured: dict[str, float]) -> list[str]:
    return [change.name for change in compare(COMMITTED, measured) if change.worse]


@pytest.mark.unit
def test_the_same_figures_are_nothing_worse() -> None:
    assert _worse(dict(COMMITTED)) == []
    assert "Nothing got worse by more than 10%" in report(COMMITTED, COMMITTED)


@pytest.mark.unit
def test_less_throughput_and_more_cpu_or_latency_past_ten_percent_are_worse() -> None:
    measured = {
        **COMMITTED,
        "non-stream.throughput_vs_direct": 0.77,
        "stream.gateway_cpu_ms_per_request": 2.69,
        "non-stream.added_p99_ms": 41.0,
    }
    assert _worse(measured) == [
        "non-stream.throughput_vs_direct",
        "non-stream.added_p99_ms",
        "stream.gateway_cpu_ms_per_request",
    ]
    text = report(COMMITTED, measured)
    assert (
        "Worse by more than 10%: non-stream.throughput_vs_direct, non-stream.added_p99_ms, "
        "stream.gateway_cpu_ms_per_request"
    ) in text
    assert "| stream.gateway_cpu_ms_per_request | 1.700 | 2.690 | +58.2% | **worse** |" in text


@pytest.mark.unit
def test_within_ten_percent_or_better_is_not_worse() -> None:
    measured = {
        **COMMITTED,
        "non-stream.throughput_vs_direct": 0.82,  # 8.9 % less
        "non-stream.gateway_cpu_ms_per_request": 1.31,  # 9.2 % more
        "stream.throughput_vs_direct": 0.99,
        "stream.added_p99_ms": 5.0,
    }  # better
    assert _worse(measured) == []


@pytest.mark.unit
def test_a_latency_committed_as_zero_is_worse_once_it_rises() -> None:
    committed = {**COMMITTED, "non-stream.added_p50_ms": -0.2}
    assert [c.name for c in compare(committed, {**committed, "non-stream.added_p50_ms": 0.5}) if c.worse] == [
        "non-stream.added_p50_ms"
    ]
    assert [c.name for c in compare(committed, {**committed, "non-stream.added_p50_ms": -0.5}) if c.worse] == []


@pytest.mark.unit
def test_a_figure_only_one_run_has_is_left_out() -> None:
    measured = {k: v for k, v in COMMITTED.items() if not k.startswith("stream.")}
    assert [c.name for c in compare(COMMITTED, measured)] == [k for k in FIGURES if k.startswith("non-stream.")]
    assert "this run becomes the baseline" in report({}, measured)


@pytest.mark.unit
def test_on_another_machine_only_the_cpu_relative_to_the_upstream_is_judged() -> None:
    """A host where everything took twice the CPU: the absolute figures and the throughput ratio (against a fixed
    upstream delay) move with it, the gateway's CPU over the upstream's does not."""
    slower = {
        **{name: value * 2 for name, value in COMMITTED.items()},
        "non-stream.throughput_vs_direct": 0.80,
        "stream.throughput_vs_direct": 0.75,
        "non-stream.gateway_cpu_vs_upstream": 2.0,
        "stream.gateway_cpu_vs_upstream": 1.5,
    }
    assert _worse(slower) == []
    text = report(COMMITTED, slower)
    assert "took 2.00× its committed CPU per request" in text and "Nothing got worse" in text
    assert "| non-stream.added_p99_ms | 8.000 | 16.000 | +100.0% | *other machine* |" in text
    assert _worse({**slower, "stream.gateway_cpu_vs_upstream": 1.8}) == ["stream.gateway_cpu_vs_upstream"]


@pytest.mark.unit
def test_the_same_machine_within_ten_percent_judges_every_figure() -> None:
    measured = {**COMMITTED, "non-stream.upstream_cpu_ms_per_request": 0.65, "non-stream.added_p50_ms": 1.5}
    assert _worse(measured) == ["non-stream.added_p50_ms"]
    assert "other machine" not in report(COMMITTED, measured)


@pytest.mark.unit
def test_a_committed_run_without_the_upstreams_cpu_judges_every_figure() -> None:
    older = {k: v for k, v in COMMITTED.items() if "upstream_cpu" not in k and "vs_upstream" not in k}
    measured = {**COMMITTED, "non-stream.upstream_cpu_ms_per_request": 5.0, "stream.throughput_vs_direct": 0.5}
    assert _worse(measured) == []  # against COMMITTED: another machine
    assert [c.name for c in compare(older, measured) if c.worse] == ["stream.throughput_vs_direct"]


def _result(target: str, stream: bool, latency_s: float, requests: int, cpu: dict[str, float]) -> LoadResult:
    return LoadResult(target, stream, 10.0, [latency_s] * requests, 0, cpu)


@pytest.mark.unit
def test_a_runs_figures_are_read_against_the_direct_upstream() -> None:
    results = [
        _result("direct", False, 0.010, 1000, {"upstream": 0.6}),
        _result("trustgate", False, 0.012, 800, {"gateway": 0.96, "upstream": 0.5}),
        _result("direct", True, 0.015, 500, {"upstream": 0.5}),
        _result("trustgate", True, 0.020, 400, {"gateway": 0.8, "upstream": 0.4}),
    ]
    figures = headline_figures(results)
    assert figures == pytest.approx(
        {
            "non-stream.throughput_vs_direct": 0.8,
            "non-stream.gateway_cpu_ms_per_request": 1.2,
            "non-stream.upstream_cpu_ms_per_request": 0.6,
            "non-stream.gateway_cpu_vs_upstream": 2.0,
            "non-stream.added_p50_ms": 2.0,
            "non-stream.added_p99_ms": 2.0,
            "stream.throughput_vs_direct": 0.8,
            "stream.gateway_cpu_ms_per_request": 2.0,
            "stream.upstream_cpu_ms_per_request": 1.0,
            "stream.gateway_cpu_vs_upstream": 2.0,
            "stream.added_p50_ms": 5.0,
            "stream.added_p99_ms": 5.0,
        }
    )


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo, check=True, capture_output=True
    )


@pytest.mark.integration
def test_the_comparison_is_with_the_committed_file_not_an_uncommitted_run(tmp_path: Path) -> None:
    baseline = tmp_path / "bench" / "gateway_load.json"
    baseline.parent.mkdir()
    write_figures(COMMITTED, {"date": "then", "upstream": UPSTREAM}, baseline)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "figures")
    write_figures(
        {**COMMITTED, "stream.added_p99_ms": 99.0}, {"date": "now", "upstream": UPSTREAM}, baseline
    )  # a run not committed
    assert committed_figures(baseline, upstream=UPSTREAM) == COMMITTED
    assert json.loads(baseline.read_text())["figures"]["stream.added_p99_ms"] == 99.0


@pytest.mark.integration
def test_without_git_the_file_on_disk_is_the_baseline(tmp_path: Path) -> None:
    baseline = tmp_path / "bench" / "gateway_load.json"
    baseline.parent.mkdir()
    assert committed_figures(baseline, upstream=UPSTREAM) == {}
    write_figures(COMMITTED, {"date": "then", "upstream": UPSTREAM}, baseline)
    assert committed_figures(baseline, upstream=UPSTREAM) == COMMITTED


@pytest.mark.integration
def test_figures_taken_against_another_upstream_are_not_compared(tmp_path: Path) -> None:
    """A constant answer time and a varying one give ratios too far apart to call either a regression."""
    baseline = tmp_path / "bench" / "gateway_load.json"
    baseline.parent.mkdir()
    write_figures(COMMITTED, {"date": "then", "upstream": "12 ms"}, baseline)
    assert committed_figures(baseline, upstream=UPSTREAM) == {}
    assert committed_figures(baseline, upstream="12 ms") == COMMITTED
    write_figures(COMMITTED, {"date": "before the upstream was named"}, baseline)
    assert committed_figures(baseline, upstream=UPSTREAM) == {}


@pytest.mark.integration
def test_the_committed_baseline_holds_every_figure_of_make_benchs_upstream() -> None:
    defaults, _ = gateway_load._parse([])
    assert defaults.upstream_delay == UPSTREAM
    assert set(committed_figures(upstream=UPSTREAM)) == set(FIGURES) | set(REFERENCES)
