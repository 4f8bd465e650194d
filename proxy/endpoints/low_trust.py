"""Act on an answer before it leaves (sync mode): block it, or escalate the request once.

The route has the answer, its record and a way to ask another model group
(``Ask``); the policy decides what happens (``scoring.policy.outcome``): a
low-trust answer gets the policy's action, an answer with no score (skipped,
pending past the sync wait, shed, failed, or with tool calls, whose arguments
are not scored) its ``unscored`` rule, a not applicable one its
``not_applicable`` rule. This module serves that (``Served``) and marks the
records (``TrustService.mark``): the action, and each escalation record naming
the other. An escalation goes through the same key checks as any request: the
key's model list, its rpm / tpm / parallel limits (the second call is admitted
like a new request, and its tokens count), and it runs under
``escalation_timeout_s`` — past it, or on any upstream error, the first answer
goes back marked ``escalation_failed``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import orjson

from exporters import trust_headers
from scoring import CallCost, LowTrust, ThrottledLog, TrustAction, TrustRecord, outcome, trust_value

from ..base.errors import GatewayError
from ..base.sdk_params import Endpoint
from ..server.auth import Caller
from ..server.gateway import Gateway
from ..trust.service import TrustPlan
from ..upstream.replies import Answer, TokenUsage

__all__ = ["ACTION_HEADER", "Ask", "Asked", "Call", "Served", "act_on", "asker", "blocked_reply"]

log = logging.getLogger("trustgate.low_trust")
_failures = ThrottledLog(log, interval_s=30)

ACTION_HEADER = "x-trust-action"
ESCALATED_FROM_HEADER = "x-trust-escalated-from"
ESCALATED_TO_HEADER = "x-trust-escalated-to"


@dataclass(frozen=True)
class Asked:
    """One upstream answer as the client would get it: its bytes, parsed body, scored answer, usage and cost."""

    raw: bytes
    data: dict[str, Any]
    answer: Answer
    usage: TokenUsage | None
    cost: CallCost


# Ask a model group (by name) the client's request again, as the route asks its first.
Ask = Callable[[str], Awaitable[Asked]]
# The route's own upstream call: a model group and the body to send it.
Call = Callable[[str, dict[str, Any]], Awaitable[Asked]]


def asker(gateway: Gateway, plan: TrustPlan, body: dict[str, Any], endpoint: Endpoint, call: Call) -> Ask:
    """The client's request (``body`` as it sent it) asked of another group: log-probabilities asked for as
    that group takes them, and removed again from what the client would get."""

    async def ask(target: str) -> Asked:
        group = gateway.upstream.require_group(target)
        _, sent, added = gateway.trust.upstream_body(
            plan, {**body, "model": target}, endpoint, gives_logprobs=gateway.upstream.gives_logprobs(group, endpoint)
        )
        asked = await call(group, sent)
        return replace(asked, raw=added.body(asked.raw)) if added is not None else asked

    return ask


@dataclass(frozen=True)
class Served:
    """What the client gets: the bytes, the headers, the record they describe, and whether it is not the
    first answer (blocked or escalated), for a held stream to tell replay from a new reply."""

    content: bytes
    headers: dict[str, str]
    record: TrustRecord
    replaced: bool = False
    # What the request's answers cost, when an escalation's answer added to the first's (None: the first's alone)
    cost: CallCost | None = None


def blocked_reply(endpoint: Endpoint, data: dict[str, Any], message: str) -> dict[str, Any]:
    """The original reply's envelope (id, model, usage) around ``message``, in the endpoint's shape.

    Chat and legacy completions end with ``finish_reason: content_filter``; a
    Responses object is ``incomplete`` for ``content_filter``, the message its
    only output, so ``response.output_text`` reads it.
    """
    if endpoint == "responses":
        item = {
            "type": "message",
            "id": f"msg_blocked_{data.get('id', '')}",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": message, "annotations": []}],
        }
        kept = {name: value for name, value in data.items() if name != "output_text"}  # a server's copy of the text
        return {**kept, "status": "incomplete", "incomplete_details": {"reason": "content_filter"}, "output": [item]}
    envelope: dict[str, Any] = {name: data[name] for name in ("id", "created", "model", "usage") if name in data}
    if endpoint == "completions":
        choice: dict[str, Any] = {"index": 0, "text": message, "logprobs": None, "finish_reason": "content_filter"}
    else:
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": message},
            "logprobs": None,
            "finish_reason": "content_filter",
        }
    return {
        "object": "chat.completion" if endpoint == "chat" else "text_completion",
        "created": int(time.time()),
        **envelope,
        "choices": [choice],
    }


async def act_on(
    gateway: Gateway,
    caller: Caller,
    plan: TrustPlan,
    record: TrustRecord,
    first: Asked,
    endpoint: Endpoint,
    messages: list[dict[str, Any]],
    ask: Ask,
) -> Served:
    """What the client gets for ``first``, whose record is ``record``: as is, blocked, or escalated."""
    policy = plan.decision.on_low_trust
    decided = outcome(policy, record, tool_calls=first.answer.has_tool_calls)
    if plan.decision.mode != "sync" or decided == "pass":
        return Served(first.raw, trust_headers(record), record)
    if decided == "block":
        marked = _mark(gateway, plan, record, "blocked")
        return Served(
            orjson.dumps(blocked_reply(endpoint, first.data, policy.message)),
            _with_action(marked, "blocked"),
            marked,
            replaced=True,
        )
    if gateway.upstream.require_group(policy.escalate_to or "") == plan.model:  # the target itself: annotated
        return Served(first.raw, trust_headers(record), record)
    return await _escalate(gateway, caller, plan, record, first, messages, ask, policy)


async def _escalate(
    gateway: Gateway,
    caller: Caller,
    plan: TrustPlan,
    record: TrustRecord,
    first: Asked,
    messages: list[dict[str, Any]],
    ask: Ask,
    policy: LowTrust,
) -> Served:
    target = policy.escalate_to or ""
    try:
        escalated, second = await asyncio.wait_for(
            _ask_again(gateway, caller, plan, messages, ask, target), policy.escalation_timeout_s
        )
    except (TimeoutError, GatewayError) as exc:
        _failures.warning(
            ("escalation", plan.model, target),
            "escalation of %s from %s to %s failed: %s",
            record.id,
            plan.model,
            target,
            type(exc).__name__ if isinstance(exc, TimeoutError) else exc,
        )
        return _keep(gateway, plan, record, first, "escalation_failed", None)
    first_value, second_value = trust_value(record, policy.on), trust_value(second, policy.on)
    both = first.cost.plus(escalated.cost)  # the request cost both answers
    if second_value is None:  # the escalation's verdict did not come in time: nothing says it is better
        return _keep(gateway, plan, record, first, "escalation_failed", both)
    if policy.prefer == "higher" and first_value is not None and second_value < first_value:
        gateway.trust.mark(second, None, escalated_from=record.id)
        return _keep(gateway, plan, record, first, "kept", both, escalated_to=second.id)
    _mark(gateway, plan, record, "escalated", escalated_to=second.id)
    linked = gateway.trust.mark(second, None, escalated_from=record.id)
    headers = {**trust_headers(linked), ACTION_HEADER: "escalated", ESCALATED_FROM_HEADER: record.id}
    return Served(escalated.raw, headers, linked, replaced=True, cost=both)


async def _ask_again(
    gateway: Gateway, caller: Caller, plan: TrustPlan, messages: list[dict[str, Any]], ask: Ask, target: str
) -> tuple[Asked, TrustRecord]:
    """The escalation's answer and its sync-mode record; the key's limits admit it as a request of its own."""
    group = gateway.upstream.require_group(target)
    caller.require_model(target, group)
    slot = await gateway.limits.admit(caller.name, caller.limits)
    try:
        gateway.metrics.count_user_call(group)
        escalated = await ask(target)
    except BaseException:
        await slot.release()
        raise
    if escalated.usage is not None:
        gateway.metrics.observe_user_usage(
            model=group,
            key=caller.name,
            prompt_tokens=escalated.usage.prompt_tokens,
            completion_tokens=escalated.usage.completion_tokens,
        )
    await slot.done(escalated.usage.total if escalated.usage is not None else 0)
    gateway.spending.charge(caller.name, group, escalated.cost)
    second_plan = gateway.trust.plan(model=group, key_name=caller.name, key_policy=caller.policy, headers={}, body=b"")
    second_plan = replace(
        second_plan, traceparent=plan.traceparent, decision=replace(plan.decision, mode="sync", sampled=True)
    )
    return escalated, await gateway.trust.score(second_plan, messages, escalated.answer, escalated.cost)


def _mark(gateway: Gateway, plan: TrustPlan, record: TrustRecord, action: TrustAction, **links: str) -> TrustRecord:
    """Mark (count, store) the action on the request's record, and tell OpenTelemetry."""
    marked = gateway.trust.mark(record, action, **links)
    gateway.telemetry.emit_action(marked, plan.traceparent)
    return marked


def _keep(
    gateway: Gateway,
    plan: TrustPlan,
    record: TrustRecord,
    first: Asked,
    action: TrustAction,
    cost: CallCost | None,
    **links: str,
) -> Served:
    """The first answer, its record marked with ``action``; ``cost`` what the request cost, when an escalation
    came back and added to it."""
    marked = _mark(gateway, plan, record, action, **links)
    headers = _with_action(marked, action)
    if "escalated_to" in links:
        headers[ESCALATED_TO_HEADER] = links["escalated_to"]
    return Served(first.raw, headers, marked, cost=cost)


def _with_action(record: TrustRecord, action: TrustAction) -> dict[str, str]:
    return {**trust_headers(record), ACTION_HEADER: action}
