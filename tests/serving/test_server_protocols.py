"""The Responses API and Anthropic's Messages API over real HTTP on loopback, driven by the
official ``openai`` and ``anthropic`` clients, on the runtime that serves Chat Completions.

Each answer is checked against ``parse()`` of the ids the simulated model wrote, with the
prompt the chat-completions path renders for the same conversation: the token count the
server reports for the prompt (``input_tokens``) must equal that rendering's length, so a
conversion that dropped or reordered a turn, a reasoning block or a tool result shows.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import anyio
import httpx
import openai
import pytest

from reasonspan.serving import render_prompt_ids
from tests.serving.test_server import HISTORY, MODELS, Running, expected, script
from tests.support.fixtures import tokenizer

FAMILIES = ["qwen3", "deepseek_r1", "glm47", "minimax_m3", "gpt-oss-synthetic"]

WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}
WEATHER_OPENAI_TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "description": "", "parameters": WEATHER_SCHEMA},
}
CALL_OUTPUT = (
    "<think>\nThe user wants the weather in Kyoto; call the tool.\n</think>\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Kyoto"}}\n</tool_call>'
)
"""What qwen3 writes to call a function (Hermes JSON inside <tool_call>)."""


@pytest.fixture(scope="module")
def oai(running: Running) -> openai.OpenAI:
    return openai.OpenAI(base_url=running.base_url, api_key="unused", max_retries=0, timeout=30)


@pytest.fixture(scope="module")
def claude(running: Running) -> anthropic.Anthropic:
    base = running.base_url.removesuffix("/v1")
    return anthropic.Anthropic(base_url=base, api_key="unused", max_retries=0, timeout=30)


def prompt_len(model: str, messages: list[dict[str, Any]], **kw: Any) -> int:
    """Tokens of the prompt the chat-completions path renders for these messages."""
    _family, fixture, template = MODELS[model]
    return len(render_prompt_ids(tokenizer(fixture), messages, chat_template=template, **kw))


# HISTORY (a chat-completions conversation with the assistant's reasoning) in each protocol.
ANTHROPIC_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": HISTORY[0]["content"]},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": HISTORY[1]["reasoning"], "signature": "sig"},
            {"type": "text", "text": HISTORY[1]["content"]},
        ],
    },
    {"role": "user", "content": [{"type": "text", "text": HISTORY[2]["content"]}]},
]
RESPONSES_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": HISTORY[0]["content"]},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": HISTORY[1]["reasoning"]}],
    },
    {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": HISTORY[1]["content"], "annotations": []}],
    },
    {"role": "user", "content": [{"type": "input_text", "text": HISTORY[2]["content"]}]},
]
CHAT_HISTORY = [
    HISTORY[0],
    {"role": "assistant", "content": "4", "reasoning_content": HISTORY[1]["reasoning"]},
    HISTORY[2],
]
"""The chat messages both histories become (reasoning sent back as reasoning_content)."""


# --- Anthropic Messages ---------------------------------------------------------------


@pytest.mark.parametrize("model", FAMILIES)
def test_messages_non_streaming_equals_parse(claude: anthropic.Anthropic, model: str) -> None:
    out = script(model, which=1)
    msg = claude.messages.create(
        model=model,
        max_tokens=4096,
        messages=ANTHROPIC_HISTORY,  # type: ignore[arg-type]
        extra_body={"simulated_output": out},
    )
    reasoning, content, _n, _ended = expected(model, CHAT_HISTORY, out)
    thinking = [b for b in msg.content if b.type == "thinking"]
    text = [b for b in msg.content if b.type == "text"]
    assert "".join(b.thinking for b in thinking) == reasoning
    assert "".join(b.text for b in text) == content
    assert all(b.signature for b in thinking)
    assert msg.stop_reason == "end_turn" and msg.stop_sequence is None
    assert msg.usage.input_tokens == prompt_len(model, CHAT_HISTORY)
    assert msg.usage.output_tokens == len(tokenizer(MODELS[model][1]).encode(out))
    assert msg.id.startswith("msg_") and msg.role == "assistant" and msg.model == model


@pytest.mark.parametrize("model", FAMILIES)
def test_messages_stream_equals_parse(claude: anthropic.Anthropic, model: str) -> None:
    out = script(model, which=2)
    kinds: list[str] = []
    thinking, text, order = "", "", []
    with claude.messages.stream(
        model=model,
        max_tokens=4096,
        messages=ANTHROPIC_HISTORY,  # type: ignore[arg-type]
        extra_body={"simulated_output": out},
    ) as stream:
        for ev in stream:
            kinds.append(ev.type)
            if ev.type == "content_block_start":
                order.append(ev.content_block.type)
            elif ev.type == "content_block_delta" and ev.delta.type == "thinking_delta":
                thinking += ev.delta.thinking
            elif ev.type == "content_block_delta" and ev.delta.type == "text_delta":
                text += ev.delta.text
        final = stream.get_final_message()
    reasoning, content, _n, _ended = expected(model, CHAT_HISTORY, out)
    assert (thinking, text) == (reasoning, content)
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert kinds.count("content_block_start") == kinds.count("content_block_stop")
    assert order == [k for k, v in (("thinking", reasoning), ("text", content)) if v]
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == len(tokenizer(MODELS[model][1]).encode(out))
    blocks = [
        (b.type, getattr(b, "thinking", None) or getattr(b, "text", None)) for b in final.content
    ]
    assert blocks == [(k, v) for k, v in (("thinking", reasoning), ("text", content)) if v]


ANTHROPIC_TOOL = {"name": "get_weather", "description": "", "input_schema": WEATHER_SCHEMA}


def test_messages_tool_use_then_tool_result(claude: anthropic.Anthropic) -> None:
    """The agent loop: a tool_use block (streamed as input_json_delta), then a turn that
    sends the thinking, the tool_use and its tool_result back."""
    ask = [{"role": "user", "content": "Weather in Kyoto?"}]
    msg = claude.messages.create(
        model="qwen3",
        max_tokens=1024,
        messages=ask,  # type: ignore[arg-type]
        tools=[ANTHROPIC_TOOL],  # type: ignore[list-item]
        thinking={"type": "enabled", "budget_tokens": 512},
        extra_body={"simulated_output": CALL_OUTPUT},
    )
    assert msg.stop_reason == "tool_use"
    assert [b.type for b in msg.content] == ["thinking", "tool_use"]
    use = msg.content[1]
    assert use.type == "tool_use" and use.name == "get_weather" and use.input == {"city": "Kyoto"}

    partial = ""
    with claude.messages.stream(
        model="qwen3",
        max_tokens=1024,
        messages=ask,  # type: ignore[arg-type]
        tools=[ANTHROPIC_TOOL],  # type: ignore[list-item]
        extra_body={"simulated_output": CALL_OUTPUT},
    ) as stream:
        for ev in stream:
            if ev.type == "content_block_delta" and ev.delta.type == "input_json_delta":
                partial += ev.delta.partial_json
        final = stream.get_final_message()
    assert json.loads(partial) == {"city": "Kyoto"}
    assert final.stop_reason == "tool_use" and final.content[-1].type == "tool_use"

    history = [
        *ask,
        {"role": "assistant", "content": [b.model_dump() for b in msg.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Sunny, 21 C"}],
        },
    ]
    answer = claude.messages.create(
        model="qwen3",
        max_tokens=1024,
        messages=history,  # type: ignore[arg-type]
        tools=[ANTHROPIC_TOOL],  # type: ignore[list-item]
        extra_body={"simulated_output": "<think>\nIt is sunny.\n</think>\n\nSunny, 21 C."},
    )
    assert [(b.type, getattr(b, "text", None)) for b in answer.content][-1] == (
        "text",
        "Sunny, 21 C.",
    )
    thinking = msg.content[0]
    assert thinking.type == "thinking"
    chat = [
        *ask,
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": thinking.thinking,
            "tool_calls": [
                {
                    "id": use.id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Kyoto"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": use.id, "content": "Sunny, 21 C"},
    ]
    assert answer.usage.input_tokens == prompt_len("qwen3", chat, tools=[WEATHER_OPENAI_TOOL])


def test_messages_thinking_switch_and_budget(claude: anthropic.Anthropic) -> None:
    """``thinking: disabled`` sets qwen3's own switch (enable_thinking: false), so the
    prompt is the one the template renders with it; enabled with a budget caps reasoning."""
    ask = [{"role": "user", "content": "Hi"}]
    off = claude.messages.create(
        model="qwen3",
        max_tokens=64,
        messages=ask,  # type: ignore[arg-type]
        thinking={"type": "disabled"},
        extra_body={"simulated_output": "Hello."},
    )
    assert [(b.type, getattr(b, "text", None)) for b in off.content] == [("text", "Hello.")]
    kwargs = {"enable_thinking": False}
    assert off.usage.input_tokens == prompt_len("qwen3", ask, chat_template_kwargs=kwargs)
    long = "<think>\n" + "step " * 400 + "\n</think>\n\nDone."
    capped = claude.messages.create(
        model="qwen3",
        max_tokens=2048,
        messages=ask,  # type: ignore[arg-type]
        thinking={"type": "enabled", "budget_tokens": 12},
        extra_body={"simulated_output": long},
    )
    thought = capped.content[0]
    assert thought.type == "thinking"
    full, _content, _n, _ended = expected("qwen3", ask, long)
    assert thought.thinking.strip() and full.startswith(thought.thinking.rstrip())
    assert len(tokenizer(MODELS["qwen3"][1]).encode(thought.thinking)) <= 12


def test_messages_stop_sequence_and_max_tokens(claude: anthropic.Anthropic) -> None:
    ask = [{"role": "user", "content": "Count"}]
    out = "<think>\nCounting.\n</think>\n\none two STOP three"
    stopped = claude.messages.create(
        model="qwen3",
        max_tokens=64,
        messages=ask,  # type: ignore[arg-type]
        stop_sequences=["STOP"],
        extra_body={"simulated_output": out},
    )
    assert stopped.stop_reason == "stop_sequence" and stopped.stop_sequence == "STOP"
    assert stopped.content[-1].type == "text" and stopped.content[-1].text == "one two "
    cut = claude.messages.create(
        model="qwen3",
        max_tokens=3,
        messages=ask,  # type: ignore[arg-type]
        extra_body={"simulated_output": out},
    )
    assert cut.stop_reason == "max_tokens" and cut.usage.output_tokens == 3


def test_messages_errors_are_anthropic_shaped(
    claude: anthropic.Anthropic, running: Running
) -> None:
    with pytest.raises(anthropic.BadRequestError) as bad:
        claude.messages.create(
            model="qwen3",
            max_tokens=16,
            messages=[{"role": "user", "content": [{"type": "image", "source": {}}]}],  # type: ignore[list-item]
        )
    assert bad.value.body["type"] == "error"  # type: ignore[index]
    assert bad.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert "messages[0].content[0]" in bad.value.body["error"]["message"]  # type: ignore[index]
    with pytest.raises(anthropic.NotFoundError) as missing:
        claude.messages.create(
            model="nope", max_tokens=16, messages=[{"role": "user", "content": "x"}]
        )
    assert missing.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    base = running.base_url
    no_max = httpx.post(
        f"{base}/messages", json={"model": "qwen3", "messages": [{"role": "user", "content": "x"}]}
    )
    assert no_max.status_code == 400 and "max_tokens" in no_max.json()["error"]["message"]
    wrong_method = httpx.get(f"{base}/messages")
    assert wrong_method.status_code == 405
    assert wrong_method.json()["type"] == "error"


# --- OpenAI Responses -----------------------------------------------------------------


def _reasoning_text(resp: Any) -> str:
    return "".join(
        c.text for item in resp.output if item.type == "reasoning" for c in item.content or ()
    )


@pytest.mark.parametrize("model", FAMILIES)
def test_responses_non_streaming_equals_parse(oai: openai.OpenAI, model: str) -> None:
    out = script(model, which=1)
    resp = oai.responses.create(
        model=model,
        input=RESPONSES_HISTORY,  # type: ignore[arg-type]
        extra_body={"simulated_output": out},
    )
    reasoning, content, n_reasoning, _ended = expected(model, CHAT_HISTORY, out)
    assert _reasoning_text(resp) == reasoning
    assert resp.output_text == content
    assert resp.status == "completed" and resp.id.startswith("resp_")
    assert resp.usage is not None
    assert resp.usage.output_tokens_details.reasoning_tokens == n_reasoning
    assert resp.usage.input_tokens == prompt_len(model, CHAT_HISTORY)


@pytest.mark.parametrize("model", FAMILIES)
def test_responses_stream_equals_parse(oai: openai.OpenAI, model: str) -> None:
    out = script(model, which=2)
    events = list(
        oai.responses.create(
            model=model,
            input=RESPONSES_HISTORY,  # type: ignore[arg-type]
            stream=True,
            extra_body={"simulated_output": out},
        )
    )
    reasoning, content, _n, _ended = expected(model, CHAT_HISTORY, out)
    kinds = [e.type for e in events]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    got_r = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
    got_c = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert (got_r, got_c) == (reasoning, content)
    assert kinds.count("response.output_item.added") == kinds.count("response.output_item.done")
    final = events[-1].response  # type: ignore[union-attr]
    assert final.output_text == content and _reasoning_text(final) == reasoning


RESPONSES_TOOL = {"type": "function", "name": "get_weather", "parameters": WEATHER_SCHEMA}


def test_responses_function_call_then_output(oai: openai.OpenAI) -> None:
    first = oai.responses.create(
        model="qwen3",
        input="Weather in Kyoto?",
        tools=[RESPONSES_TOOL],  # type: ignore[list-item]
        extra_body={"simulated_output": CALL_OUTPUT},
    )
    calls = [i for i in first.output if i.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather"
    assert json.loads(calls[0].arguments) == {"city": "Kyoto"}
    streamed = list(
        oai.responses.create(
            model="qwen3",
            input="Weather in Kyoto?",
            tools=[RESPONSES_TOOL],  # type: ignore[list-item]
            stream=True,
            extra_body={"simulated_output": CALL_OUTPUT},
        )
    )
    args = "".join(e.delta for e in streamed if e.type == "response.function_call_arguments.delta")
    assert json.loads(args) == {"city": "Kyoto"}
    second_input = [
        {"role": "user", "content": "Weather in Kyoto?"},
        *[i.model_dump(exclude_none=True) for i in first.output],
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": "Sunny, 21 C"},
    ]
    second = oai.responses.create(
        model="qwen3",
        input=second_input,  # type: ignore[arg-type]
        tools=[RESPONSES_TOOL],  # type: ignore[list-item]
        extra_body={"simulated_output": "<think>\nSunny.\n</think>\n\nSunny, 21 C."},
    )
    assert second.output_text == "Sunny, 21 C."
    chat = [
        {"role": "user", "content": "Weather in Kyoto?"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": _reasoning_text(first),
            "tool_calls": [
                {
                    "id": calls[0].call_id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Kyoto"}},
                }
            ],
        },
        {"role": "tool", "tool_call_id": calls[0].call_id, "content": "Sunny, 21 C"},
    ]
    assert second.usage is not None
    assert second.usage.input_tokens == prompt_len("qwen3", chat, tools=[WEATHER_OPENAI_TOOL])


def test_responses_incomplete_at_max_output_tokens(oai: openai.OpenAI) -> None:
    out = "<think>\nA long thought.\n</think>\n\nAn answer."
    resp = oai.responses.create(
        model="qwen3", input="Hi", max_output_tokens=3, extra_body={"simulated_output": out}
    )
    assert resp.status == "incomplete"
    assert resp.incomplete_details is not None
    assert resp.incomplete_details.reason == "max_output_tokens"
    events = list(
        oai.responses.create(
            model="qwen3",
            input="Hi",
            max_output_tokens=3,
            stream=True,
            extra_body={"simulated_output": out},
        )
    )
    assert events[-1].type == "response.incomplete"


def test_responses_refusals_name_the_field(oai: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as prev:
        oai.responses.create(model="qwen3", input="Hi", previous_response_id="resp_x")
    assert prev.value.body["param"] == "previous_response_id"  # type: ignore[index]
    with pytest.raises(openai.BadRequestError) as item:
        oai.responses.create(
            model="qwen3",
            input=[{"type": "item_reference", "id": "msg_1"}],  # type: ignore[list-item]
        )
    assert item.value.body["param"] == "input[0]"  # type: ignore[index]


# --- all three at once ----------------------------------------------------------------


def test_three_protocols_in_one_batch_each_equal_parse(running: Running) -> None:
    """Chat Completions, Responses and Messages requests streamed at once through one
    runtime: each stream's text is parse() of its own output."""
    models = ["qwen3", "glm47", "minimax_m3"]
    results: dict[tuple[str, str, int], tuple[str, str]] = {}

    async def chat(client: openai.AsyncOpenAI, model: str, i: int) -> None:
        r = c = ""
        stream = await client.chat.completions.create(
            model=model,
            messages=CHAT_HISTORY,  # type: ignore[arg-type]
            stream=True,
            extra_body={"simulated_output": script(model, which=i)},
        )
        async for chunk in stream:
            for ch in chunk.choices:
                r += getattr(ch.delta, "reasoning", None) or ""
                c += ch.delta.content or ""
        results["chat", model, i] = (r, c)

    async def responses(client: openai.AsyncOpenAI, model: str, i: int) -> None:
        r = c = ""
        stream = await client.responses.create(
            model=model,
            input=RESPONSES_HISTORY,  # type: ignore[arg-type]
            stream=True,
            extra_body={"simulated_output": script(model, which=i)},
        )
        async for e in stream:
            if e.type == "response.reasoning_text.delta":
                r += e.delta
            elif e.type == "response.output_text.delta":
                c += e.delta
        results["responses", model, i] = (r, c)

    async def messages(client: anthropic.AsyncAnthropic, model: str, i: int) -> None:
        r = c = ""
        async with client.messages.stream(
            model=model,
            max_tokens=4096,
            messages=ANTHROPIC_HISTORY,  # type: ignore[arg-type]
            extra_body={"simulated_output": script(model, which=i)},
        ) as stream:
            async for e in stream:
                if e.type == "content_block_delta" and e.delta.type == "thinking_delta":
                    r += e.delta.thinking
                elif e.type == "content_block_delta" and e.delta.type == "text_delta":
                    c += e.delta.text
        results["messages", model, i] = (r, c)

    async def main() -> None:
        oa = openai.AsyncOpenAI(base_url=running.base_url, api_key="u", max_retries=0)
        an = anthropic.AsyncAnthropic(
            base_url=running.base_url.removesuffix("/v1"), api_key="u", max_retries=0
        )
        async with anyio.create_task_group() as tg:
            for model in models:
                for i in range(4):
                    tg.start_soon(chat, oa, model, i)
                    tg.start_soon(responses, oa, model, i)
                    tg.start_soon(messages, an, model, i)

    anyio.run(main)
    assert len(results) == 3 * len(models) * 4
    for (_protocol, model, i), got in results.items():
        reasoning, content, _n, _e = expected(model, CHAT_HISTORY, script(model, which=i))
        assert got == (reasoning, content), (_protocol, model, i)


