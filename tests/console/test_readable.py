"""The console reads without help, in a real headless Chromium, at desktop and phone width.

The gateway's store holds a day of earlier records (two model groups, traffic with a quiet spell of several
hours and a quiet last hour) and two answers scored just now by the real scorers over the fake upstream; its
fits file holds a learned combination for one group. A person then finds:

- every chart's axes labelled, with the unit, and their labels inside the chart, readable on a phone too;
- the low-trust rate as a line over the whole window, in steps, with the quiet hours left as gaps;
- each record of the list with its field names on a phone, where the table's header row is hidden;
- the console's icon (no ``favicon.ico`` 404 in a session).

The screenshots of each view at desktop and phone width in the README and the docs are taken here: set
``CONSOLE_SCREENSHOTS_DIR=docs/console`` to refresh them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image
from prometheus_client import CollectorRegistry

import console
from exporters import SqliteRecordStore
from proxy import create_app, server_options, settings_from_dict
from scoring.learning.report import CalibrationReport, LearnedFit, ScoreQuality
from scoring.learning.store import SqliteFitStore
from scoring.types import TrustRecord
from tests.conftest import MASTER_KEY, gateway_config
from tests.console.browser import PHONE, chromium, log_in, missing_browser, phone, screenshot, wait_for
from tests.console.scripted_model import (
    DATA_DIR,
    TRUSTED_QUESTION,
    UNTRUSTED_QUESTION,
    ask,
    assets_missing,
    model_behaviour,
)
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(missing_browser() is not None, reason=str(missing_browser())),
    pytest.mark.skipif(assets_missing(), reason="scoring assets not built: `make install` builds them"),
]

HOUR = 3600
RATE_CHART = "section[aria-labelledby=rate-title] svg"  # the low-trust rate over time
BUCKETS = 24  # the overview's 24 h window in hourly steps
# Earlier traffic, by hours ago: (model, untrusted answers, trusted answers). Nothing 16 to 9 hours ago, nor in
# the last hour (the two live answers land in the newest bucket, after a quiet one).
HISTORY = {
    20: ("fake", 1, 5),
    19: ("fake", 0, 6),
    18: ("backup", 2, 4),
    17: ("fake", 1, 7),
    8: ("backup", 0, 5),
    7: ("fake", 3, 3),
    6: ("fake", 1, 6),
    5: ("backup", 1, 4),
    4: ("fake", 0, 8),
    3: ("fake", 2, 5),
    2: ("backup", 1, 6),
}
# Buckets (oldest first) with scored records: the runs the line must draw, and the gaps between them.
RUNS = [(3, 6), (15, 21), (23, 23)]
DESKTOP = (1280, 900)


QUESTIONS = [
    ("Which river flows through Paris?", "The Seine flows through Paris."),
    ("Who wrote Les Misérables?", "Victor Hugo wrote Les Misérables."),
    ("What is the boiling point of water at sea level?", "Water boils at 100 °C at sea level."),
    ("Which planet is closest to the Sun?", "Mercury is the closest planet to the Sun."),
    ("When did the Berlin Wall fall?", "The Berlin Wall fell in 1989."),
    ("What is the largest ocean on Earth?", "The Pacific is the largest ocean."),
    ("Who painted the Mona Lisa?", "Leonardo da Vinci painted the Mona Lisa."),
    ("What is the chemical symbol for gold?", "Au is the chemical symbol for gold."),
]


def history(now: float) -> list[TrustRecord]:
    records = []
    for hours, (model, untrusted, trusted) in HISTORY.items():
        for n in range(untrusted + trusted):
            low = n < untrusted
            question, answer = QUESTIONS[(hours + n) % len(QUESTIONS)]
            records.append(
                TrustRecord(
                    id=f"trust-{hours}h-{n}",
                    status="done",
                    model=model,
                    owner="master",
                    score=0.12 + 0.03 * n if low else 0.62 + 0.04 * n,
                    label="untrusted" if low else "trusted",
                    created_at=now - hours * HOUR - 900 - 60 * n,
                    finished_at=now - hours * HOUR - 890 - 60 * n,
                    question=question,
                    answer=answer,
                )
            )
    return records


def _quality(roc: list[tuple[float, float]], reliability: list[tuple[float, float, int]], area: float) -> ScoreQuality:
    return ScoreQuality(n=120, auroc=area, ece=0.06, cross_validated=True, roc=roc, reliability=reliability)


def learned_report() -> CalibrationReport:
    """A learned combination that beats the default on 120 labels of group ``backup``."""
    return CalibrationReport(
        model="backup",
        labels=120,
        positives=84,
        combination="fitted",
        reason="it ranks the labelled answers better than the default (AUROC 0.86 against 0.74)",
        informative=True,
        fit=LearnedFit(id="fit_backup_1", features=("bc", "fc"), weights=(5.1, 2.2), intercept=-3.9),
        scores={
            "ov": _quality(
                [(0.0, 0.0), (0.1, 0.35), (0.3, 0.62), (0.6, 0.85), (1.0, 1.0)],
                [(0.15, 0.3, 20), (0.5, 0.55, 40), (0.85, 0.8, 60)],
                0.74,
            ),
            "fitted": _quality(
                [(0.0, 0.0), (0.05, 0.45), (0.2, 0.78), (0.45, 0.93), (1.0, 1.0)],
                [(0.1, 0.12, 25), (0.45, 0.48, 35), (0.9, 0.88, 60)],
                0.86,
            ),
        },
        fitted_at=time.time(),
    )


async def _seed(store_path: Path, records: list[TrustRecord]) -> None:
    store = SqliteRecordStore(store_path, max_age_s=7 * 86400, max_records=10_000)
    await store.open()
    for record in records:
        await store.put(record)
    await store.close()
    fits = SqliteFitStore(store_path)  # a store's fits live beside its labels
    await fits.put(learned_report())
    await fits.close()


@pytest.fixture(scope="module")
def console_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    """The gateway with the console, its history seeded, and two answers just scored by the real scorers."""
    workdir = tmp_path_factory.mktemp("console")
    asyncio.run(_seed(workdir / "records.sqlite3", history(time.time())))
    fake = FakeUpstream()
    fake.responder = model_behaviour
    with ServerThread(fake.app()) as upstream:
        config = gateway_config(
            upstream.url,
            trustgate={
                "store": {"path": str(workdir / "records.sqlite3")},
                "scoring": {
                    "data_dir": str(DATA_DIR),
                    "mode": "sync",
                    "combine": "paper",
                    "consistency": {"max_checks": 4, "seed": 7},
                },
            },
        )
        config["model_list"].append({**config["model_list"][0], "model_name": "backup"})
        settings = settings_from_dict(config, {})
        app = create_app(settings, registry=CollectorRegistry(), scorers=None, mounts=[console.mount])
        gateway = ServerThread(app, **server_options(settings.trustgate.server)).start(timeout=180)
        try:
            for question in (TRUSTED_QUESTION, UNTRUSTED_QUESTION):
                assert ask(gateway, MASTER_KEY, question) == "done"
            yield gateway
        finally:
            gateway.stop()


@pytest.fixture
def desktop(tmp_path: Path, console_server: ServerThread) -> Iterator[Any]:
    with chromium(tmp_path / "desktop", *DESKTOP) as driver:
        log_in(driver, console_server, MASTER_KEY)
        yield driver


@pytest.fixture
def handset(tmp_path: Path, console_server: ServerThread) -> Iterator[Any]:
    with phone(tmp_path / "phone") as driver:
        log_in(driver, console_server, MASTER_KEY)
        yield driver


def show(driver: Any, server: ServerThread, path: str, ready: str) -> None:
    driver.get(f"{server.url}{path}")
    wait_for(driver, ready)


# Each chart's axis titles and tick labels as Chromium lays them out: text, box in the view box and on screen.
CHART_TEXTS = """
return [...document.querySelectorAll('svg.chart')].map(svg => {
  const box = svg.viewBox.baseVal;
  const texts = sel => [...svg.querySelectorAll(sel)].map(t => {
    const b = t.getBBox(), r = t.getBoundingClientRect();
    return {text: t.textContent.trim(), inside: b.x >= 0 && b.y >= 0 && b.x + b.width <= box.width
            && b.y + b.height <= box.height, width: b.width, pixels: r.height};
  });
  return {label: svg.getAttribute('aria-label'), x: texts('.x-title'), y: texts('.y-title'),
          xTicks: texts('.x-tick'), yTicks: texts('.y-tick')};
});
"""


def labelled_axes(driver: Any) -> list[dict[str, Any]]:
    charts: list[dict[str, Any]] = driver.execute_script(CHART_TEXTS)
    assert charts, "no chart on the page"
    for chart in charts:
        for axis in ("x", "y"):
            (title,) = chart[axis]
            assert "(" in title["text"] and title["text"].endswith(")"), f"{chart['label']}: {axis} has no unit"
            assert len(chart[f"{axis}Ticks"]) >= 2, f"{chart['label']}: {axis} axis has no scale"
        for text in chart["x"] + chart["y"] + chart["xTicks"] + chart["yTicks"]:
            assert text["text"] and text["width"] > 0 and text["inside"], f"{chart['label']}: {text} is cut off"
    return charts


def test_every_chart_labels_its_axes_with_units(desktop: Any, console_server: ServerThread) -> None:
    show(desktop, console_server, "/ui", "svg.chart")
    charts = labelled_axes(desktop)
    assert len(charts) == 3  # the rate over time and the two models' histograms
    rate = next(chart for chart in charts if "untrusted answers per time bucket" in chart["label"])
    assert (rate["x"][0]["text"], rate["y"][0]["text"]) == ("Time (UTC)", "Untrusted answers (%)")
    assert [tick["text"] for tick in rate["yTicks"]] == ["0%", "50%", "100%"]
    show(desktop, console_server, "/ui/calibration", "svg.chart")
    titles = {(chart["x"][0]["text"], chart["y"][0]["text"]) for chart in labelled_axes(desktop)}
    assert titles == {
        ("False positive rate (0–1)", "True positive rate (0–1)"),
        ("Mean score (0–1)", "Answers right (%)"),
    }


def test_the_rate_charts_labels_stay_readable_on_a_phone(handset: Any, console_server: ServerThread) -> None:
    show(handset, console_server, "/ui", RATE_CHART)
    rate = next(chart for chart in labelled_axes(handset) if "per time bucket" in chart["label"])
    smallest = min(text["pixels"] for text in rate["xTicks"] + rate["yTicks"] + rate["x"] + rate["y"])
    assert smallest >= 9, f"labels {smallest:.1f} px high on a phone"


RATE_LINE = """
const svg = document.querySelector('section[aria-labelledby=rate-title] svg');
const axis = svg.querySelector('line.axis');
return {left: axis.x1.baseVal.value, right: axis.x2.baseVal.value,
        runs: [...svg.querySelectorAll('polyline.rate')].map(p => [...p.points].map(pt => pt.x)),
        ticks: [...svg.querySelectorAll('.x-tick')].map(t => t.textContent)};
