"""Harmony tool calls through the async runtime, as OpenAI ``tool_calls``.

Each output is built by the test from its pieces (headers, argument text, terminators), so
the expected function names and arguments are the test's own, never the code's result.
``parse()`` of the same tokens ties the stream to the non-streaming split: its
``tool_calls`` text is each call's header, the streamed arguments and ``<|call|>``.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.stream.runtime import ReasoningRuntime, RequestStream
from reasonspan.runtime.wire.openai import ChatCompletion, FinishReason, encode
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.strategies import outputs, splits

TOK = tokenizer(FAMILY_TOKENIZERS["openai_gptoss"])
PROMPT = TOK.encode("<|start|>user<|message|>Weather in Kyoto?<|end|><|start|>assistant")
ANALYSIS = "<|channel|>analysis<|message|>I should call the tools.<|end|>"

HEADERS = [
    # recipient after the channel, content type with <|constrain|>
    "<|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>",
    # recipient before the channel
    "<|start|>assistant to=functions.{name}<|channel|>commentary json<|message|>",
    # gpt-oss sometimes calls a function from the analysis channel
    "<|start|>assistant<|channel|>analysis to=functions.{name}<|message|>",
]
CALLS = [
    ("get_weather", '{"city": "Kyoto", "day": "tomorrow"}'),
    ("get_time", '{"timezone": "Asia/Tokyo", "note": "東京 🙂"}'),
]


def harmony_output(calls: list[tuple[str, str]], header: str = HEADERS[0]) -> tuple[str, str]:
    """(the model's output, the tool-call text parse() hands the tool parser)."""
    out = ANALYSIS
    tool_text = ""
    for name, args in calls:
        message = header.format(name=name) + args + "<|call|>"
        out += message
        tool_text += message
    return out, tool_text


def parser() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("openai_gptoss", TOK)


def run(
    deltas: list[list[int]], *, buffer_size: int = 32, finish: FinishReason = "stop"
) -> tuple[ReasoningRuntime, RequestStream]:
    runtime = ReasoningRuntime(buffer_size=buffer_size)
    stream = runtime.add("req", parser(), PROMPT)
    for delta in deltas:
        runtime.step([stream.engine_id], delta, [0, len(delta)])
    runtime.finish("req", finish)
    return runtime, stream


class Streamed:
    """What a client assembles from the chunks, checking OpenAI's delta rules on the way."""

    def __init__(self) -> None:
        self.calls: dict[int, dict[str, Any]] = {}
        self.reasoning = ""
        self.content = ""
        self.finish: str | None = None

    def add(self, wire: bytes) -> None:
        chunk = json.loads(wire)
        for choice in chunk["choices"]:
            delta = choice["delta"]
            assert None not in delta.values()  # nothing noisy on the wire
            self.reasoning += delta.get("reasoning", "")
            self.content += delta.get("content", "")
            self.finish = choice["finish_reason"] or self.finish
            for entry in delta.get("tool_calls", []):
                assert None not in entry.values()
                call = self.calls.get(entry["index"])
                if call is None:
                    # The first delta of a call: id, type and the name, once.
                    assert set(entry) == {"index", "id", "type", "function"}
                    assert entry["type"] == "function"
                    assert entry["id"].startswith("call_")
                    self.calls[entry["index"]] = {
                        "id": entry["id"],
                        "name": entry["function"]["name"],
                        "arguments": entry["function"].get("arguments", ""),
                    }
                else:
                    assert set(entry) == {"index", "function"}
                    assert set(entry["function"]) == {"arguments"}
                    call["arguments"] += entry["function"]["arguments"]

    def ordered(self) -> list[tuple[str, str]]:
        assert sorted(self.calls) == list(range(len(self.calls)))
        return [(self.calls[i]["name"], self.calls[i]["arguments"]) for i in sorted(self.calls)]


def read(stream: RequestStream) -> Streamed:
    got = Streamed()
    for chunk in stream.ready():
        got.add(encode(chunk))
    return got


def check(got: Streamed, calls: list[tuple[str, str]], tool_text: str, header: str) -> None:
    assert got.ordered() == calls
    for _name, args in got.ordered():
        json.loads(args)
    assert len({c["id"] for c in got.calls.values()}) == len(calls)
    assert got.finish == "tool_calls"
    assert got.reasoning == "I should call the tools."
    assert got.content == ""  # a tool call is not content text
    # The streamed arguments are exactly the bodies of what parse() hands the tool parser.
    rebuilt = "".join(header.format(name=n) + a + "<|call|>" for n, a in got.ordered())
    assert rebuilt == tool_text


@pytest.mark.parametrize("header", HEADERS)
@pytest.mark.parametrize("n_calls", [1, 2])
@pytest.mark.parametrize("per_step", [1, 3, 10_000])
def test_calls_stream_as_tool_calls(header: str, n_calls: int, per_step: int) -> None:
    calls = CALLS[:n_calls]
    out, tool_text = harmony_output(calls, header)
    ids = TOK.encode(out)
    assert parser().parse(ids, prompt_token_ids=PROMPT).tool_call_text == tool_text
    deltas = [ids[i : i + per_step] for i in range(0, len(ids), per_step)]
    _, stream = run(deltas)
    check(read(stream), calls, tool_text, header)
    assert stream.finish_reason == "tool_calls"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_split_and_any_buffer_gives_the_same_calls(data: st.DataObject) -> None:
    """Random deltas, and a buffer so small that chunks are coalesced (tool-call entries
    merged into the last undelivered chunk): the client still assembles the same calls."""
    header = data.draw(st.sampled_from(HEADERS))
    calls = CALLS[: data.draw(st.integers(1, 2))]
    out, tool_text = harmony_output(calls, header)
    ids = TOK.encode(out)
    deltas = [d for d in data.draw(splits(ids)) if d]
    _, stream = run(deltas, buffer_size=data.draw(st.integers(1, 4)))
    check(read(stream), calls, tool_text, header)


def test_collect_gives_message_tool_calls() -> None:
    out, _ = harmony_output(CALLS)
    ids = TOK.encode(out)

    async def collect() -> ChatCompletion:
        runtime = ReasoningRuntime()
        stream = runtime.add("req", parser(), PROMPT)
        for t in ids:
            runtime.step([stream.engine_id], [t], [0, 1])
        runtime.finish("req", "stop")
        return await stream.collect()

    completion = anyio.run(collect)
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert calls is not None
    assert [(c.function.name, c.function.arguments) for c in calls] == CALLS
    assert all(c.type == "function" and c.id.startswith("call_") for c in calls)
    assert calls[0].id != calls[1].id
    assert choice.message.content is None
    wire = msgspec.json.decode(encode(completion))
    message = wire["choices"][0]["message"]
    assert "content" not in message  # a message that only calls tools has no content
    assert message["tool_calls"][0]["type"] == "function"
    assert json.loads(message["tool_calls"][1]["function"]["arguments"])["timezone"] == (
        "Asia/Tokyo"
    )


def test_length_inside_the_arguments_stays_length() -> None:
    """The engine stopped at max_tokens in the middle of the call: no half call is sent
    (calls are sent whole, once complete), the finish reason stays the engine's."""
    name, args = CALLS[0]
    out, _ = harmony_output([(name, args)])
    ids = TOK.encode(out.removesuffix("<|call|>"))[:-2]
    _, stream = run([[t] for t in ids], finish="length")
    got = read(stream)
    assert got.finish == "length"
    assert got.calls == {}
    assert parser().parse(ids, prompt_token_ids=PROMPT).tool_calls == []


def test_a_final_answer_after_a_call_and_a_builtin_tool_are_not_tool_calls() -> None:
    """Only to=functions.X messages are tool calls; a message to the built-in python tool
    is neither a call nor reasoning nor content (the server runs such tools itself: its
    text is in ``tool_call_text``), and the final answer after a function call is
    content."""
    name, args = CALLS[0]
    out = (
        "<|channel|>analysis to=python code<|message|>print(1)<|call|>"
        + HEADERS[0].format(name=name)
        + args
        + "<|end|><|start|>assistant<|channel|>final<|message|>Done.<|return|>"
    )
    _, stream = run([[t] for t in TOK.encode(out)])
    got = read(stream)
    assert got.ordered() == [(name, args)]
    assert (got.reasoning, got.content) == ("", "Done.")
    assert "print(1)" in (parser().parse(TOK.encode(out), PROMPT).tool_call_text or "")
    assert got.finish == "tool_calls"


def test_output_without_a_call_finishes_with_stop() -> None:
    out = ANALYSIS + "<|start|>assistant<|channel|>final<|message|>Sunny.<|return|>"
    _, stream = run([TOK.encode(out)])
    got = read(stream)
    assert got.calls == {} and got.content == "Sunny." and got.finish == "stop"


def test_an_engine_that_stops_on_call_without_sending_it() -> None:
    """Engines often stop on <|call|> and leave it out of the output: still a tool call."""
    name, args = CALLS[0]
    out, _ = harmony_output([(name, args)])
    _, stream = run([TOK.encode(out.removesuffix("<|call|>"))])
    got = read(stream)
    assert got.ordered() == [(name, args)] and got.finish == "tool_calls"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_harmony_output_gives_the_same_calls_however_split(data: st.DataObject) -> None:
    """Outputs drawn from harmony's pieces (headers cut short, stray structural tokens,
    recipients in odd places, raw ids): the calls a client assembles do not depend on how
    the tokens were split into steps, and there is a call exactly when parse() found a
    tool-call message with a body."""
    ids = data.draw(outputs(parser()))
    deltas = [d for d in data.draw(splits(ids)) if d]
    _, whole = run([ids] if ids else [])
    _, split = run(deltas)
    got_whole, got_split = read(whole), read(split)
    assert got_split.ordered() == got_whole.ordered()
    assert got_split.finish == got_whole.finish
    assert (got_whole.finish == "tool_calls") == bool(got_whole.calls)
    if got_whole.calls:
        assert parser().parse(ids, prompt_token_ids=PROMPT).tool_calls
