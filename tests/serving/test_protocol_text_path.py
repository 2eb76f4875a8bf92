"""The Messages and Responses events of a streamed request are written at step time by the
protocol's encoder, handed to the runtime as the request's writer
(``runtime/wire/events.py``): the batch-wide output path hands it each plain row's text
still JSON-escaped, the exact path its chunks. Byte for byte, the events must be those the
same encoder writes when fed the request's chunks one by one.

Each family's output (Qwen3, DeepSeek R1, gpt-oss's harmony, MiniMax-M2's text markers,
Nemotron 3's reasoning-as-content swap; their real or fixture tokenizers) runs through one
runtime as a request per protocol with its writer and as a chunk stream, cut into the same
random steps, alone and among enough other requests that the step takes the batch-wide
pass; where the output path writes a family's plain rows, the writer must have been handed
much of the text that way. A writer that raises fails its own request, never the step.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import anyio
import msgspec
import numpy as np
import pytest

import reasonspan
from reasonspan.runtime.batch.small import SMALL_REQUESTS
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.wire.openai import (
    ChatCompletionChunk,
    ChoiceDelta,
    ChunkChoice,
    CompletionBuilder,
)
from reasonspan.serving.messages_events import MessageEvents, signature
from reasonspan.serving.responses import ResponsesRequest
from reasonspan.serving.responses_events import ResponseEvents, ResponseShape, response_of
from tests.support import paths
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer

OUTPUTS = {
    "qwen3": '<think>\nFirst "quoted" \\ 東京 🙂\n\nthen more.\n</think>\n\nThe answer:\n\n42 ✓',
    "deepseek_r1": 'Plan it.\n</think>\n\nDone, <b>bold</b> & "so".',
    "openai_gptoss": "<|channel|>analysis<|message|>Think 🙂.<|end|>"
    '<|start|>assistant<|channel|>final<|message|>Final "answer".<|return|>',
    "minimax_m2": "a plan\n</think>\n\nAn answer\twith tabs.",
    "nemotron_v3": "Only reasoning, presented as the answer",
}
PROMPTS = {
    "deepseek_r1": "<｜User｜>hi<｜Assistant｜><think>\n",
    "minimax_m2": "]~b]user\nhi[e~[\n]~b]ai\n<think>\n",
    "nemotron_v3": "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n",
}
KWARGS = {"nemotron_v3": {"enable_thinking": False}}
PATH_WRITES = {"qwen3", "deepseek_r1", "minimax_m2"}
"""Families whose plain rows the output path writes (harmony's channels and a reasoning
swap that may still happen take the exact path: their events come from chunks)."""


class Counted:
    """Counts the text the runtime handed a writer from its token tables (``text``)."""

    texts = 0

    def text(self, channel: int, escaped: bytes) -> bytes:
        Counted.texts += 1
        return super().text(channel, escaped)  # type: ignore[misc,no-any-return]


class CountedMessages(Counted, MessageEvents):
    pass


class CountedResponses(Counted, ResponseEvents):
    pass


def encoders(key: str) -> dict[str, tuple[Any, Any]]:
    """Each protocol's encoder of one request, and its closing events."""
    messages = CountedMessages(key, "m", 3)
    responses = CountedResponses(ResponseShape(key, ResponsesRequest(model="m", input="hi"), 0))
    return {
        "messages": (messages, lambda s: messages.end(s.finish_reason, s.stop_sequence, 0)),
        "responses": (responses, lambda s: responses.end(s.finish_reason, None)),
    }


def _no_ids(events: bytes) -> bytes:
    return re.sub(rb'"(rs|msg|fc)_[0-9a-f]{32}"', b'"ID"', events)