# --- Chat Completions: the tool fields the types cannot check ---------------------------

_FN = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"tools": [_FN], "tool_choice": "sometimes"}, "tool_choice"),
        (
            {"tools": [_FN], "tool_choice": {"type": "function", "function": {"name": "g"}}},
            "tool_choice.function.name",
        ),
        ({"tool_choice": "required"}, "tool_choice"),
        (
            {"tools": [{"type": "function", "function": {"name": "f", "parameters": "x"}}]},
            "tools[0].function.parameters",
        ),
        ({"tools": [{"type": "function", "function": {}}]}, "tools[0].function"),
        ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
        (
            {"messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}]},
            "messages[1].tool_call_id",
        ),
    ],
)
def test_chat_tool_fields_are_refused_naming_the_field(
    oai: openai.OpenAI, fields: dict[str, Any], param: str
) -> None:
    body: dict[str, Any] = {"model": "qwen3", "messages": [{"role": "user", "content": "x"}]}
    body.update(fields)
    with pytest.raises(openai.BadRequestError) as err:
        oai.chat.completions.create(**body)
    assert err.value.body["param"] == param  # type: ignore[index]


def test_chat_tool_fields_that_are_valid_pass(oai: openai.OpenAI) -> None:
    resp = oai.chat.completions.create(
        model="qwen3",
        messages=[{"role": "user", "content": "x"}],
        tools=[_FN],  # type: ignore[list-item]
        tool_choice={"type": "function", "function": {"name": "f"}},
        extra_body={"simulated_output": "<think>\nOk.\n</think>\n\nFine."},
    )
    assert resp.choices[0].message.content == "Fine."


