"""Request validation (OpenAI 400 bodies naming the field), SSE bytes, and an engine that
dies: what the reference server is made of, without HTTP."""

from __future__ import annotations

import json
from typing import Any

import anyio
import msgspec
import numpy as np
import pytest

import reasonspan
from reasonspan.runtime.stream.runtime import ReasoningRuntime, RuntimeClosedError
from reasonspan.serving import DONE, RequestError, parse_request, sse_stream
from reasonspan.serving.engine import EngineRequest, SimulatedServingEngine
from tests.support.fixtures import tokenizer

MSG = [{"role": "user", "content": "hi"}]


def _deep(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


def body(**fields: Any) -> bytes:
    return json.dumps({"model": "m", "messages": MSG, **fields}).encode()


@pytest.mark.parametrize(
    ("raw", "param", "says"),
    [
        (b'{"messages": [{"role": "user", "content": "hi"}]}', "model", "missing required"),
        (body(messages=[]), "messages", "length >= 1"),
        (body(max_tokens=0), "max_tokens", ">= 1"),
        (body(max_completion_tokens="9"), "max_completion_tokens", "got `str`"),
        (body(thinking_token_budget=-1), "thinking_token_budget", ">= 0"),
        (body(n=2), "n", "n=2 is not supported"),
        (body(n=0), "n", ">= 1"),
        (body(modalities=["text", "audio"]), "modalities", "audio output is not supported"),
        (body(logit_bias={"abc": 1}), "logit_bias", "token ids"),
        (body(simulated_output="a", simulated_output_ids=[1]), "simulated_output_ids", "not both"),
        (
            body(response_format={"type": "json_schema", "json_schema": {"schema": [1, 2]}}),
            "response_format.json_schema.schema",
            "must be a JSON Schema object",
        ),
        (body(tools=[{"a": _deep(150)}]), "tools", "nested more than"),
        (body(metadata={"k": 1}), "metadata[...]", "Expected `str`"),
        (body(stream="yes"), "stream", "Expected `bool`"),
        (body(logprobs="yes"), "logprobs", "Expected `bool"),
        (body(stream_options={"include_usage": True}), "stream_options", "only allowed"),
        (body(stream=True, stream_options={"usage": True}), "stream_options.usage", "unknown"),
        (body(response_format={"type": "xml"}), "response_format.type", "Invalid enum"),
        (body(response_format={"type": "json_schema"}), "response_format.json_schema", "required"),
        (body(response_format={"type": "regex"}), "response_format.regex", "required"),
        (
            body(response_format={"type": "grammar", "grammar": ""}),
            "response_format.grammar",
            "required",
        ),
        (body(thinking_budget_lead_in="ok"), "thinking_budget_lead_in", "needs a"),
        (
            body(messages=[{"role": "user", "content": [{"type": "image_url"}]}]),
            "messages[0].content[0].type",
            "Invalid value 'image_url'",
        ),
        (
            body(messages=[{"role": "assistant", "reasoning": 3}]),
            "messages[0].reasoning",
            "got `int`",
        ),
        (b"[1, 2]", None, "Expected `object`"),
        (
            b'{"model": "m", "messages": [{"role": "user"}], "chat_template_kwargs": {"a": '
            + b"[" * 5000
            + b"]" * 5000
            + b"}}",
            None,
            "nested too deeply",
        ),
        (b'{"model": "m", "messages": [', None, "not valid JSON"),
    ],
)
def test_bad_requests_name_the_field(raw: bytes, param: str | None, says: str) -> None:
    with pytest.raises(RequestError) as info:
        parse_request(raw)
    err = info.value
    assert err.status == 400 and err.param == param
    assert says in err.message
    wire = json.loads(err.body())
    assert wire == {
        "error": {
            "message": err.message,
            "type": "invalid_request_error",
            "param": param,
            "code": None,
        }
    }


def test_a_full_request_decodes() -> None:
    req = parse_request(
        body(
            messages=[
                {"role": "system", "content": "be brief"},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                },
                {"role": "assistant", "content": "x", "reasoning_content": "old"},
                {"role": "user", "content": "again"},
            ],
            stream=True,
            stream_options={"include_usage": True},
            max_tokens=50,
            max_completion_tokens=40,
            chat_template_kwargs={"enable_thinking": True},
            reasoning_effort="high",
            include_reasoning=False,
            thinking_token_budget=10,
            thinking_budget_lead_in=" ok.",
            response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {}}},
            skip_special_tokens=False,
            temperature=0.2,
            stop=["END"],
        )
    )
    assert req.token_limit == 40 and req.include_usage and req.structured_output
    assert req.template_kwargs({"thinking": False}) == {
        "thinking": False,
        "enable_thinking": True,
        "reasoning_effort": "high",
    }
    assert req.messages[1].for_template()["content"] == "ab"
    assert req.messages[2].for_template()["reasoning_content"] == "old"