@pytest.mark.parametrize("family", sorted(OUTPUTS))
@pytest.mark.parametrize(
    ("seed", "alias", "others", "crowd_writes"),
    [(0, False, 0, False), (1, True, 0, False), (2, False, 40, False), (3, False, 40, True)],
)
def test_events_written_at_step_time_equal_those_of_chunks(
    family: str, seed: int, alias: bool, others: int, crowd_writes: bool
) -> None:
    """``alias``: the runtime also fills ``reasoning_content`` (no writer sees it);
    ``others``: that many more requests of the same output in the batch (the step's
    batch-wide pass, past the scalar lane's :data:`SMALL_REQUESTS`); ``crowd_writes``:
    they have writers too (Messages), so every request on the output path has one."""
    assert not others or others > SMALL_REQUESTS
    tok = tokenizer(FAMILY_TOKENIZERS[family])
    parser = reasonspan.create_parser_sync(family, tok, KWARGS.get(family, {}))
    ids = tok.encode(OUTPUTS[family])
    prompt = tok.encode(PROMPTS[family]) if family in PROMPTS else None
    rt = ReasoningRuntime(reasoning_content_alias=alias)
    writers, readers = encoders("req"), encoders("req")
    written = {
        name: rt.add(f"a-{name}", parser, prompt, writer=w) for name, (w, _) in writers.items()
    }
    chunks = rt.add("b", parser, prompt)
    crowd_writers = [MessageEvents("req", "m", 3) for _ in range(others if crowd_writes else 0)]
    crowd = [
        rt.add(f"c{j}", parser, prompt, writer=crowd_writers[j])
        if crowd_writes
        else rt.add(f"c{j}", parser, prompt, sse=True)
        for j in range(others)
    ]
    streams = [*written.values(), chunks, *crowd]
    out_a = {name: w.start() for name, (w, _) in writers.items()}
    out_b = {name: r.start() for name, (r, _) in readers.items()}
    crowd_out = [b""] * len(crowd_writers)
    Counted.texts = 0
    every: list[ChatCompletionChunk] = []
    rng = random.Random(seed)
    i = 0
    while i <= len(ids):
        k = rng.randint(1, 3)
        piece = ids[i : i + k]
        i += k
        if piece:
            rows = [s.engine_id for s in streams]
            offsets = np.arange(len(streams) + 1) * len(piece)
            rt.step(rows, piece * len(streams), offsets)
        else:
            for s in streams:
                rt.finish(s.engine_id, "stop")
        for name, stream in written.items():
            out_a[name] += stream.ready_bytes()
        got = chunks.ready()
        assert all(type(c) is ChatCompletionChunk for c in got)
        every.extend(got)
        for name, (reader, _) in readers.items():
            for c in got:
                out_b[name] += reader.chunk(c)
        for j, s in enumerate(crowd):
            sent = s.ready_bytes()
            if crowd_writers:
                crowd_out[j] += sent
    for name, (_w, end) in writers.items():
        out_a[name] += end(written[name])
    for name, (_r, end) in readers.items():
        out_b[name] += end(chunks)
    assert out_a["messages"] == out_b["messages"]
    for w, s, got in zip(crowd_writers, crowd, crowd_out, strict=False):
        # Every request on the output path had a writer: each wrote the same events.
        assert w.start() + got + w.end(s.finish_reason, s.stop_sequence, 0) == out_a["messages"]
    want = parser.parse(ids)
    if want.reasoning:
        assert signature(want.reasoning).encode() in out_a["messages"]
    # The streamed response's last snapshot is the response a whole request gets.
    builder = CompletionBuilder()
    for c in every:
        builder.add(c)
    shape = ResponseShape("req", ResponsesRequest(model="m", input="hi"), 0)
    whole = json.loads(_no_ids(msgspec.json.encode(response_of(shape, builder.build()))))
    last = out_a["responses"].rstrip(b"\n").rsplit(b"\n\n", 1)[1]
    assert last.startswith(b"event: response.completed\ndata: ")
    streamed = json.loads(_no_ids(last.split(b"data: ", 1)[1]))["response"]
    assert streamed["output"] == whole["output"]
    if family in PATH_WRITES:  # the output path handed the writers the plain text rows
        assert Counted.texts >= len(ids) // 2, Counted.texts


class Failing(MessageEvents):
    """A writer with a bug: it raises on the third piece of text it is handed."""

    def __init__(self) -> None:
        super().__init__("bad", "m", 1)
        self.calls = 0

    def text(self, channel: int, escaped: bytes) -> bytes:
        self.calls += 1
        if self.calls == 3:
            raise ValueError("writer bug")
        return super().text(channel, escaped)

    def chunk(self, chunk: ChatCompletionChunk) -> bytes:
        self.calls += 1
        if self.calls == 3:
            raise ValueError("writer bug")
        return super().chunk(chunk)