# --- the README's client examples -----------------------------------------------------


@pytest.mark.parametrize("example", ["client-chat", "client-responses", "client-messages"])
def test_the_readme_client_examples_run(example: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each protocol's ten lines in the README run as written against `reasonspan serve
    --simulated` (the bundled Qwen3 folder, served as qwen-3; only the port changes), and
    print both the reasoning and the answer."""
    import re
    from pathlib import Path

    from reasonspan.demo_data import default_tokenizer_path
    from reasonspan.serving.app import ServedModel, Server
    from reasonspan.serving.engine import SimulatedServingEngine
    from reasonspan.tokenizer import load_tokenizer_sync

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    m = re.search(rf"<!-- example: {example} -->\n```python\n(.*?)```", readme, re.S)
    assert m is not None, f"the README lost its {example} example"
    bundled = default_tokenizer_path().parent
    model = ServedModel("qwen-3", load_tokenizer_sync(bundled), "qwen3")
    with Running(Server([model], SimulatedServingEngine(), warm_up=False)) as r:
        code = m.group(1).replace("127.0.0.1:8000", f"127.0.0.1:{r.port}")
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out
    assert "Lyon" in out  # the demo transcript's answer (the simulated engine's script)
    assert "Let me" in out  # ... and its reasoning


def test_responses_text_format_constrains_only_the_answer(oai: openai.OpenAI) -> None:
    """``text.format`` json_schema reaches the grammar engine: the scripted prose answer
    comes out as JSON that fits the schema, the reasoning as scripted."""
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}, "why": {"type": "string"}},
        "required": ["answer", "why"],
    }
    out = script("qwen3", which=1)
    reasoning, _c, _n, _e = expected("qwen3", CHAT_HISTORY, out)
    resp = oai.responses.create(
        model="qwen3",
        input=RESPONSES_HISTORY,  # type: ignore[arg-type]
        text={"format": {"type": "json_schema", "name": "a", "schema": schema}},
        extra_body={"simulated_output": out},
    )
    assert _reasoning_text(resp) == reasoning and reasoning
    doc = json.loads(resp.output_text)
    assert set(doc) == {"answer", "why"} and isinstance(doc["answer"], int)
    with pytest.raises(openai.BadRequestError) as bad:
        oai.responses.create(
            model="qwen3",
            input="hi",
            text={"format": {"type": "json_schema", "name": "a", "schema": {"type": "bogus"}}},
        )
    assert "bogus" in str(bad.value)
