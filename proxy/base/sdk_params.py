"""Which request parameters each endpoint forwards, classified against the OpenAI SDK's own request types.

Every body parameter the installed ``openai`` package documents for an
endpoint is either forwarded or refused here, by name, with the reason; a test
(``tests/proxy/endpoints/test_sdk_params.py``) fails when the SDK gains one that is in
neither set, so the list cannot drift from the SDK unnoticed again.

Parameters outside the SDK are refused, and some by name on every endpoint:
the LiteLLM-specific ones that would let a client pick the upstream URL, the
key, the provider or a canned answer (they were SSRF and key-leak holes in
LiteLLM's own proxy).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Literal

__all__ = ["CLIENT_STEERING", "FORWARDED", "REFUSED", "Endpoint"]

Endpoint = Literal["chat", "completions", "embeddings", "responses"]

# Never forwarded from a client, on any endpoint: each chooses where the call
# goes, with which credentials, or what it answers.
CLIENT_STEERING = frozenset(
    {
        "api_base",
        "base_url",
        "api_key",
        "api_version",
        "organization",
        "custom_llm_provider",
        "extra_headers",
        "extra_body",
        "extra_query",
        "headers",
        "mock_response",
        "mock_tool_calls",
        "fallbacks",
        "context_window_fallbacks",
        "content_policy_fallbacks",
        "model_list",
        "metadata_router",
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_region_name",
        "vertex_credentials",
        "vertex_project",
        "azure_ad_token",
        "timeout",
        "num_retries",
        "use_chat_completions_api",
        "litellm_params",
        "input_cost_per_token",
        "output_cost_per_token",
        "proxy_server_request",
        "user_api_key",
    }
)

_CHAT = frozenset(
    {
        "model",
        "messages",
        "stream",
        "stream_options",
        "temperature",
        "top_p",
        "n",
        "stop",
        "max_tokens",
        "max_completion_tokens",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "user",
        "seed",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "functions",
        "function_call",
        "reasoning_effort",
        "modalities",
        "audio",
        "prediction",
        "service_tier",
        "store",
        "verbosity",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "safety_identifier",
        "web_search_options",
        "metadata",
        "moderation",
    }
)

_COMPLETIONS = frozenset(
    {
        "model",
        "prompt",
        "stream",
        "stream_options",
        "best_of",
        "echo",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "max_tokens",
        "n",
        "presence_penalty",
        "seed",
        "stop",
        "suffix",
        "temperature",
        "top_p",
        "user",
    }
)

_EMBEDDINGS = frozenset({"model", "input", "dimensions", "encoding_format", "user"})

_RESPONSES = frozenset(
    {
        "model",
        "input",
        "instructions",
        "stream",
        "stream_options",
        "include",
        "max_output_tokens",
        "max_tool_calls",
        "metadata",
        "moderation",
        "parallel_tool_calls",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning",
        "safety_identifier",
        "service_tier",
        "store",
        "temperature",
        "text",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "truncation",
        "user",
        "context_management",
        # state in the operator's upstream account: forwarded only for keys allowed it (proxy.endpoints.account_refs)
        "previous_response_id",
        "conversation",
        "prompt",
    }
)

FORWARDED: MappingProxyType[Endpoint, frozenset[str]] = MappingProxyType(
    {
        "chat": _CHAT,
        "completions": _COMPLETIONS,
        "embeddings": _EMBEDDINGS,
        "responses": _RESPONSES,
    }
)

# SDK parameters refused on purpose, for every key. (Fields naming objects in the
# operator's upstream account, such as previous_response_id, are refused unless a
# key is allowed them: proxy.endpoints.account_refs lists those.)
_RESPONSES_REFUSED = MappingProxyType(
    {
        "background": "a queued job read back from GET /v1/responses/{id}, which the gateway does not serve",
    }
)

REFUSED: MappingProxyType[Endpoint, MappingProxyType[str, str]] = MappingProxyType(
    {
        "chat": MappingProxyType({}),
        "completions": MappingProxyType({}),
        "embeddings": MappingProxyType({}),
        "responses": _RESPONSES_REFUSED,
    }
)
