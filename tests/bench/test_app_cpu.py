"""``bench.app_cpu``: a version's app, called in-process over a real fake upstream, has its CPU per request
measured for both modes, from that version's own sources."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.app_cpu import main

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def test_each_version_and_mode_gets_a_median_of_its_rounds(capsys: pytest.CaptureFixture[str]) -> None:
    """The same sources twice, unpriced then priced: each gets its rows, and its median over the first's."""
    assert main(["--unpriced", str(REPO), "--checkout", str(REPO), "--rounds", "2", "--requests", "100"]) == 0
    rows = re.findall(
        r"^\| (\d) \((.+?)\) \| (non-stream|stream) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+), ([\d.]+) \|$",
        capsys.readouterr().out,
        re.MULTILINE,
    )
    assert [(version, name.endswith("(unpriced)"), mode) for version, name, mode, *_ in rows] == [
        ("1", True, "non-stream"),
        ("2", False, "non-stream"),
        ("1", True, "stream"),
        ("2", False, "stream"),
    ]
    medians = {(version, mode): float(median) for version, _, mode, median, *_ in rows}
    for _, _, mode, median, ratio, first, second in rows:
        assert 0 < float(median) == pytest.approx((float(first) + float(second)) / 2, abs=0.1)
        assert float(ratio) == pytest.approx(float(median) / medians[("1", mode)], abs=0.01)


def test_a_version_that_cannot_serve_stops_the_run_with_its_error(tmp_path: Path) -> None:
    """A folder without the gateway's sources: the installed gateway is not measured in its place."""
    with pytest.raises(SystemExit, match="not from the version in"):
        main(["--checkout", str(tmp_path), "--rounds", "1", "--requests", "10"])
