"""The links a per-answer alert carries: the console's address joined however the operator wrote it, and the
runbook's section on the configured runbooks page."""

from __future__ import annotations

import pytest

from exporters.alertmanager import (
    ALERT_NAME,
    DEFAULT_RUNBOOKS_URL,
    AlertmanagerSettings,
    alert_for,
    console_link,
    runbook_link,
)
from scoring import TrustRecord

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "console_url",
    ["https://gw.example.com", "https://gw.example.com/", "https://gw.example.com/ui", "https://gw.example.com/ui/"],
)
def test_the_console_link_is_the_records_page_whether_or_not_the_address_ends_in_ui(console_url: str) -> None:
    assert console_link(console_url, "rec-1") == "https://gw.example.com/ui/records/rec-1"


def test_the_console_link_keeps_a_path_prefix_and_is_relative_without_an_address() -> None:
    assert console_link("https://example.com/gateway/ui", "rec-1") == "https://example.com/gateway/ui/records/rec-1"
    assert console_link("https://example.com/build", "rec-1") == "https://example.com/build/ui/records/rec-1"
    assert console_link("", "rec-1") == "/ui/records/rec-1"
    assert console_link("https://gw", "a/b?c") == "https://gw/ui/records/a%2Fb%3Fc"


def test_the_runbook_link_is_the_alerts_section_of_the_runbooks_page() -> None:
    assert runbook_link("https://docs.example.com/runbooks/", "TrustGateLowTrustAnswer") == (
        "https://docs.example.com/runbooks/#trustgatelowtrustanswer"
    )
    assert runbook_link("https://docs.example.com/runbooks/#top", "X") == "https://docs.example.com/runbooks/#x"


def test_an_alert_links_the_published_runbooks_unless_told_otherwise() -> None:
    record = TrustRecord(id="rec-1", status="done", model="m", label="untrusted", created_at=1.0)
    alert = alert_for(record, AlertmanagerSettings(console_url="https://gw/ui"))
    assert alert is not None
    assert alert["annotations"]["runbook_url"] == f"{DEFAULT_RUNBOOKS_URL}#{ALERT_NAME.lower()}"
    assert alert["annotations"]["console_url"] == alert["generatorURL"] == "https://gw/ui/records/rec-1"
    mine = alert_for(record, AlertmanagerSettings(runbooks_url="http://docs.internal/runbooks/"))
    assert (
        mine is not None
        and mine["annotations"]["runbook_url"] == "http://docs.internal/runbooks/#trustgatelowtrustanswer"
    )


def test_the_runbooks_page_is_a_url() -> None:
    with pytest.raises(ValueError, match="runbooks_url"):
        AlertmanagerSettings(runbooks_url="docs/runbooks.md")