"""


def test_the_rate_line_spans_the_window_and_leaves_quiet_hours_as_gaps(
    desktop: Any, console_server: ServerThread
) -> None:
    requested = time.time()
    show(desktop, console_server, "/ui?window=24h", RATE_CHART)
    line = desktop.execute_script(RATE_LINE)
    step = (line["right"] - line["left"]) / BUCKETS
    drawn = [
        (round((min(xs) - line["left"]) / step), round((max(xs) - line["left"]) / step) - 1) for xs in line["runs"]
    ]
    assert drawn == RUNS  # one line per run of hours with scored answers, each hour drawn across its width
    ends = [
        {time.strftime("%H:%M", time.gmtime(at + late)) for late in (0, 60)}
        for at in (requested - 24 * HOUR, requested)
    ]
    assert line["ticks"][0] in ends[0] and line["ticks"][-1] in ends[1], line["ticks"]  # the whole window


FIELD_NAMES = """
const names = [...document.querySelectorAll('table.records thead th')].map(th => th.textContent.trim());
return {names, rows: [...document.querySelectorAll('table.records tbody tr')].slice(0, 4).map(
  tr => [...tr.querySelectorAll('td')].map(td => td.innerText.trim()))};
"""


def test_each_record_keeps_its_field_names_on_a_phone(handset: Any, desktop: Any, console_server: ServerThread) -> None:
    show(handset, console_server, "/ui/records", "table.records tbody tr")
    table = handset.execute_script(FIELD_NAMES)
    assert table["names"][:4] == ["Time (UTC)", "Model", "Key", "Score"]
    for row in table["rows"]:
        for name, cell in zip(table["names"], row, strict=True):
            assert cell.startswith(name) and cell != name, f"{name!r} not beside its value: {row}"
    assert handset.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    show(desktop, console_server, "/ui/records", "table.records tbody tr")
    cells = desktop.execute_script(FIELD_NAMES)["rows"][0]
    assert not cells[1].startswith("Model")  # on a desktop the header row names the columns


ICONS = """
const done = arguments[arguments.length - 1];
const link = document.querySelector('link[rel~=icon]');
Promise.all([link ? link.href : '/ui/static/none', '/favicon.ico'].map(url => fetch(url).then(
  r => [url, r.status, r.headers.get('content-type')]))).then(done);
