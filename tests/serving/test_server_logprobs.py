"""``logprobs`` / ``top_logprobs`` over the reference server, read with the official ``openai``
client on loopback. The simulated engine's values are a fixed function of each token id
(``serving/engine.py``: ``-(t % 997) / 1000``, the likeliest tokens ``t, t + 1, ...``), so
the test knows every entry from the token ids ``parse()`` assigns to the answer and to the
reasoning, through the model's own tokenizer and chat template (Qwen3, DeepSeek R1,
gpt-oss: ``tests/serving/test_server.py``'s models)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

import reasonspan
from reasonspan.runtime.core.labels import CONTENT, REASONING, TOOL, TOOL_CALL
from reasonspan.serving.templates import render_prompt_ids
from tests.serving.test_server import MODELS, Running, script, start
from tests.support.fixtures import tokenizer

MESSAGES = [{"role": "user", "content": "What is 6 x 7?"}]


@pytest.fixture(scope="module")
def running() -> Iterator[Running]:
    with start() as r:
        yield r


@pytest.fixture(scope="module")
def client(running: Running) -> openai.OpenAI:
    return openai.OpenAI(base_url=running.base_url, api_key="unused", max_retries=0, timeout=30)


Entry = tuple[bytes, float, list[bytes]]


def expected(model: str, output: str, top: int) -> tuple[list[Entry], list[Entry]]:
    """(answer entries, reasoning entries): each token's bytes, value and likeliest tokens."""
    family, fixture, template = MODELS[model]
    tok = tokenizer(fixture)
    parser = reasonspan.create_parser_sync(family, tok, {})
    prompt = render_prompt_ids(tok, MESSAGES, chat_template=template)
    ids = tok.encode(output)
    labels = parser.parse(ids, prompt_token_ids=prompt).labels
    vocab = len(tok.token_bytes)

    def entry(t: int) -> Entry:
        tops = [tok.token_bytes[(t + j) % vocab] for j in range(top)]
        return tok.token_bytes[t], -(t % 997) / 1000, tops

    answer = [
        entry(t) for t, lab in zip(ids, labels, strict=True) if lab in (CONTENT, TOOL, TOOL_CALL)
    ]
    reasoning = [entry(t) for t, lab in zip(ids, labels, strict=True) if lab == REASONING]
    return answer, reasoning


def entries(items: list[Any] | None) -> list[Entry]:
    out = []
    for e in items or []:
        get = e.get if isinstance(e, dict) else lambda k, e=e: getattr(e, k)
        tops = [bytes(x["bytes"] if isinstance(x, dict) else x.bytes) for x in get("top_logprobs")]
        out.append((bytes(get("bytes")), get("logprob"), tops))
    return out


@pytest.mark.parametrize("model", ["qwen3", "deepseek_r1", "gpt-oss-synthetic"])
@pytest.mark.parametrize("top", [0, 2])
def test_logprobs_of_the_answer_and_of_the_reasoning(
    client: openai.OpenAI, model: str, top: int
) -> None:
    output = script(model)
    want_answer, want_reasoning = expected(model, output, top)
    assert want_answer and want_reasoning
    request: dict[str, Any] = {
        "model": model,
        "messages": MESSAGES,
        "logprobs": True,
        "top_logprobs": top,
        "extra_body": {"simulated_output": output},
    }
    whole = client.chat.completions.create(**request)
    lp = whole.choices[0].logprobs
    assert lp is not None
    assert entries(lp.content) == want_answer
    assert entries(lp.model_extra.get("reasoning")) == want_reasoning  # type: ignore[union-attr]
    # The token text is the token's bytes read as UTF-8 (a piece of a character: U+FFFD).
    assert [e.token for e in lp.content or []] == [
        b.decode("utf-8", "replace") for b, _, _ in want_answer
    ]

    answer: list[Entry] = []
    reasoning: list[Entry] = []
    for chunk in client.chat.completions.create(**request, stream=True):
        for choice in chunk.choices:
            if choice.logprobs is not None:
                answer += entries(choice.logprobs.content)
                reasoning += entries(choice.logprobs.model_extra.get("reasoning"))
    assert (answer, reasoning) == (want_answer, want_reasoning)


def test_without_logprobs_there_are_none(client: openai.OpenAI) -> None:
    request: dict[str, Any] = {
        "model": "qwen3",
        "messages": MESSAGES,
        "extra_body": {"simulated_output": script("qwen3")},
    }
    assert client.chat.completions.create(**request).choices[0].logprobs is None
    for chunk in client.chat.completions.create(**request, stream=True):
        assert all(choice.logprobs is None for choice in chunk.choices)


def test_reasoning_left_out_takes_its_entries_along(client: openai.OpenAI) -> None:
    output = script("qwen3")
    want_answer, _ = expected("qwen3", output, 1)
    whole = client.chat.completions.create(
        model="qwen3",
        messages=MESSAGES,  # type: ignore[arg-type]
        logprobs=True,
        top_logprobs=1,
        extra_body={"simulated_output": output, "include_reasoning": False},
    )
    lp = whole.choices[0].logprobs
    assert lp is not None
    assert entries(lp.content) == want_answer
    assert not lp.model_extra.get("reasoning")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"top_logprobs": 2}, "top_logprobs"),
        ({"logprobs": False, "top_logprobs": 1}, "top_logprobs"),
        ({"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
        ({"logprobs": "yes"}, "logprobs"),
    ],
)
def test_bad_logprobs_fields_are_a_400_naming_the_field(
    running: Running, body: dict[str, Any], param: str
) -> None:
    sent = {"model": "qwen3", "messages": MESSAGES, **body}
    got = httpx.post(f"{running.base_url}/chat/completions", json=sent, timeout=30)
    assert got.status_code == 400, got.text
    assert got.json()["error"]["param"] == param
