"""A scripted "capable" upstream: an OpenAI-compatible server whose behaviour, not its knowledge, is the model.

It answers each question of a labeled set right or wrong (a seeded coin per
question), and then behaves as the TrustScore paper finds a capable model
does: asked Trust_BC's multiple-choice checks, it picks its own answer again
when that answer was right (``consistency_right`` of the time) and mostly
something else when it was wrong; asked as Trust_FC's judge, it says the
evidence supports a right answer and contradicts a wrong one (``judge_accuracy``
of the time). Its token log-probabilities are drawn independently of
correctness: the one signal a small model has is, here, noise. A replay on it
shows whether the gateway learns to weigh Trust_BC and Trust_FC and to ignore
``lp`` (docs/eval/feedback-replay.md).

Every draw is seeded by the prompt, so a rerun gives the same replies.
"""

from __future__ import annotations

import hashlib
import random
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from .datasets import EvalItem

__all__ = ["CapableModel", "ScriptedModel", "capable_upstream", "scripted_rng", "scripted_upstream"]

_OPTION = re.compile(r"^([A-E])\) (.*)$")
_FIELD = re.compile(r"^(Question|Answer): (.*)$")


class ScriptedModel(Protocol):
    """A script behind the scripted upstream: a reply to each prompt, seeded so that a rerun gives the same."""

    seed: int

    def reply(self, prompt: str) -> tuple[str, dict[str, float] | None]:
        """The reply's text, and its first token's alternatives where the reply is a choice."""


def scripted_rng(*parts: object) -> random.Random:
    """A generator seeded by ``parts`` (never Python's salted ``hash``): the same draws in every process."""
    digest = hashlib.sha256("\x00".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _place(question: str) -> str:
    return question.removeprefix("What is the capital of ").rstrip("?").strip()


@dataclass
class CapableModel:
    """The script: which questions it gets right, and how its checks and judgements follow from that."""

    items: Sequence[EvalItem]
    seed: int = 0
    right_rate: float = 0.5
    consistency_right: float = 0.75  # a check of a right answer picks it again
    consistency_wrong: float = 0.4  # a check of a wrong answer picks it again
    judge_accuracy: float = 0.8
    _by_question: dict[str, EvalItem] = field(default_factory=dict, init=False)
    _right_answers: dict[str, bool] = field(default_factory=dict, init=False)  # answer text -> right

    def __post_init__(self) -> None:
        self._by_question = {item.question.strip(): item for item in self.items}

    def answer(self, question: str) -> str:
        item = self._by_question.get(question.strip())
        if item is None:
            return "I do not know."
        right = scripted_rng(self.seed, "right", item.id).random() < self.right_rate
        if right:
            city = item.gold[0]
        else:
            others = [other.gold[0] for other in self.items if other.id != item.id]
            city = scripted_rng(self.seed, "wrong", item.id).choice(others) if others else "Atlantis"
        text = f"The capital of {_place(item.question)} is {city.replace('_', ' ')}."
        self._right_answers[text] = right
        return text

    def check(self, prompt: str) -> str:
        """The letter of a Trust_BC check: its own answer's, as consistent as the script says."""
        block = prompt.rsplit("Question: ", 1)[-1]
        options = {m.group(1): m.group(2).strip() for line in block.splitlines() if (m := _OPTION.match(line))}
        own = next((letter for letter, text in options.items() if text in self._right_answers), None)
        rng = scripted_rng(self.seed, "check", prompt)
        if own is None:
            return rng.choice(sorted(options) or ["E"])
        keep = self.consistency_right if self._right_answers[options[own]] else self.consistency_wrong
        return own if rng.random() < keep else rng.choice([letter for letter in sorted(options) if letter != own])

    def judge(self, prompt: str) -> bool | None:
        """Whether the evidence supports the answer in the prompt; None for an answer it never gave (the probe)."""
        fields: dict[str, str] = {m.group(1): m.group(2) for line in prompt.splitlines() if (m := _FIELD.match(line))}
        right = self._right_answers.get(fields.get("Answer", "").strip())
        if right is None:
            return None
        return right if scripted_rng(self.seed, "judge", prompt).random() < self.judge_accuracy else not right

    def reply(self, prompt: str) -> tuple[str, dict[str, float] | None]:
        """The reply's text, and the first token's alternatives where the reply is a choice."""
        if "multi-choice questions" in prompt:
            letter = self.check(prompt)
            return letter, {letter: -0.05, **{other: -4.0 for other in "ABCDE" if other != letter}}
        if prompt.startswith("INSTRUCTION: Assess whether the provided evidence"):
            verdict = self.judge(prompt)
            if prompt.rstrip().endswith("Reply:"):  # the yes/no choice judge
                if verdict is None:
                    return "yes", {"yes": -0.69, "no": -0.69}
                return ("yes", {"yes": -0.1, "no": -2.4}) if verdict else ("no", {"no": -0.1, "yes": -2.4})
            return ("neutral" if verdict is None else "support" if verdict else "contradict"), None
        return self.answer(prompt), None


def _logprobs(model: ScriptedModel, text: str, first: dict[str, float] | None, top: int) -> dict[str, Any]:
    """Per-token log-probabilities that know nothing of correctness (seeded by the text)."""
    rng = scripted_rng(model.seed, "logprobs", text)
    content = []
    for index, token in enumerate(text.split(" ")):
        logprob = first[token] if index == 0 and first and token in first else -abs(rng.gauss(0.3, 0.4))
        alternatives = (
            sorted((first or {token: logprob}).items(), key=lambda kv: -kv[1]) if index == 0 else [(token, logprob)]
        )
        content.append(
            {
                "token": token,
                "logprob": logprob,
                "bytes": list(token.encode()),
                "top_logprobs": [
                    {"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in alternatives[: max(top, 1)]
                ],
            }
        )
    return {"content": content}


def _prompt(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def _prompt_words(body: dict[str, Any]) -> int:
    """The usage a script reports for a prompt: a token per word of every message, so that what a request
    costs grows with its prompt as a model's bill does (a check's worked examples, a judge's evidence)."""
    return sum(len(str(message.get("content") or "").split()) for message in body.get("messages") or [])


def capable_upstream(model: CapableModel) -> FastAPI:
    """The scripted capable model behind ``/v1/chat/completions`` (and ``/v1/models`` for readiness probes)."""
    return scripted_upstream(model)


def scripted_upstream(model: ScriptedModel) -> FastAPI:
    """A scripted model behind ``/v1/chat/completions`` (and ``/v1/models`` for readiness probes)."""
    app = FastAPI()

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": "capable", "object": "model", "owned_by": "trustgate-eval"}]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        text, first = model.reply(_prompt(body))
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
        }
        if body.get("logprobs"):
            choice["logprobs"] = _logprobs(model, text, first, int(body.get("top_logprobs") or 1))
        words, prompt = len(text.split()), _prompt_words(body)
        return JSONResponse(
            {
                "id": f"chatcmpl-{hashlib.sha1(text.encode()).hexdigest()[:12]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": "capable",
                "choices": [choice],
                "usage": {"prompt_tokens": prompt, "completion_tokens": words, "total_tokens": prompt + words},
            }
        )

    return app