"""


def test_the_console_has_an_icon(desktop: Any, console_server: ServerThread) -> None:
    show(desktop, console_server, "/ui", "#overview-title")
    (linked, _, linked_type), (_, default_status, default_type) = desktop.execute_async_script(ICONS)
    assert linked.endswith(".svg") and linked_type == "image/svg+xml"
    assert (default_status, default_type) == (200, "image/x-icon")


VIEWS = {  # name: (path, what shows it is drawn)
    "overview": ("/ui", RATE_CHART),
    "records": ("/ui/records?limit=12", "table.records tbody tr"),
    "record": (None, "ol.checks > li.check"),
    "calibration": ("/ui/calibration", "svg.chart"),
}


def test_screenshots_of_each_view_at_desktop_and_phone_width(
    desktop: Any, handset: Any, console_server: ServerThread, tmp_path: Path
) -> None:
    untrusted = httpx.get(
        f"{console_server.url}/v1/trust",
        params={"label": "untrusted", "model": "fake", "limit": 1},
        headers={"authorization": f"Bearer {MASTER_KEY}"},
    ).json()["data"][0]
    assert untrusted["question"] == UNTRUSTED_QUESTION  # the live answer, scored by the real scorers
    for name, (path, ready) in VIEWS.items():
        for driver, suffix, width in ((desktop, "", DESKTOP[0]), (handset, "-phone", PHONE[0])):
            show(driver, console_server, path or f"/ui/records/{untrusted['id']}", ready)
            fits = "return [window.innerWidth, document.documentElement.scrollWidth <= window.innerWidth]"
            assert driver.execute_script(fits) == [width, True], f"{name}{suffix} is wider than the screen"
            with Image.open(screenshot(driver, tmp_path, name + suffix)) as shot:
                assert shot.width == width and shot.height >= 600
    desktop.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
    )
    show(desktop, console_server, f"/ui/records/{untrusted['id']}", VIEWS["record"][1])
    screenshot(desktop, tmp_path, "record-dark")
