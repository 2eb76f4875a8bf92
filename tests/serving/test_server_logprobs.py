"""``logprobs`` / ``top_logprobs`` over the reference server, read with the official ``openai``
client on loopback. The simulated engine's values are a fixed function of each token id
(``serving/engine.py``: ``-(t % 997) / 1000``, the likeliest tokens ``t, t + 1, ...``), so
the test knows every entry from the token ids ``parse()`` assigns to the answer and to the
reasoning, through the model's own tokenizer and chat template (Qwen3, DeepSeek R1,
gpt-oss: ``tests/serving/test_server.py``'s models)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

import reasonspan
from reasonspan.runtime.core.labels import CONTENT, REASONING, TOOL, TOOL_CALL
from reasonspan.serving.templates import render_prompt_ids
from tests.serving.test_server import MODELS, Running, script
from tests.support.fixtures import tokenizer

MESSAGES = [{"role": "user", "content": "What is 6 x 7?"}]


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


RESPONSES_TOOL = {
    "type": "function",
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "note": {"type": "string"}},
    },
}


@pytest.mark.parametrize(
    ("calls", "note"),
    [(False, ""), (True, ""), (True, "Sunny spells, " * 40)],
    ids=["text", "text-then-call", "text-then-streamed-call"],
)
def test_responses_output_text_carries_the_answers_logprobs(
    client: openai.OpenAI, calls: bool, note: str
) -> None:
    """``include: ["message.output_text.logprobs"]``: the message's ``output_text`` part
    holds the answer's entries (its call's tokens too); streamed, the text deltas carry them
    as they are decided, and the part's ``.done`` and the final response all of them, as the
    whole response does (a call sent whole comes after the entries of its tokens, so the
    text is still open when they are decided; a call streamed as it is written closes the
    text first: the entries of its tokens join the message in the final response)."""
    model = "qwen3"
    # A long second argument streams (a call is sent once its first argument is whole).
    args = json.dumps({"city": "Bern", "note": note} if note else {"city": "Bern"})
    call = f'<tool_call>\n{{"name": "get_weather", "arguments": {args}}}\n</tool_call>'
    output = "<think>\nLook it up.\n</think>\n\nChecking the weather." + (
        "\n" + call if calls else ""
    )
    want, _ = expected(model, output, 2)
    kw: dict[str, Any] = {
        "model": model,
        "input": MESSAGES[0]["content"],
        "include": ["message.output_text.logprobs"],
        "top_logprobs": 2,
        "tools": [RESPONSES_TOOL] if calls else [],
        "extra_body": {"simulated_output": output},
    }
    whole = client.responses.create(**kw)
    [message] = [item for item in whole.output if item.type == "message"]
    assert entries(message.content[0].logprobs) == want  # type: ignore[union-attr]
    assert [i.type for i in whole.output].count("function_call") == int(calls)

    events = list(client.responses.create(**kw, stream=True))
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    streamed = [x for e in deltas for x in entries(e.logprobs)]  # type: ignore[union-attr]
    [done] = [e for e in events if e.type == "response.output_text.done"]
    at_close = entries(done.logprobs)  # type: ignore[union-attr]
    assert streamed and at_close[: len(streamed)] == streamed
    assert at_close == want if not note else at_close == want[: len(at_close)] != want
    final = events[-1].response  # type: ignore[union-attr]
    [message] = [item for item in final.output if item.type == "message"]
    assert entries(message.content[0].logprobs) == want  # type: ignore[union-attr]


def test_responses_without_logprobs_send_empty_lists(client: openai.OpenAI) -> None:
    output = script("qwen3")
    kw: dict[str, Any] = {
        "model": "qwen3",
        "input": "Hi",
        "extra_body": {"simulated_output": output},
    }
    whole = client.responses.create(**kw)
    assert all(
        not part.logprobs  # type: ignore[union-attr]
        for item in whole.output
        if item.type == "message"
        for part in item.content
    )


def test_responses_top_logprobs_outside_0_to_20_is_a_400(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError, match="top_logprobs"):
        client.responses.create(model="qwen3", input="Hi", top_logprobs=21)