@pytest.mark.parametrize("others", [0, 3, 40])
def test_a_writer_that_raises_fails_its_own_request_alone(others: int) -> None:
    """Its request ends with the error (the engine is told to stop it); every other
    request of the batch, with a writer or not, gets its whole answer."""
    tok = tokenizer(FAMILY_TOKENIZERS["qwen3"])
    parser = reasonspan.create_parser_sync("qwen3", tok)
    ids = tok.encode(OUTPUTS["qwen3"])
    rt = ReasoningRuntime()
    bad = rt.add("bad", parser, None, writer=Failing())
    good_writer = MessageEvents("good", "m", 1)
    good = rt.add("good", parser, None, writer=good_writer)
    crowd = [rt.add(f"c{j}", parser, None, sse=True) for j in range(others)]
    streams = [bad, good, *crowd]
    for t in ids:
        live = [s for s in streams if s.request_id in rt]
        rt.step([s.engine_id for s in live], [t] * len(live), np.arange(len(live) + 1))
    assert "bad" not in rt
    assert bad.engine_id in rt.take_aborted()
    with pytest.raises(reasonspan.RequestFailedError, match="writer bug"):
        bad.ready_bytes()
    rt.finish("good", "stop")
    events = good_writer.start() + good.ready_bytes() + good_writer.end("stop", None, 0)
    want = parser.parse(ids)
    assert signature(want.reasoning).encode() in events
    pieces = re.findall(rb'"text_delta","text":("(?:[^"\\]|\\.)*")', events)
    assert "".join(json.loads(p) for p in pieces) == want.content


def test_a_request_with_a_writer_is_not_read_as_chunks() -> None:
    """Its queue holds the writer's event bytes: reading it as chunks (iteration,
    ``ready()``, Chat Completions' ``sse_events()``) is an error naming the request and the
    reads that work, before anything is taken from the queue."""
    tok = tokenizer(FAMILY_TOKENIZERS["qwen3"])
    parser = reasonspan.create_parser_sync("qwen3", tok)
    rt = ReasoningRuntime()
    writer = MessageEvents("m", "m", 1)
    stream = rt.add("w", parser, None, writer=writer)
    ids = tok.encode("<think>\nhi")
    rt.step([stream.engine_id], ids, [0, len(ids)])
    for read in (stream.ready, stream.__aiter__):
        with pytest.raises(TypeError, match="'w' as chunks: it was added with a writer"):
            read()

    async def first_event() -> bytes:
        async for event in stream.sse_events():
            return event
        return b""

    with pytest.raises(TypeError, match="written\\(\\) or ready_bytes\\(\\)"):
        anyio.run(first_event)
    assert b"thinking_delta" in stream.ready_bytes()


def _calls_chunk(*entries: tuple[int, str | None, str]) -> ChatCompletionChunk:
    from reasonspan.runtime.wire.call_messages import tool_call_entry

    calls = [tool_call_entry(i, name, args) for i, name, args in entries]
    return ChatCompletionChunk(
        id="c", created=0, model="m", choices=[ChunkChoice(0, ChoiceDelta(tool_calls=calls))]
    )


def test_calls_of_one_region_are_sent_one_after_another() -> None:
    """The runtime streams the calls of one region as they are written but holds each
    one's closing brace until the region is read (a region cut by ``max_tokens`` drops its
    calls): call 0 ends after call 1 began. Chat Completions carries that by index;
    Messages blocks and Responses items must not interleave, so call 1 is sent whole once
    the run of calls ends, and call 0's ``.done`` holds its whole arguments (it had
    ``{"city":"Zürich"`` without its brace)."""
    chunks = [
        _calls_chunk((0, "get_weather", '{"city":')),
        _calls_chunk((0, None, '"Zürich"')),
        _calls_chunk((1, "note", '{"text":')),
        _calls_chunk((1, None, '"hi"')),
        _calls_chunk((0, None, "}"), (1, None, "}")),
        ChatCompletionChunk(
            id="c", created=0, model="m", choices=[ChunkChoice(0, ChoiceDelta(content="Done."))]
        ),
    ]
    messages = MessageEvents("m1", "m", 1)
    responses = ResponseEvents(ResponseShape("r1", ResponsesRequest(model="m", input="x"), 0))
    got = {}
    for name, writer in (("messages", messages), ("responses", responses)):
        events = writer.start() + b"".join(writer.chunk(c) for c in chunks)
        if writer is messages:
            events += messages.end("stop", None, 0)
        else:
            events += responses.end("stop", None)
        got[name] = paths.read_protocol(events)  # (it checks that parts never interleave)
    want = ("", "Done.", [("get_weather", '{"city":"Zürich"}'), ("note", '{"text":"hi"}')])
    assert got == {"messages": want, "responses": want}
    # Call 0 streamed as written: its two first fragments are two deltas.
    assert json_deltas(chunks[:2]) == ['{"city":', '"Zürich"']


def json_deltas(chunks: list[ChatCompletionChunk]) -> list[str]:
    """The ``input_json_delta`` fragments a Messages writer sends for ``chunks``."""
    fresh = MessageEvents("m2", "m", 1)
    events = b"".join(fresh.chunk(c) for c in chunks)
    return [
        json.loads(e.split(b"data: ", 1)[1])["delta"]["partial_json"]
        for e in events.split(b"\n\n")
        if e.startswith(b"event: content_block_delta")
    ]
