"""The console's pages and fragments over HTTP: the shell needs no key, fragments need one and follow ownership."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

import console
from scoring.types import ComponentResult, TrustRecord
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread
from tests.stored_records import KEYS, stored

pytestmark = pytest.mark.integration

QUESTION = "What is the capital of France? <script>alert(1)</script>"


def explained_record(now: float) -> TrustRecord:
    """A record shaped as the real scorers write it (see tests/e2e/test_trust_scores.py)."""
    checks = [
        {
            "options": [
                "Lyon is the capital.",
                "Paris is the capital.",
                "Nice is the capital.",
                "Metz is the capital.",
                "None of the above.",
            ],
            "original": "B",
            "chosen": chosen,
            "consistent": chosen == "B",
            "original_probability": None,
            "reply": chosen,
        }
        for chosen in ("B", "C")
    ]
    bc = ComponentResult(
        component="bc",
        value=0.5,
        label="inconsistent",
        upstream_calls=2,
        duration_s=0.4,
        details={"mode": "graded", "binary": 0.0, "graded": 0.5, "stop_reason": "max_checks", "checks": checks},
    )
    fc = ComponentResult(
        component="fc",
        value=0.0,
        label="contradict",
        upstream_calls=1,
        duration_s=0.2,
        details={
            "query": "capital France Paris",
            "judge": "llm",
            "label": "contradict",
            "label_probs": {"support": 0.0, "neutral": 0.0, "contradict": 1.0},
            "probs_from": "label",
            "judge_reply": "contradict",
            "evidence": [
                {
                    "id": "wikipedia:Paris",
                    "title": "Paris",
                    "score": 7.25,
                    "snippet": "Paris is the capital and largest city of France.",
                }
            ],
        },
    )
    ov = ComponentResult(
        component="ov",
        value=0.1,
        label="inconsistent+contradict",
        details={"source": "bc+fc", "table3": 0.0, "graded": 0.1, "consistent": False, "fc_label": "contradict"},
    )
    return TrustRecord(
        id="trust-explained",
        status="done",
        model="fake",
        owner="alice",
        score=0.1,
        label="untrusted",
        components={"bc": bc, "fc": fc, "ov": ov},
        created_at=now - 5,
        finished_at=now - 4,
        timings={"queued_s": 0.01, "scoring_s": 0.6},
        question=QUESTION,
        answer="Paris is the capital of France.",
    )


def rag_record(now: float) -> TrustRecord:
    rag = ComponentResult(
        component="rag",
        value=0.75,
        label="answer",
        upstream_calls=3,
        duration_s=0.3,
        details={
            "kind": "answer",
            "citation_recall": 1.0,
            "citation_precision": 0.5,
            "citation_f1": 0.667,
            "groundedness": 1.0,
            "refusal_grounded": None,
            "claim_correctness": None,
            "statements": [
                {
                    "text": "Paris is the capital [1][2].",
                    "citations": ["1", "2"],
                    "refusal": False,
                    "judged": True,
                    "grounding": "support",
                    "recall": 1.0,
                    "precision": [1, 2],
                }
            ],
        },
    )
    return TrustRecord(
        id="trust-rag",
        status="done",
        model="fake",
        owner="alice",
        score=0.75,
        label="trusted",
        components={"rag": rag},
        created_at=now - 10,
        question="Where?",
        answer="Paris [1][2].",
    )


@pytest.fixture
def console_gateway(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> ServerThread:
    now = time.time()
    path = tmp_path / "console.sqlite3"
    stored(
        path,
        [
            explained_record(now),
            rag_record(now),
            TrustRecord(
                id="trust-bobs",
                status="done",
                model="fake",
                owner="bob",
                score=0.9,
                label="trusted",
                created_at=now - 3,
                question="Bob's question",
                answer="Bob's answer",
            ),
        ],
    )
    config = gateway_config(
        fake_upstream.url,  # type: ignore[attr-defined]
        trustgate={"keys": KEYS, "store": {"path": str(path)}},
    )
    return start_gateway(config, mounts=[console.mount])


def fragment(server: ServerThread, path: str, key: str | None = "sk-alice") -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return httpx.get(f"{server.url}/ui/partials/{path}", headers=headers, timeout=10)


@pytest.mark.parametrize("path", ["/ui", "/ui/records", "/ui/records/trust-explained"])
def test_the_shell_is_served_without_a_key_and_holds_no_data(console_gateway: ServerThread, path: str) -> None:
    response = httpx.get(console_gateway.url + path)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert "Paris" not in response.text and 'type="password"' in response.text
    assert "default-src 'self'" in response.headers["content-security-policy"]
    assert httpx.get(console_gateway.url + "/ui/static/console.js").status_code == 200


def test_fragments_need_a_key(console_gateway: ServerThread) -> None:
    assert fragment(console_gateway, "records", key=None).status_code == 401
    assert fragment(console_gateway, "overview", key="sk-wrong").status_code == 401


def test_records_fragment_lists_the_callers_records(console_gateway: ServerThread) -> None:
    alice = fragment(console_gateway, "records?label=untrusted").text
    assert "trust-explained" in alice and "trust-bobs" not in alice
    assert "badge-untrusted" in alice and "What is the capital of France?" in alice
    assert "<script>alert" not in alice and "&lt;script&gt;" in alice  # answers are text, never markup
    assert "trust-bobs" in fragment(console_gateway, "records", key=MASTER_KEY).text
    assert "No records match" in fragment(console_gateway, "records?label=uncertain").text
    bad = fragment(console_gateway, "records?label=nonsense")
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "label"


def test_record_fragment_explains_each_component(console_gateway: ServerThread) -> None:
    page = fragment(console_gateway, "records/trust-explained").text
    assert len(re.findall(r'<li class="check ', page)) == 2
    assert page.count("original answer") == 2 and page.count(">chosen<") == 2
    assert 'stopped: <strong class="stop">max_checks</strong>' in page
    assert "Paris is the capital and largest city of France." in page and "7.25" in page
    assert "inconsistent</strong> ×\n      <strong>contradict</strong>" in page
    assert "Paris is the capital of France." in page


def test_record_fragment_shows_rag_metrics_per_statement(console_gateway: ServerThread) -> None:
    page = fragment(console_gateway, "records/trust-rag").text
    assert "Paris is the capital [1][2]." in page and "1, 2" in page and "1/2" in page
    assert "citation precision 0.50" in page and "groundedness 1.00" in page and "claim correctness —" in page


def test_another_keys_record_is_not_found(console_gateway: ServerThread) -> None:
    response = fragment(console_gateway, "records/trust-explained", key="sk-bob")
    assert response.status_code == 404
    assert fragment(console_gateway, "records/trust-explained", key=MASTER_KEY).status_code == 200


def test_overview_fragment_draws_the_window(console_gateway: ServerThread) -> None:
    page = fragment(console_gateway, "overview?window=1h").text
    assert "3 records" not in page and "2 records\n" in page  # alice sees her two records only
    assert page.count('<rect class="bar') == 10 and "<polyline" in page
    assert fragment(console_gateway, "overview?window=1y").status_code == 400


def test_the_overview_shows_what_each_models_answers_and_their_scoring_cost(console_gateway: ServerThread) -> None:
    """To a caller who reads every key's records: the spend is every key's (the model is priced by litellm's map)."""
    answered = httpx.post(
        f"{console_gateway.url}/v1/chat/completions",
        headers={"authorization": "Bearer sk-alice"},
        json={"model": "fake", "messages": [{"role": "user", "content": "one two three"}]},
        timeout=20,
    )
    cost = float(answered.headers["x-trustgate-response-cost"])
    page = fragment(console_gateway, "overview?window=1h", key=MASTER_KEY).text
    assert "<h2>Spend</h2>" in page
    assert f"<tr><td>fake</td><td>${cost:.6f}</td><td>$0.00</td>" in page and "<td>0%</td>" in page
    assert "<h2>Spend</h2>" not in fragment(console_gateway, "overview?window=1h").text  # alice: her records only


def test_a_record_of_the_debiased_choice_and_fitted_procedures_is_explained(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    """The details of debiased Trust_BC, the yes/no judge, lp and a fitted Trust_OV render; lp as a plain part."""
    now = time.time()
    record = explained_record(now)
    bc, fc = record.components["bc"], record.components["fc"]
    debiased = bc.model_copy(
        update={
            "label": "uncertain",
            "details": bc.details.model_copy(
                update={  # type: ignore[union-attr]
                    "procedure": "debiased",
                    "debiased": 0.5,
                    "kappa": 0.0,
                    "letter_prior": {"B": 0.5, "C": 0.5},
                }
            ),
        }
    )
    choice = fc.model_copy(
        update={
            "details": fc.details.model_copy(
                update={  # type: ignore[union-attr]
                    "judge": "llm-choice",
                    "raw_label_probs": {"support": 0.1, "contradict": 0.9, "neutral": 0.0},
                }
            )
        }
    )
    choice = choice.model_copy(
        update={
            "details": choice.details.model_copy(
                update={  # type: ignore[union-attr]
                    "judge_prior": {"support": 0.7, "contradict": 0.3}
                }
            )
        }
    )
    lp = ComponentResult(
        component="lp",
        value=0.8125,
        details={
            "mean_logprob": -0.2076,
            "min_logprob": -1.5,
            "mean_probability": 0.8125,
            "min_probability": 0.2231,
            "tokens": 7,
        },
    )
    ov = ComponentResult(
        component="ov",
        value=0.3,
        details={
            "source": "bc+lp",
            "method": "fitted",
            "features": {"bc": 0.5, "lp_mean": -0.2076},
            "weights": {"bc": 2.0, "lp_mean": 1.25},
        },
    )
    record = record.model_copy(
        update={"id": "trust-fitted", "components": {"bc": debiased, "fc": choice, "lp": lp, "ov": ov}}
    )
    path = tmp_path / "console.sqlite3"
    stored(path, [record])
    server = start_gateway(
        gateway_config(
            fake_upstream.url,  # type: ignore[attr-defined]
            trustgate={"keys": KEYS, "store": {"path": str(path)}},
        ),
        mounts=[console.mount],
    )
    response = fragment(server, "records/trust-fitted")
    assert response.status_code == 200
    page = response.text
    assert len(re.findall(r'<li class="check ', page)) == 2 and "llm-choice" in page
    # Trust_BC: the procedure, the debiased value, kappa and the letter prior it discounts
    assert "Procedure <strong>debiased</strong>" in page and '<strong class="debiased">0.500</strong>' in page
    assert '<strong class="kappa">0.000</strong>' in page
    assert re.search(r'<span class="letter">B</span> 0\.50 · <span class="letter">C</span> 0\.50', page)
    # the yes/no judge before debiasing, and its content-free prior
    assert re.search(r"Before debiasing:\s+support 0\.100, contradict 0\.900, neutral 0\.000", page)
    assert "support 0.700, contradict 0.300" in page
    # lp in its own section, not as a bare component
    assert 'id="lp-title"' in page and 'aria-label="Component lp"' not in page
    assert "Mean token probability <strong>0.812</strong>" in page and "<strong>0.223</strong>" in page
    assert "7 tokens" in page
    # the fitted Trust_OV: what fed it, each input with its weight
    assert re.search(r"Fitted combination\s+of <strong>bc \+ lp</strong>", page)
    assert "<td>lp_mean</td><td>-0.208</td><td>1.250</td>" in page and "<td>bc</td><td>0.500</td><td>2.000</td>" in page


def test_a_records_label_is_shown_set_through_the_api_and_filtered(console_gateway: ServerThread) -> None:
    unlabelled = fragment(console_gateway, "records/trust-explained").text
    assert "Not labelled yet." in unlabelled
    assert 'action="/v1/trust/trust-explained/feedback" data-feedback' in unlabelled
    comment = "Paris <b>is</b> right"
    labelled = httpx.post(
        f"{console_gateway.url}/v1/trust/trust-explained/feedback",
        timeout=10,
        headers={"authorization": "Bearer sk-alice"},
        json={"correct": True, "score": 0.9, "comment": comment},
    )
    assert labelled.status_code == 200
    page = fragment(console_gateway, "records/trust-explained").text
    assert '<strong class="feedback-correct">correct</strong>' in page and "score 0.90" in page
    assert "Paris &lt;b&gt;is&lt;/b&gt; right" in page and "<b>is</b>" not in page  # a comment is text, too
    assert "Relabel" in page
    only_labelled = fragment(console_gateway, "records?labelled=true").text
    assert "trust-explained" in only_labelled and "trust-rag" not in only_labelled
    assert '<span class="feedback-correct">correct</span>' in only_labelled
    only_unlabelled = fragment(console_gateway, "records?labelled=false").text
    assert "trust-rag" in only_unlabelled and "trust-explained" not in only_unlabelled
    assert '<option value="false" selected>unlabelled</option>' in only_unlabelled


def test_a_record_that_was_not_scored_offers_no_label(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    path = tmp_path / "skipped.sqlite3"
    stored(path, [TrustRecord(id="trust-skipped", status="skipped", model="fake", owner="alice")])
    server = start_gateway(
        gateway_config(
            fake_upstream.url,  # type: ignore[attr-defined]
            trustgate={"keys": KEYS, "store": {"path": str(path)}},
        ),
        mounts=[console.mount],
    )
    page = fragment(server, "records/trust-skipped").text
    assert "data-feedback" not in page and "A skipped record takes no feedback." in page