def chunk_stream(tok: reasonspan.LoadedTokenizer, **options: Any) -> tuple[ReasoningRuntime, Any]:
    parser = reasonspan.create_parser_sync("qwen3", tok)
    runtime = ReasoningRuntime(model="m")
    stream = runtime.add("c", parser, tok.encode("<|im_start|>assistant\n"), **options)
    for t in tok.encode("<think>r</think>c"):
        runtime.step(np.array([stream.engine_id]), np.array([t]), np.array([0, 1]))
    return runtime, stream


@pytest.mark.parametrize("include_usage", [True, False])
async def test_sse_bytes(include_usage: bool) -> None:
    tok = tokenizer("qwen-3")
    runtime, stream = chunk_stream(tok)
    runtime.finish("c", "stop")
    raw = b"".join([e async for e in sse_stream(stream, include_usage=include_usage)])
    events = raw.split(b"\n\n")
    assert events[-2:] == [DONE.rstrip(b"\n"), b""]
    chunks = [json.loads(e.removeprefix(b"data: ")) for e in events[:-2]]
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == "c" for c in chunks)
    with_usage = [c for c in chunks if "usage" in c]
    if include_usage:
        assert len(with_usage) == 1 and with_usage[0] is chunks[-1]
        assert chunks[-1]["choices"] == []
        assert chunks[-1]["usage"]["completion_tokens_details"]["reasoning_tokens"] == 1
        assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    else:
        assert with_usage == []  # no "usage": null anywhere
        assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == "c"


async def test_sse_ends_a_failed_request_with_an_error_event() -> None:
    tok = tokenizer("qwen-3")
    runtime, stream = chunk_stream(tok)
    runtime.fail(RuntimeError("engine gone"))
    raw = b"".join([e async for e in sse_stream(stream)])
    events = [e for e in raw.split(b"\n\n") if e]
    assert events[-1] == DONE.rstrip(b"\n")
    err = json.loads(events[-2].removeprefix(b"data: "))["error"]
    assert err["code"] == "RuntimeClosedError" and "engine gone" in err["message"]


async def test_an_engine_that_dies_fails_every_open_stream() -> None:
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    runtime = ReasoningRuntime()
    engine = SimulatedServingEngine()
    prompt = tok.encode("<|im_start|>assistant\n")
    request = parse_request(body(simulated_output="<think>a long thought</think>done"))
    streams = [runtime.add(f"r{i}", parser, prompt) for i in range(3)]
    for s in streams:
        engine.submit(EngineRequest(s.engine_id, parser, prompt, request))

    def boom(*_: Any) -> Any:
        raise RuntimeError("CUDA error: an illegal memory access")

    engine.sim.step = boom  # type: ignore[method-assign]
    errors: list[BaseException] = []

    async def consume(s: Any) -> None:
        try:
            async for _ in s:
                pass
        except RuntimeClosedError as exc:
            errors.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for s in streams:
                tg.start_soon(consume, s)
            with pytest.raises(RuntimeError, match="illegal memory access"):
                await engine.run(runtime)
    assert len(errors) == 3 and all("illegal memory access" in str(e) for e in errors)
    assert len(runtime) == 0 and len(runtime.batch) == 0


def test_wire_structs_round_trip() -> None:
    from reasonspan.runtime.wire.openai import ChatCompletion, ChatCompletionChunk

    raw = b'{"object":"chat.completion.chunk","id":"a","created":1,"model":"m","choices":[]}'
    assert msgspec.json.decode(raw, type=ChatCompletionChunk).id == "a"
    with pytest.raises(msgspec.ValidationError, match=r"Invalid value 'chat\.completion'"):
        msgspec.json.decode(raw.replace(b".chunk", b""), type=ChatCompletionChunk)
    assert ChatCompletion.__struct_config__.tag == "chat.completion"


