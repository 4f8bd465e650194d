"""The ready banner: where the gateway listens and what to paste, without leaking an operator's key."""

from __future__ import annotations

from proxy import default_config_path, load_settings, settings_from_dict
from proxy.banner import ready_banner
from tests.conftest import gateway_config


def test_the_default_banner_shows_the_demo_key_a_curl_and_an_sdk_snippet() -> None:
    banner = ready_banner(load_settings(default_config_path(), {}), "127.0.0.1", 4000)
    assert "TrustGate is ready on http://127.0.0.1:4000" in banner
    assert "authorization: Bearer sk-trustgate-local" in banner
    assert "curl -s -D - http://127.0.0.1:4000/v1/chat/completions" in banner
    assert "x-trustgate-mode: sync" in banner and "x-trust-score" in banner
    assert 'OpenAI(base_url="http://127.0.0.1:4000/v1", api_key="sk-trustgate-local")' in banner
    assert "http://127.0.0.1:4000/v1/trust/" in banner


def test_an_operator_key_is_never_printed() -> None:
    settings = settings_from_dict(gateway_config("http://127.0.0.1:9"), {})  # master key sk-test-master
    banner = ready_banner(settings, "0.0.0.0", 8080)
    assert "sk-test-master" not in banner and "$TRUSTGATE_KEY" in banner
    assert "http://127.0.0.1:8080" in banner  # a wildcard bind is reached on loopback