def test_stream_chunks_are_not_tracked_by_the_cyclic_collector() -> None:
    """A server makes a chunk per request and step: none of its Structs (nor a delta with
    tool calls, whose list the collector still tracks) is tracked, so thousands of open
    requests do not trigger collections that walk every request's state; the chunks the
    runtime streams are untracked too."""
    import gc

    from reasonspan.runtime.wire.openai import (
        ChatCompletionChunk,
        ChoiceDelta,
        ChoiceDeltaToolCall,
        ChoiceDeltaToolCallFunction,
        ChunkChoice,
    )

    call = ChoiceDeltaToolCall(index=0, function=ChoiceDeltaToolCallFunction(name="f"))
    delta = ChoiceDelta(content="x", tool_calls=[call])
    chunk = ChatCompletionChunk(id="a", created=1, model="m", choices=[ChunkChoice(0, delta)])
    assert not gc.is_tracked(delta)
    assert not gc.is_tracked(chunk.choices[0])
    assert not gc.is_tracked(chunk)
    tok = tokenizer("qwen-3")
    runtime = ReasoningRuntime()
    stream = runtime.add("r", reasonspan.create_parser_sync("qwen3", tok), None)
    ids = tok.encode("<think>Plan.</think>Answer.")
    for t in ids:
        runtime.step([stream.engine_id], [t], [0, 1])
    runtime.finish("r")
    got = stream.ready()
    assert len(got) > 2
    assert not any(gc.is_tracked(c) or gc.is_tracked(c.choices[0]) for c in got if c.choices)


# A value for every field of OpenAI's Chat Completions request (the installed client's own
# list): the test fails when the client learns a field this table (and so the server) lacks.
OPENAI_FIELDS: dict[str, Any] = {
    "messages": MSG,
    "model": "m",
    "audio": {"voice": "alloy", "format": "mp3"},
    "frequency_penalty": 0.5,
    "function_call": "auto",
    "functions": [{"name": "f", "parameters": {"type": "object"}}],
    "logit_bias": {"42": -100},
    "logprobs": True,
    "max_completion_tokens": 64,
    "max_tokens": 80,
    "metadata": {"team": "a"},
    "modalities": ["text"],
    "moderation": {"model": "omni-moderation-latest"},
    "n": 1,
    "parallel_tool_calls": False,
    "prediction": {"type": "content", "content": "x"},
    "presence_penalty": -0.5,
    "prompt_cache_key": "k",
    "prompt_cache_options": {"mode": "implicit"},
    "prompt_cache_retention": "24h",
    "reasoning_effort": "low",
    "response_format": {"type": "json_object"},
    "safety_identifier": "s",
    "seed": 7,
    "service_tier": "auto",
    "stop": "END",
    "store": False,
    "stream": True,
    "stream_options": {"include_usage": True, "include_obfuscation": False},
    "temperature": 0.3,
    "tool_choice": "auto",
    "tools": [{"type": "function", "function": {"name": "f"}}],
    "top_logprobs": 3,
    "top_p": 0.9,
    "user": "u-1",
    "verbosity": "low",
    "web_search_options": {"search_context_size": "low"},
}


def test_every_openai_request_field_is_accepted_and_reaches_the_engine() -> None:
    from openai.types.chat import completion_create_params as params

    names = set(params.CompletionCreateParamsBase.__annotations__)
    names |= set(params.CompletionCreateParamsStreaming.__annotations__)
    assert names == set(OPENAI_FIELDS)
    req = parse_request(json.dumps(OPENAI_FIELDS).encode())
    sp = req.sampling_params()
    assert (sp.temperature, sp.top_p, sp.seed, sp.n) == (0.3, 0.9, 7, 1)
    assert (sp.stop, sp.max_tokens, sp.logprobs, sp.top_logprobs) == (["END"], 64, True, 3)
    assert sp.logit_bias == {42: -100}
    assert (sp.presence_penalty, sp.frequency_penalty) == (-0.5, 0.5)
    structural = {"messages", "model", "stream", "stream_options", "response_format"}
    structural |= {"tools", "tool_choice", "reasoning_effort"}
    decoding = {f for f in sp.__struct_fields__ if f != "extra"}
    decoding |= {"max_completion_tokens"}
    assert set(sp.extra) == names - structural - decoding
    for name, value in sp.extra.items():
        assert value == OPENAI_FIELDS[name]
    stops = parse_request(body(stop=["a", "b"])).sampling_params().stop
    assert stops == ["a", "b"]
