"""The batch-wide output path (``runtime/stream/sse_path.py``): requests added with ``sse=True``
get most of their events as bytes written straight from pre-escaped token pieces. The
properties: those bytes are exactly what msgspec encodes the chunk Structs to; an SSE
request's stream is the same chunk sequence as the same request read as chunk objects,
for every family, any split into steps, k tokens per step, mixed batches with churn; and
its text is parse()'s."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import anyio
import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.batch import step as batch_module
from reasonspan.runtime.stream import sse_path, sse_templates
from reasonspan.runtime.stream.runtime import ReasoningRuntime, RequestStream
from reasonspan.runtime.text import decoder_states
from reasonspan.runtime.text.decoder_states import DecoderState
from reasonspan.runtime.text.formatters import WHITESPACE
from reasonspan.runtime.text.token_text import TokenText
from reasonspan.runtime.wire.openai import ChatCompletionChunk, FinishReason
from reasonspan.runtime.wire.sse import DONE, chunk_of_event, sse_event
from reasonspan.tokenizer.loader import LoadedTokenizer, load_tokenizer_sync
from tests.support.fixtures import FAMILY_KWARGS, FAMILY_TOKENIZERS, real_folder, tokenizer
from tests.support.sampling import examples
from tests.support.strategies import outputs, splits

CASES = [(f, k) for f in sorted(FAMILY_TOKENIZERS) for k in FAMILY_KWARGS.get(f, [{}])]
_parsers: dict[str, reasonspan.ReasoningParser] = {}


def parser_for(family: str, kwargs: dict[str, Any]) -> reasonspan.ReasoningParser:
    key = f"{family}-{sorted(kwargs.items())}"
    if key not in _parsers:
        tok = tokenizer(FAMILY_TOKENIZERS[family])
        _parsers[key] = reasonspan.create_parser_sync(family, tok, kwargs)
    return _parsers[key]


def events_of(blob: bytes) -> list[bytes]:
    """Single ``data:`` events of a run of event bytes (a final chunk with usage is two)."""
    parts = blob.split(b"\n\n")
    assert parts[-1] == b""
    return [p + b"\n\n" for p in parts[:-1]]


def same_wire(chunk: ChatCompletionChunk) -> ChatCompletionChunk:
    """The chunk without what differs between two requests added a moment apart (the
    creation second, the random ids of tool calls)."""
    for choice in chunk.choices:
        for call in choice.delta.tool_calls or ():
            if call.id is not None:
                call.id = "call"
    return msgspec.structs.replace(chunk, created=0, id="x")


def texts(chunks: list[ChatCompletionChunk]) -> tuple[str, str]:
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    return "".join(d.reasoning or "" for d in deltas), "".join(d.content or "" for d in deltas)


class Pair:
    """One output stepped twice in the same batch: read as chunk objects, and as SSE."""

    def __init__(
        self,
        runtime: ReasoningRuntime,
        key: str,
        parser: reasonspan.ReasoningParser,
        tools: list[dict[str, Any]] | None = None,
        alone: ReasoningRuntime | None = None,
        **options: Any,
    ):
        """``alone``: the SSE request goes into this runtime instead (stepped apart)."""
        self.obj = runtime.add(
            f"{key}-obj", parser, None, completion_id="c", tools=tools, **options
        )
        self.sse = (runtime if alone is None else alone).add(
            f"{key}-sse",
            parser,
            None,
            completion_id="c",
            tools=tools,
            sse=True,
            include_usage=True,
            **options,
        )
        self.alone = alone
        self.chunks: list[ChatCompletionChunk] = []
        self.events: list[bytes] = []
        self.written = 0
        """Events the output path wrote as bytes (the rest were encoded on reading)."""

    def run(
        self, runtime: ReasoningRuntime, ids: list[int], k: int = 1
    ) -> list[ChatCompletionChunk]:
        """Step both requests ``k`` tokens at a time (until a stop string ends them), in
        one step, or each alone in its runtime when the SSE one was added ``alone``;
        finish them, and return the checked chunks (:meth:`check`)."""
        other = runtime if self.alone is None else self.alone
        for at in range(0, len(ids), k):
            if self.obj.request_id not in runtime:
                assert self.sse.request_id not in other  # a stop string ended both
                break
            delta = ids[at : at + k]
            if self.alone is None:
                step_rows(runtime, [(self.obj, delta), (self.sse, delta)])
            else:
                step_rows(runtime, [(self.obj, delta)])
                step_rows(other, [(self.sse, delta)])
            self.drain()
        if self.obj.request_id in runtime:
            runtime.finish(self.obj.request_id)
            other.finish(self.sse.request_id)
        self.drain()
        return self.check()

    def end_as_parsed(
        self,
        runtime: ReasoningRuntime,
        parser: reasonspan.ReasoningParser,
        ids: list[int],
    ) -> list[ChatCompletionChunk]:
        """Finish both requests with "length" (the SSE one in its own runtime when it was
        added ``alone``), check them (:meth:`check`) and their text against
        ``parse(ids)``; return the chunks."""
        runtime.finish(str(self.obj.request_id), "length")
        (runtime if self.alone is None else self.alone).finish(str(self.sse.request_id), "length")
        self.drain()
        chunks = self.check()
        expected = parser.parse(ids)
        assert texts(chunks) == (expected.reasoning or "", expected.content or "")
        return chunks

    def drain(self) -> None:
        self.written += sum(isinstance(x, bytes) for x in self.sse._rec.queue)
        self.chunks += self.obj.ready()
        for blob in self.sse.ready_events():
            self.events += events_of(blob)

    def check(self) -> list[ChatCompletionChunk]:
        """Every event is the msgspec encoding of the chunk it holds, and the SSE stream is
        the object stream chunk for chunk; returns the chunks."""
        decoded = [chunk_of_event(e) for e in self.events]
        for event, chunk in zip(self.events, decoded, strict=True):
            assert sse_event(chunk) == event
        # The wire sends the final usage apart, in a chunk without choices (include_usage).
        *decoded, usage = decoded
        assert usage.choices == [] and usage.usage is not None and decoded[-1].usage is None
        decoded[-1] = msgspec.structs.replace(decoded[-1], usage=usage.usage)
        assert [same_wire(c) for c in decoded] == [same_wire(c) for c in self.chunks]
        return decoded


def step_rows(runtime: ReasoningRuntime, rows: list[tuple[RequestStream, list[int]]]) -> None:
    rids = np.array([s.engine_id for s, _ in rows], np.int64)
    toks = np.array([t for _, d in rows for t in d], np.int64)
    offs = np.cumsum([0] + [len(d) for _, d in rows])
    runtime.step(rids, toks, offs)


@pytest.mark.parametrize(("family", "kwargs"), CASES, ids=[f"{f}-{k}" for f, k in CASES])
@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_one_request_alone_is_the_chunk_stream_byte_for_byte(
    family: str, kwargs: dict[str, Any], data: st.DataObject
) -> None:
    """One request alone in its runtime, a token per step but for a few steps of several
    (a draft model's) or none (the lane of one request: ``ReasoningBatch.step_one``,
    then ``SSEPath.emit_one`` for one token, ``SSEPath.emit`` for several): its events
    decode to the chunks of the same output read as objects in a runtime of its own,
    each event is msgspec's encoding of its chunk, and the lane was taken."""
    parser = parser_for(family, kwargs)
    ids = data.draw(outputs(parser), label="ids")
    deltas: list[list[int]] = []
    pos = 0
    while pos < len(ids):  # mostly one token, now and then two or none
        k = data.draw(st.sampled_from([1, 1, 1, 1, 1, 2, 4, 0]), label="k")
        deltas.append(ids[pos : pos + k])
        pos += k
    runtime, alone = ReasoningRuntime(), ReasoningRuntime()
    pair = Pair(runtime, "r", parser, alone=alone)
    routed = alone.batch.is_vectorized(pair.sse.engine_id)
    taken: list[bool] = []
    real = batch_module.step_one

    def counting(*args: Any) -> Any:
        got = real(*args)
        if args[0] is alone.batch._slots:  # (the object twin's runtime takes it too)
            taken.append(got is not None)
        return got

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batch_module, "step_one", counting)
        for delta in deltas:
            step_rows(runtime, [(pair.obj, delta)])
            step_rows(alone, [(pair.sse, delta)])
            pair.drain()
    pair.end_as_parsed(runtime, parser, ids)
    # The lane takes every step with tokens of a table-routed request, nothing else.
    assert sum(taken) == (sum(len(d) > 0 for d in deltas) if routed else 0)


@pytest.mark.parametrize(("family", "kwargs"), CASES, ids=[f"{f}-{k}" for f, k in CASES])
@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_sse_stream_is_the_chunk_stream_byte_for_byte(
    family: str, kwargs: dict[str, Any], data: st.DataObject
) -> None:
    """Every family, any output, any split into steps (k tokens, empty steps too): the
    SSE request's events decode to the object request's chunks, each event is exactly
    msgspec's encoding of its chunk, and the text is parse()'s. Half the examples force
    the numpy path that batches of more than ``SMALL`` requests take."""
    parser = parser_for(family, kwargs)
    ids = data.draw(outputs(parser), label="ids")
    deltas = data.draw(splits(ids), label="deltas")
    vectorized = data.draw(st.booleans(), label="vectorized")
    runtime = ReasoningRuntime()
    pair = Pair(runtime, "r", parser)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sse_path, "SMALL", 0 if vectorized else sse_path.SMALL)
        for delta in deltas:
            step_rows(runtime, [(pair.obj, delta), (pair.sse, delta)])
            pair.drain()
    chunks = pair.end_as_parsed(runtime, parser, ids)
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == len(ids)


def test_plain_tokens_are_written_by_the_batch_path() -> None:
    """On ordinary prose nearly every token's event comes from the output path (not a
    chunk Struct encoded later): the path is really taken, not just correct."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    prose = " ".join(["The quick brown fox jumps over the lazy dog, again."] * 12)
    ids = tok.encode(f"<think>\n{prose}\n</think>\n\n{prose}")
    runtime = ReasoningRuntime()
    pair = Pair(runtime, "r", parser)
    pair.run(runtime, ids)
    text_events = len(pair.chunks) - 2  # the role chunk and the final chunk
    assert pair.written >= 0.9 * text_events


def test_one_request_alone_writes_plain_tokens_through_the_lane() -> None:
    """One request alone on ordinary prose: nearly every token's event is written by the
    one-token lane (``SSEPath.emit_one``), and the stream is the chunk stream."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    prose = " ".join(["The quick brown fox jumps over the lazy dog, again."] * 12)
    ids = tok.encode(f"<think>\n{prose}\n</think>\n\n{prose}")
    runtime = ReasoningRuntime()
    pair = Pair(runtime, "r", parser, alone=ReasoningRuntime())
    pair.run(runtime, ids)
    assert pair.written >= 0.9 * (len(pair.chunks) - 2)


@pytest.mark.parametrize("sse", [False, True])
def test_admission_builds_no_decoder(sse: bool) -> None:
    """A request's text decoder is built when its first text takes the exact path, not
    when it is admitted: an SSE request's plain prose (the output path's) builds none, its
    first marker takes it out of the fresh state (a decoder built, or the shared state
    after that row: ``runtime/text/decoder_states.py``); a request read as chunk objects builds
    it at its first token."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    prompt = tok.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n")
    runtime = ReasoningRuntime()
    stream = runtime.add("r", parser, prompt, sse=sse)
    assert stream._rec.decoder is None
    prose = tok.encode("Let me think about it")
    for t in prose:
        step_rows(runtime, [(stream, [t])])
    assert (stream._rec.decoder is None) == sse
    step_rows(runtime, [(stream, tok.encode("</think>"))])
    rec = stream._rec
    assert rec.decoder is not None or (rec.state is not None and rec.state.path)


def test_a_decoder_built_late_reads_as_one_built_at_admission() -> None:
    """Requests whose decoder is built when its first text leaves the output path (after
    plain prose, at a split character or a marker) stream exactly what a twin whose
    decoder was built at admission streams, and the text is parse()'s and the pieces the
    output was made of."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    prompt = tok.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n")
    bird = "\U0001f99c"
    split = tok.encode(bird)
    assert len(split) > 1  # a character split across tokens: the exact path's
    thought = f"Plain words first, then a parrot {bird} and a split {bird}{bird} again."
    answer = f"A parrot: {bird}, said twice {bird}."
    ids = tok.encode(f"{thought}\n</think>\n\n{answer}")
    runtime = ReasoningRuntime()
    late = runtime.add("late", parser, prompt, sse=True, include_usage=True)
    early = runtime.add("early", parser, prompt, sse=True, include_usage=True)
    early._rec.text_decoder()
    events: dict[str, list[bytes]] = {"late": [], "early": []}
    built_at = None
    for i, t in enumerate(ids):
        step_rows(runtime, [(late, [t]), (early, [t])])
        if built_at is None and late._rec.decoder is not None:
            built_at = i
        for s in (late, early):
            for blob in s.ready_events():
                events[str(s.request_id)] += events_of(blob)
    runtime.finish("late")
    runtime.finish("early")
    for s in (late, early):
        for blob in s.ready_events():
            events[str(s.request_id)] += events_of(blob)
    assert built_at is not None and built_at > 0  # plain prose first, on the output path
    chunks = {k: [same_wire(chunk_of_event(e)) for e in v] for k, v in events.items()}
    assert chunks["late"] == chunks["early"]
    expected = parser.parse(ids, prompt)
    assert texts(chunks["late"]) == (expected.reasoning, expected.content) == (thought, answer)


def test_each_request_s_events_carry_its_own_id() -> None:
    """Requests of one model added in the same second share their event templates but for
    the id: every event, written by the output path or encoded, carries its own request's
    id, JSON-escaped as msgspec escapes it (quotes, backslashes, control and non-ASCII
    characters, the templates' own placeholder characters)."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    prose = " ".join(["Plain words, one after another."] * 4)
    ids = tok.encode(f"<think>\n{prose}\n</think>\n\n{prose}")
    completion_ids = [
        "chatcmpl-a",
        "chatcmpl-b",
        'quote " and back\\slash',
        "tab\tnewline\n\u00e9\u4e2d\U0001f600",
        sse_templates.ID,
        sse_templates.SENTINEL,
        "",
    ]
    runtime = ReasoningRuntime(model="one-model")
    streams = [
        runtime.add(f"r{i}", parser, None, completion_id=cid, sse=True)
        for i, cid in enumerate(completion_ids)
    ]
    events: list[list[bytes]] = [[] for _ in streams]
    written = 0
    for t in ids:
        step_rows(runtime, [(s, [t]) for s in streams])
        for got, s in zip(events, streams, strict=True):
            written += sum(isinstance(x, bytes) for x in s._rec.queue)
            for blob in s.ready_events():
                got += events_of(blob)
    assert written > len(ids)  # the output path wrote most of them
    for cid, got in zip(completion_ids, events, strict=True):
        assert len(got) > len(ids) // 2
        for event in got:
            chunk = chunk_of_event(event)
            assert chunk.id == cid
            assert sse_event(chunk) == event


def test_tool_requests_ride_the_path_outside_their_calls() -> None:
    """A request that offers tools: its answer text around the calls is written by the
    output path (the extractor sees only the openers), the calls come whole, and the
    stream is its object twin's."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    prose = " ".join(["Let me check the weather for you, one city at a time."] * 6)
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    ids = tok.encode(f"<think>\n{prose}\n</think>\n\n{prose}\n{call}\n{call}")
    runtime = ReasoningRuntime()
    pair = Pair(runtime, "r", parser, tools)
    chunks = pair.run(runtime, ids)
    calls = [c for ch in chunks if ch.choices for c in ch.choices[0].delta.tool_calls or ()]
    assert [(c.function.name, c.function.arguments) for c in calls if c.function] == [
        ("get_weather", '{"city":"Paris"}')
    ] * 2
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    text_events = sum(1 for ch in chunks if ch.choices and not ch.choices[0].delta.tool_calls) - 2
    assert pair.written >= 0.8 * text_events


# ---------------------------------------------------------------- tool calls on the path

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
_HERMES = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
_NS = "]<]minimax[>["
TOOL_CALLS: dict[str, str] = {
    "qwen3": _HERMES,
    "qwen3_instruct": _HERMES,
    "mimo": _HERMES,
    "declared": _HERMES,
    "glm45": "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
    "</tool_call>",
    "glm47": "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>",
    "gemma4": '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>',
    "minimax_m2": '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">'
    "Paris</parameter>\n</invoke>\n</minimax:tool_call>",
    "minimax_m3": f'{_NS}<tool_call>\n{_NS}<invoke name="get_weather">{_NS}<city>Paris{_NS}'
    f"</city>{_NS}</invoke>\n{_NS}</tool_call>",
    "mistral": '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}',
    "kimi_k2": "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
    '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>',
    "kimi_k3": '<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
    "<|close|>call<|sep|><|close|>tools<|sep|>",
    "deepseek_v3": "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
    '{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    "deepseek_v4": '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter '
    'name="city" string="true">Paris</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>',
    "llama3_json": '{"name": "get_weather", "parameters": {"city": "Paris"}}',
    "llama4_pythonic": '[get_weather(city="Paris")]',
}
"""One call to ``get_weather`` in each tool-call format's own markup (every family with
one but harmony, whose calls are messages), read as that call by ``parse()``."""
TOOL_CASES = [(f, k) for f in sorted(TOOL_CALLS) for k in FAMILY_KWARGS.get(f, [{}])]
THOUGHT = ["I need the weather.", " The", ".", " Let me think", "\n\n", " 😀", "Hmm,"]


def calls_of(chunks: list[ChatCompletionChunk]) -> list[tuple[str, str]]:
    """The ``(name, arguments)`` calls a client assembles from the chunks' deltas."""
    got: dict[int, list[str]] = {}
    for chunk in chunks:
        for call in chunk.choices[0].delta.tool_calls or () if chunk.choices else ():
            slot = got.setdefault(call.index, ["", ""])
            if call.function is not None:
                slot[0] += call.function.name or ""
                slot[1] += call.function.arguments or ""
    return [(name, args) for _, (name, args) in sorted(got.items())]


def tool_pieces(parser: reasonspan.ReasoningParser) -> list[list[str]]:
    """What a family that offers tools writes, in four kinds drawn alike: its reasoning
    markers, its call format's markers, a whole call of its format, reasoning text."""
    fmt = parser.machine.spec.tool_calls
    assert fmt is not None
    marks = [*fmt.open, *fmt.close, *fmt.json_after, *fmt.call_close, *fmt.open_in_body]
    marks += [m for m in (fmt.string_quote, fmt.leading) if m]
    reasoning = [text for text, _kind in parser.machine.spec.markers()]
    return [reasoning, marks, [TOOL_CALLS[parser.spec.name]], THOUGHT]


@st.composite
def tool_outputs(draw: st.DrawFn, parser: reasonspan.ReasoningParser) -> list[int]:
    """Outputs of a family that offers tools (:func:`tool_pieces`) in any order (a
    ``<think>`` inside a call region, a call inside reasoning, an opener that never
    closes), adjacent text encoded together as a model writes it."""
    pool = st.one_of(*(st.sampled_from(kind) for kind in tool_pieces(parser) if kind))
    pieces = draw(st.lists(pool, min_size=1, max_size=16), label="pieces")
    ids: list[int] = parser.tokenizer.encode("".join(pieces))
    return ids


@pytest.mark.parametrize(("family", "kwargs"), TOOL_CASES, ids=[f"{f}-{k}" for f, k in TOOL_CASES])
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_tool_requests_in_steps_of_k_are_parse(
    family: str, kwargs: dict[str, Any], data: st.DataObject
) -> None:
    """Every family with a tool-call format, tools offered, ``k`` = 1 to 4 tokens a step,
    the SSE request beside its object twin (the small path or the numpy path) or alone in
    its runtime (the lane of one request): its stream is the twin's chunk for chunk, and
    its reasoning, content and calls are ``parse(tools=)``'s. The call extractor holds a
    region's tokens, reasoning ones too, until the region closes; a row the output path
    wrote while it held them would come out before them (reasoning
    was once reordered on the SSE path)."""
    parser = parser_for(family, kwargs)
    ids = data.draw(tool_outputs(parser), label="ids")
    k = data.draw(st.integers(1, 4), label="k")
    lane = data.draw(st.sampled_from(["beside", "vectorized", "alone"]), label="lane")
    runtime = ReasoningRuntime()
    alone = ReasoningRuntime() if lane == "alone" else None
    pair = Pair(runtime, "r", parser, TOOLS, alone=alone)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sse_path, "SMALL", 0 if lane == "vectorized" else sse_path.SMALL)
        chunks = pair.run(runtime, ids, k)
    expected = parser.parse(ids, tools=TOOLS, finish_reason="stop")  # as Pair.run ends it
    assert texts(chunks) == (expected.reasoning or "", expected.content or "")
    assert calls_of(chunks) == [(c.name, c.arguments) for c in expected.tool_calls]


@pytest.mark.parametrize("lane", ["beside", "vectorized", "alone"])
def test_reasoning_inside_a_call_region_keeps_its_order(lane: str) -> None:
    """The minimal case of reordered reasoning: MiMo with thinking on, tools offered, the
    output ``<tool_call>``, ``<think>``, `` The``, ``.`` in steps of 3 then 1. The call
    extractor holds `` The`` (its region is open); the ``.`` must not be written before
    it: the reasoning is `` The.``, as ``parse()`` says (it was ``. The``)."""
    parser = parser_for("mimo", {"enable_thinking": True})
    tok = parser.tokenizer
    ids = [tok.encode(t)[0] for t in ("<tool_call>", "<think>", " The", ".")]
    assert tok.decode(ids) == "<tool_call><think> The."
    runtime = ReasoningRuntime()
    alone = ReasoningRuntime() if lane == "alone" else None
    pair = Pair(runtime, "r", parser, TOOLS, alone=alone)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sse_path, "SMALL", 0 if lane == "vectorized" else sse_path.SMALL)
        chunks = pair.run(runtime, ids, 3)
    expected = parser.parse(ids, tools=TOOLS, finish_reason="stop")  # as Pair.run ends it
    assert (expected.reasoning, expected.tool_calls) == (" The.", [])
    assert texts(chunks) == (" The.", expected.content or "")


@pytest.mark.parametrize(
    "options",
    [{"include_reasoning": False}, {"stop": ["42"]}, {"skip_special_tokens": False}],
    ids=["no-reasoning", "stop", "keep-special"],
)
@pytest.mark.parametrize("alone", [0, 1, 3], ids=["beside", "alone-k1", "alone-k3"])
def test_request_options_on_the_path(options: dict[str, Any], alone: int) -> None:
    """Options that change what is sent (reasoning left out, a stop string, special
    tokens kept) give the same stream on the SSE path as read as chunk objects: the two
    requests stepped together, or each alone in its runtime with ``alone`` tokens a step
    (the lanes of one request)."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    prose = " ".join(["Think it through, step by step."] * 5)
    ids = tok.encode(f"<think>\n{prose}\n</think>\n\nThe answer is 42, of course.<|im_end|>")
    runtime = ReasoningRuntime()
    pair = Pair(runtime, "r", parser, alone=ReasoningRuntime() if alone else None, **options)
    reasoning, content = texts(pair.run(runtime, ids, k=alone or 1))
    if alone:
        assert pair.written > 0
    assert reasoning == ("" if options.get("include_reasoning") is False else prose)
    if "stop" in options:
        assert content == "The answer is "
    elif options.get("skip_special_tokens") is False:
        assert content == "The answer is 42, of course.<|im_end|>"


def test_options_in_turn_in_one_runtime() -> None:
    """Requests of one parser with different options, admitted one after another into
    one runtime (each starts from the slot state its parser and options give, worked out
    once and then copied: a copy made for other options would send what they leave out,
    or leave out what they send), each the same stream as read as chunk objects."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    prose = " ".join(["Think it through, step by step."] * 5)
    ids = tok.encode(f"<think>\n{prose}\n</think>\n\nThe answer is 42, of course.<|im_end|>")
    runtime = ReasoningRuntime()
    cases: list[tuple[dict[str, Any], tuple[str, str]]] = [
        ({}, (prose, "The answer is 42, of course.")),
        ({"include_reasoning": False}, ("", "The answer is 42, of course.")),
        ({"skip_special_tokens": False}, (prose, "The answer is 42, of course.<|im_end|>")),
        ({}, (prose, "The answer is 42, of course.")),
        (
            {"include_reasoning": False, "skip_special_tokens": False},
            ("", "The answer is 42, of course.<|im_end|>"),
        ),
    ]
    for i, (options, want) in enumerate(cases):
        pair = Pair(runtime, f"r{i}", parser, **options)
        assert texts(pair.run(runtime, ids)) == want, options
        assert pair.written > 0


def test_a_tokenizer_without_a_byte_table_takes_the_exact_path(tmp_path: Path) -> None:
    """Text that is not simply the tokens' bytes (any decoder but a plain ByteLevel one;
    here Qwen3's tokenizer with its ByteLevel decoder wrapped in a ``Sequence``, which
    decodes the same but is not recognised as a byte table): such a request is served
    entirely by the exact path, with the same stream."""
    data = json.loads((real_folder("qwen-3") / "tokenizer.json").read_text(encoding="utf-8"))
    data["decoder"] = {"type": "Sequence", "decoders": [data["decoder"]]}
    (tmp_path / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    tok = load_tokenizer_sync(tmp_path)
    assert not tok.byte_level
    parser = reasonspan.create_parser_sync("qwen3", tok)
    ids = tok.encode("<think>\nA plan.\n</think>\n\nSome words, then more words.")
    runtime = ReasoningRuntime()
    pair = Pair(runtime, "r", parser)
    assert texts(pair.run(runtime, ids)) == ("A plan.", "Some words, then more words.")
    assert pair.written == 0


@pytest.mark.parametrize("alias", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_mixed_batch_with_churn(alias: bool, seed: int) -> None:
    """Requests of several families and tokenizers join and leave one batch over time, a
    random k per request per step (0 to 4): each SSE stream is its object twin's, and
    both are parse() of what the engine sent (``reasoning_content`` too, with the alias)."""
    rng = random.Random(seed)
    families = ["qwen3", "deepseek_r1", "glm47", "minimax_m3", "kimi_k3", "openai_gptoss"]
    runtime = ReasoningRuntime(reasoning_content_alias=alias)
    live: dict[str, tuple[Pair, list[int], int, reasonspan.ReasoningParser]] = {}
    done = 0
    n = 0
    while done < 40:
        while len(live) < 12 and n < 40:
            parser = parser_for(rng.choice(families), {})
            mock = parser.tokenizer.encode(
                '<think>\nA plan: "quote"\t\\ é 日本語 😀\n</think>\n\nAnswer: 42 ✓.'
            )
            live[f"q{n}"] = (
                Pair(runtime, f"q{n}", parser),
                mock[: rng.randint(1, len(mock))],
                0,
                parser,
            )
            n += 1
        rows: list[tuple[RequestStream, list[int]]] = []
        for key, (pair, ids, at, parser) in list(live.items()):
            k = rng.randint(0, 4)
            delta = ids[at : at + k]
            rows += [(pair.obj, delta), (pair.sse, delta)]
            live[key] = (pair, ids, at + len(delta), parser)
        rng.shuffle(rows)
        step_rows(runtime, rows)
        for key, (pair, ids, at, parser) in list(live.items()):
            pair.drain()
            if at == len(ids):
                runtime.finish(f"{key}-obj")
                runtime.finish(f"{key}-sse")
                pair.drain()
                chunks = pair.check()
                expected = parser.parse(ids)
                assert texts(chunks) == (expected.reasoning or "", expected.content or "")
                if alias:
                    alias_text = "".join(
                        c.choices[0].delta.reasoning_content or "" for c in chunks if c.choices
                    )
                    assert alias_text == (expected.reasoning or "")
                del live[key]
                done += 1
    assert len(runtime) == 0


@pytest.mark.parametrize("vectorized", [False, True])
def test_a_request_off_the_path_with_a_larger_vocabulary(vectorized: bool) -> None:
    """A request read as chunks whose vocabulary (MiniMax, real: about 200k ids) is larger
    than that of every request on the path (Qwen3, about 152k) shares its steps, with ids
    past the path's masks: the step goes on, its text is parse()'s, and the SSE request
    beside it is its object twin."""
    qwen = parser_for("qwen3", {})
    minimax = parser_for("minimax_m2", {})
    qvocab = qwen.machine.vocab_size
    assert minimax.machine.vocab_size > qvocab + 40_000
    big = minimax.tokenizer.encode("<think>\nA thought.\n</think>\n\nAn answer.")
    big[3:3] = [qvocab + 1000, qvocab + 20_000]  # ordinary MiniMax ids past Qwen3's
    ids = qwen.tokenizer.encode("<think>\nPlain, é.\n</think>\n\nThe answer: 42.")
    runtime = ReasoningRuntime()
    pair = Pair(runtime, "q", qwen)
    other = runtime.add("m", minimax, None)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sse_path, "SMALL", 0 if vectorized else sse_path.SMALL)
        for at in range(max(len(ids), len(big))):
            rows = [(pair.obj, ids[at : at + 1]), (pair.sse, ids[at : at + 1])]
            step_rows(runtime, [*rows, (other, big[at : at + 1])])
            pair.drain()
    chunks = other.ready()
    runtime.finish("m", "length")
    chunks += other.ready()
    expected = minimax.parse(big)
    assert texts(chunks) == (expected.reasoning or "", expected.content or "")
    pair.end_as_parsed(runtime, qwen, ids)


@pytest.mark.parametrize("rows", [1, 3, 40])
@pytest.mark.parametrize("k", [1, 3])
def test_requests_off_the_path_in_slots_past_it(rows: int, k: int) -> None:
    """The path's per-slot arrays are grown by requests that ride it; a server mixes
    them with requests read as chunks (``stream=false``), which may sit in slots past
    them. Such requests stepped alone, a few or many (the numpy path) at a time, with
    and without the SSE request: every step goes on, their text is parse()'s, and the
    SSE request is its object twin. (Before: the step raised IndexError.)"""
    qwen = parser_for("qwen3", {})
    ids = qwen.tokenizer.encode("<think>\nPlain, é.\n</think>\n\nThe answer: 42.")
    runtime = ReasoningRuntime()
    pair = Pair(runtime, "q", qwen)
    far = [runtime.add(f"far-{i}", qwen, None) for i in range(80)]
    assert runtime.batch.slot_of(far[-1].engine_id) >= 64  # past the path's first arrays
    stepped = far[-rows:]
    for at in range(0, len(ids), k):
        delta = ids[at : at + k]
        step_rows(runtime, [(s, delta) for s in stepped])  # off the path alone
        step_rows(runtime, [(pair.obj, delta), (pair.sse, delta), (stepped[0], [])])
        pair.drain()
    for s in stepped:
        chunks = s.ready()
        runtime.finish(str(s.request_id), "length")
        chunks += s.ready()
        expected = qwen.parse(ids)
        assert texts(chunks) == (expected.reasoning or "", expected.content or "")
    pair.end_as_parsed(runtime, qwen, ids)


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_any_subset_of_mixed_requests_per_step(seed: int) -> None:
    """A server's batch: SSE requests (each beside its object twin) and requests read
    only as chunks (``stream=false``), of several families and vocabularies, up to 100
    live (past the path's first arrays), joining and leaving; each step takes a random
    subset of them (one request alone, a few, or many: the lanes, the small path and the
    numpy path), each with 0 to 4 tokens; some with ``include_reasoning=False`` or a
    stop string, the runtime with and without the ``reasoning_content`` alias; a
    hold-back family (multi-token markers) and harmony among them now and then (every
    step then takes the general path); a quarter offering tools, of any family with a
    call format (:func:`tool_pieces` in any order: a ``<think>`` inside a call region).
    Every request's text and calls are ``parse()`` of what the engine sent it (up to its
    stop string), every SSE stream is its twin's chunk for chunk, byte for byte."""
    rng = random.Random(seed)
    families = ["qwen3", "deepseek_r1", "glm47", "minimax_m2", "kimi_k3"]
    families += rng.choice([[], [], ["minimax_m3"], ["openai_gptoss"]])
    runtime = ReasoningRuntime(reasoning_content_alias=rng.random() < 0.3)
    # key -> (pair or chunk-only stream, output, position, parser, chunks read so far)
    live: dict[str, tuple[Pair | RequestStream, list[int], int, Any, list[Any]]] = {}
    excluded: set[str] = set()  # requests added with include_reasoning=False
    stopped: set[str] = set()  # requests added with a stop string
    tooled: set[str] = set()  # requests that offer tools (TOOLS)
    n = done = 0
    target = rng.choice([10, 40, 100])
    share = rng.choice([0.1, 0.5, 0.9])  # of SSE requests
    # SSE requests admitted first, in the low slots: the chunk-only ones after them sit
    # in slots past the path's arrays.
    sse_first = rng.random() < 0.5
    while done < 60:
        while len(live) < target and n < 200:
            key = f"r{n}"
            tools = TOOLS if rng.random() < 0.25 else None
            if tools is None:
                parser = parser_for(rng.choice(families), {})
                mock = parser.tokenizer.encode(
                    '<think>\nFirst: "a"\t\\ é 日本語 😀\n\nThen b.\n</think>\n\nAnswer:\n\n42 ✓.'
                )
                ids = mock[: rng.randint(1, len(mock))]
            else:  # markers, calls and reasoning in any order (tool_pieces)
                family, kwargs = rng.choice(TOOL_CASES)
                parser = parser_for(family, kwargs)
                kinds = [kind for kind in tool_pieces(parser) if kind]
                text = "".join(rng.choice(rng.choice(kinds)) for _ in range(rng.randint(1, 16)))
                ids = parser.tokenizer.encode(text)
                tooled.add(key)
            include = rng.random() < 0.8
            unit: Pair | RequestStream
            if (n < share * target) if sse_first else (rng.random() < share):
                stop = ["42"] if rng.random() < 0.15 and tools is None else None
                unit = Pair(runtime, key, parser, tools, include_reasoning=include, stop=stop)
                if stop:
                    stopped.add(key)
            else:
                unit = runtime.add(
                    key, parser, None, completion_id="c", tools=tools, include_reasoning=include
                )
            live[key] = (unit, ids, 0, parser, [])
            if not include:
                excluded.add(key)
            n += 1
        size = rng.choice([1, 1, 2, 5, len(live)])
        chosen = rng.sample(sorted(live), min(size, len(live)))
        rows: list[tuple[RequestStream, list[int]]] = []
        for key in chosen:
            unit, ids, at, parser, got = live[key]
            k = rng.choice([1, 1, 2, 4, 0]) if size > 1 else rng.choice([1, 1, 1, 3])
            delta = ids[at : at + k]
            rows += (
                [(unit.obj, delta), (unit.sse, delta)]
                if isinstance(unit, Pair)
                else [(unit, delta)]
            )
            live[key] = (unit, ids, at + len(delta), parser, got)
        if len(rows) == 2 and rng.random() < 0.5:  # a pair stepped apart: two lone steps
            step_rows(runtime, rows[:1])
            step_rows(runtime, rows[1:])
        else:
            rng.shuffle(rows)
            step_rows(runtime, rows)
        for key, (unit, ids, at, parser, got) in list(live.items()):
            if isinstance(unit, Pair):
                unit.drain()
            else:
                got += unit.ready()
            if at < len(ids):
                continue
            expected = parser.parse(ids, tools=TOOLS if key in tooled else None)
            reasoning = "" if key in excluded else expected.reasoning or ""
            want = (reasoning, expected.content or "")
            want_calls = [(c.name, c.arguments) for c in expected.tool_calls]
            if isinstance(unit, Pair):
                if f"{key}-obj" in runtime:  # (a stop string ends both twins)
                    runtime.finish(f"{key}-obj", "length")
                    runtime.finish(f"{key}-sse", "length")
                unit.drain()
                chunks = unit.check()
                got_r, got_c = texts(chunks)
                if key not in stopped:
                    assert calls_of(chunks) == want_calls
                if key in stopped:  # the answer up to its first "42"
                    cut = want[1].find("42")
                    assert got_r == want[0] and "42" not in got_c
                    assert want[1].startswith(got_c) and (cut < 0 or len(got_c) <= cut)
                else:
                    assert (got_r, got_c) == want
            else:
                runtime.finish(key, "length")
                got += unit.ready()
                assert texts(got) == want
                assert calls_of(got) == want_calls
            del live[key]
            done += 1


def test_a_full_queue_coalesces_after_written_bytes() -> None:
    """A consumer that does not read: the queue stays bounded (the buffer, one coalesced
    chunk after the written bytes, the final chunk) and nothing is lost."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    ids = tok.encode("<think>\n" + "word " * 200 + "\n</think>\n\n" + "answer " * 200)
    runtime = ReasoningRuntime(buffer_size=4)
    stream = runtime.add("r", parser, None, sse=True)
    for t in ids:
        step_rows(runtime, [(stream, [t])])
        assert len(stream._rec.queue) <= 4 + 1
    runtime.finish("r")
    assert len(stream._rec.queue) <= 4 + 2
    chunks = [chunk_of_event(e) for blob in stream.ready_events() for e in events_of(blob)]
    expected = parser.parse(ids)
    assert texts(chunks) == (expected.reasoning or "", expected.content or "")


@pytest.mark.parametrize("name", sorted(set(FAMILY_TOKENIZERS.values())))
@settings(max_examples=examples(10), deadline=None)
@given(data=st.data())
def test_escaped_pieces_concatenate_to_the_encoded_text(name: str, data: st.DataObject) -> None:
    """The table's premise: for tokens whose bytes are whole UTF-8 text, the escaped
    pieces of any run concatenate to msgspec's encoding of the run's text (on each fixture
    tokenizer in turn; a tokenizer whose text is not its bytes has no table)."""
    tok = tokenizer(name)
    table = TokenText.of(tok)
    if table is None:
        assert not tok.byte_level
        return
    whole = np.flatnonzero(table.whole)
    run = data.draw(st.lists(st.sampled_from(whole.tolist()), min_size=1, max_size=8))
    text = b"".join(tok.token_bytes[t] for t in run).decode("utf-8")
    assert b"".join(table.escaped[t] for t in run) == msgspec.json.encode(text)[1:-1]


async def test_sse_events_end_with_done_and_report_errors() -> None:
    """The async reader: usage chunk when asked, ``[DONE]`` last; a request that fails
    (a token id outside its vocabulary) gets an error event, then ``[DONE]``."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    runtime = ReasoningRuntime()
    good = runtime.add("good", parser, None, sse=True, include_usage=True)
    bad = runtime.add("bad", parser, None, sse=True)
    ids = tok.encode("<think>\nhm\n</think>\n\nok")
    got: dict[str, list[bytes]] = {"good": [], "bad": []}

    async def read(name: str, stream: RequestStream) -> None:
        async for blob in stream.sse_events():
            got[name] += events_of(blob)

    async with anyio.create_task_group() as tg:
        tg.start_soon(read, "good", good)
        tg.start_soon(read, "bad", bad)
        await anyio.sleep(0)
        for i, t in enumerate(ids):
            rows = [(good, [t])] + ([(bad, [tok.vocab_size + 5])] if i == 2 else [])
            if i > 2:
                rows = [(good, [t])]
            step_rows(runtime, rows)
            await anyio.sleep(0)
        runtime.finish("good")
    assert got["good"][-1] == DONE
    usage = chunk_of_event(got["good"][-2])
    assert usage.choices == [] and usage.usage is not None
    assert texts([chunk_of_event(e) for e in got["good"][:-2]]) == ("hm", "ok")
    assert got["bad"][-1] == DONE
    assert b'"error"' in got["bad"][-2] and b"bad" in got["bad"][-2]


def test_whitespace_is_what_strip_strips() -> None:
    """The characters the call-gap formatter may hold (its idle trail) are exactly
    ``str.isspace``'s, which ``rstrip()`` strips."""
    assert "".join(c for c in map(chr, range(0x110000)) if c.isspace()) == WHITESPACE


# ---------------------------------------------------------------- rows decoded by the path

PARAGRAPHS_R = "First, the plan.\n\nLet me see: 3 + 4 = 7.\n\nThe sum is 7."
PARAGRAPHS_C = "The answer is 7.\n\nBecause 3 + 4 = 7.\n\nDone."


def held_state(rec: Any) -> tuple[Any, ...]:
    """What a request's decoder holds between steps: its formatters' fields (a held
    tail, a pending lead trim, ...) and whether its byte decoders hold part of a
    character. Equal for two decoders fed the same tokens, whichever path fed them. A
    decoder not built yet (built on first use) holds what a fresh one fed the rows of its
    shared state holds (``runtime/text/decoder_states.py``)."""
    decoder = rec.decoder
    if decoder is None:  # (the path holds runs for a fresh decoder too)
        decoder = rec.parser.decoder(
            skip_special_tokens=rec.skip_special_tokens, call_gaps=rec._call_gaps()
        )
        if rec.state is not None:
            rec.state.replay(decoder)

    def fields(obj: Any) -> tuple[Any, ...]:
        return tuple(
            (name, fields(v) if hasattr(v, "idle_trail") else v)
            for name in getattr(type(obj), "__slots__", ())
            for v in [getattr(obj, name, None)]
        )

    def holding(fmt: Any, run: str) -> tuple[Any, ...]:
        # A trailing run the output path holds for an idle trim (``runtime/text/trails.py``) is
        # held by the trim once handed back: compare what the trim would then hold.
        if run:
            fmt = copy.copy(fmt)
            assert fmt.text(run) == ""
        return fields(fmt)

    runs = rec.tails or ("", "")
    return (
        holding(decoder._rfmt, runs[0]),
        holding(decoder._cfmt, runs[1]),
        getattr(decoder._rdec, "_pending", None),
        getattr(decoder._cdec, "_pending", None),
    )


def _paragraph_ids(tok: LoadedTokenizer, reasoning_end: str = "\n</think>\n\n") -> list[int]:
    ids: list[int] = tok.encode(f"<think>\n{PARAGRAPHS_R}{reasoning_end}{PARAGRAPHS_C}")
    return ids


def _step_twins(runtime: ReasoningRuntime, pair: Pair, ids: list[int], k: int) -> None:
    """Step both requests ``k`` tokens at a time, reading after every step: the two
    decoders must hold the same after each (:func:`held_state`; an SSE request's decoder
    not built yet is its shared state, replayed)."""
    for at in range(0, len(ids), k):
        delta = ids[at : at + k]
        step_rows(runtime, [(pair.obj, delta), (pair.sse, delta)])
        assert held_state(pair.sse._rec) == held_state(pair.obj._rec)
        pair.drain()


def _run_in_steps(
    runtime: ReasoningRuntime, pair: Pair, ids: list[int], k: int, finish: FinishReason = "stop"
) -> list[ChatCompletionChunk]:
    """Step both requests ``k`` tokens at a time (:func:`_step_twins`), then finish and
    check them."""
    _step_twins(runtime, pair, ids, k)
    runtime.finish(pair.obj.request_id, finish)
    runtime.finish(pair.sse.request_id, finish)
    pair.drain()
    return pair.check()


@pytest.mark.parametrize("vectorized", [False, True])
@pytest.mark.parametrize("alias", [False, True])
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_paragraph_breaks_are_written_by_the_path(vectorized: bool, alias: bool, k: int) -> None:
    """Paragraph breaks in reasoning and content: the break's newlines are held by the
    reasoning formatter (they would be trimmed before an end marker) and sent in front
    of the next text. Those rows, and every other text row of a plain request, are
    written as event bytes by the path; the stream is its object twin's, chunk for
    chunk (``reasoning_content`` too with the alias), with the text known from the
    pieces: the newlines before ``</think>`` trimmed, the paragraph breaks kept."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    ids = _paragraph_ids(tok)
    assert any(tok.token_bytes[t].endswith(b".\n\n") for t in ids)  # a break in one token
    runtime = ReasoningRuntime(reasoning_content_alias=alias)
    pair = Pair(runtime, "r", parser)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sse_path, "SMALL", 0 if vectorized else sse_path.SMALL)
        chunks = _run_in_steps(runtime, pair, ids, k)
    assert texts(chunks) == (PARAGRAPHS_R, PARAGRAPHS_C)
    if alias:
        got = "".join(c.choices[0].delta.reasoning_content or "" for c in chunks if c.choices)
        assert got == PARAGRAPHS_R
    # Every text event is bytes written by the path (marker rows included), but a
    # chunk with text of both channels (a marker between them in one step), which is
    # queued as the chunk; so is the role event (made from the shared template), but
    # not the final chunk.
    both = sum(
        1
        for c in chunks
        if c.choices and c.choices[0].delta.reasoning and c.choices[0].delta.content
    )
    assert pair.written == len(chunks) - 1 - both
    # Five tokens a step put ``.\n``, ``</think>``, ``\n\n``, ``The``, `` answer`` in one.
    assert both == (1 if k == 5 else 0)


@pytest.mark.parametrize("vectorized", [False, True])
@pytest.mark.parametrize("k", [1, 2, 4])
def test_a_held_break_before_an_end_marker_is_trimmed(vectorized: bool, k: int) -> None:
    """A paragraph break right before ``</think>`` (in the token before the marker, or in
    the same step as it): the path holds it as the exact path does, and the marker trims
    it; it is never sent."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    ids = _paragraph_ids(tok, ".\n\n</think>\n\n")
    runtime = ReasoningRuntime()
    pair = Pair(runtime, "r", parser)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sse_path, "SMALL", 0 if vectorized else sse_path.SMALL)
        chunks = _run_in_steps(runtime, pair, ids, k)
    assert texts(chunks) == (PARAGRAPHS_R + ".", PARAGRAPHS_C)
    assert not any((c.choices[0].delta.reasoning or "").endswith("\n") for c in chunks if c.choices)


@pytest.mark.parametrize("vectorized", [False, True])
@pytest.mark.parametrize("cut", ["\n\n", ".\n\n", ".\n"])
def test_a_held_break_at_finish_is_sent(vectorized: bool, cut: str) -> None:
    """Reasoning cut off (``max_tokens``) right after a paragraph break: no end marker
    closes the block, so the held newlines are sent with the final text."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    ids = tok.encode(f"<think>\n{PARAGRAPHS_R}{cut}")
    runtime = ReasoningRuntime()
    pair = Pair(runtime, "r", parser)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sse_path, "SMALL", 0 if vectorized else sse_path.SMALL)
        chunks = _run_in_steps(runtime, pair, ids, 1, "length")
    assert texts(chunks) == (PARAGRAPHS_R + cut, "")
    assert chunks[-1].choices[0].finish_reason == "length"


@pytest.mark.parametrize("vectorized", [False, True])
def test_a_full_queue_coalesces_decoded_rows(vectorized: bool) -> None:
    """A consumer that reads now and then, with a buffer of two: rows the path decodes
    leave a full queue to the exact path, which coalesces; the queue stays bounded and
    the text is whole (paragraph breaks and all)."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    ids = _paragraph_ids(tok)
    runtime = ReasoningRuntime(buffer_size=2)
    stream = runtime.add("r", parser, None, sse=True)
    blobs: list[bytes] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sse_path, "SMALL", 0 if vectorized else sse_path.SMALL)
        for i, t in enumerate(ids):
            step_rows(runtime, [(stream, [t])])
            assert len(stream._rec.queue) <= 2 + 1
            if i % 7 == 6:
                blobs += stream.ready_events()
    runtime.finish("r")
    blobs += stream.ready_events()
    chunks = [chunk_of_event(e) for blob in blobs for e in events_of(blob)]
    for blob in blobs:
        for e in events_of(blob):
            assert sse_event(chunk_of_event(e)) == e
    assert stream._rec.coalesced > 0
    assert texts(chunks) == (PARAGRAPHS_R, PARAGRAPHS_C)


PROSE = [
    "Step one.",
    "\n\n",
    ".\n\n",
    "\n",
    " Let",
    "The",
    " 3 + 4",
    " = 7",
    "思考",
    " 🙂",
    "\t",
    "</think>",
    "<think>",
]


@pytest.mark.parametrize("family", ["qwen3", "glm47", "minimax_m2"])
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_decoded_rows_keep_the_exact_path_s_state(family: str, data: st.DataObject) -> None:
    """Random prose with paragraph breaks, stray newlines and markers, cut into steps of
    any size, with the alias on or off, as a batch of one or on the numpy path, and
    sometimes with a consumer that lets its queue fill: the SSE request's decoder
    (and formatters) end every step in the state its object twin's exact path leaves
    (the exact path may take the next row), and its text is parse()'s."""
    parser = parser_for(family, {})
    tok = parser.tokenizer
    pieces = data.draw(st.lists(st.sampled_from(PROSE), max_size=30), label="pieces")
    ids = tok.encode("<think>\n" + "".join(pieces)) if data.draw(st.booleans()) else []
    ids = ids or tok.encode("".join(pieces))
    deltas = data.draw(splits(ids), label="deltas")
    alias = data.draw(st.booleans(), label="alias")
    vectorized = data.draw(st.booleans(), label="vectorized")
    lagging = data.draw(st.booleans(), label="lagging")
    runtime = ReasoningRuntime(reasoning_content_alias=alias, buffer_size=2 if lagging else 32)
    pair = Pair(runtime, "r", parser)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sse_path, "SMALL", 0 if vectorized else sse_path.SMALL)
        for delta in deltas:
            step_rows(runtime, [(pair.obj, delta), (pair.sse, delta)])
            assert held_state(pair.sse._rec) == held_state(pair.obj._rec)
            if not lagging or data.draw(st.integers(0, 3), label="read") == 0:
                pair.drain()
    runtime.finish("r-obj", "length")
    runtime.finish("r-sse", "length")
    pair.drain()
    expected = parser.parse(ids)
    want = (expected.reasoning or "", expected.content or "")
    for got in (pair.chunks, [chunk_of_event(e) for e in pair.events]):
        assert texts(got) == want
        if alias:
            alias_text = "".join(
                c.choices[0].delta.reasoning_content or "" for c in got if c.choices
            )
            assert alias_text == want[0]
    if not lagging:
        pair.check()


def test_decodable_rows_before_any_token_table() -> None:
    """Rows decoded on the path before either of the request's channels was ever plain
    (granite with thinking off, markers only: no token table is made yet), in a
    numpy-path step of four tokens then one: its token ids (high special ids) must
    still index the row of tables such a slot reads (all False). Its stream is its
    object twin's, and its text parse()'s."""
    parser = parser_for("granite_thinking", {"enable_thinking": False})
    tok = parser.tokenizer
    think, call = tok.single_token_id("<think>"), tok.single_token_id("<tool_call>")
    assert think is not None and call is not None
    ids = [think, think, call, think, think]
    runtime = ReasoningRuntime()
    pair = Pair(runtime, "r", parser)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sse_path, "SMALL", 0)
        chunks = _run_in_steps(runtime, pair, ids, 4, "length")
    expected = parser.parse(ids)
    assert texts(chunks) == (expected.reasoning or "", expected.content or "")


_FIRST = ["<think>\n", "<think>\n\n", "<think>"]
_WORDS = ["Okay", " Okay", "Let", "\n\nSo", "é"]
_BODY = ["I think.\n\nYes", "Hmm \U0001f99c.", "2 + 2", "Yes.\n\n\U0001f99c"]
_ENDS = ["\n</think>\n\n", "</think>", ".\n\n</think>\n\n"]
_ANSWERS = ["The answer.", "\n\nDone.\n\n", "A parrot: \U0001f99c"]


def _shared_outputs(tok: LoadedTokenizer, count: int, shift: int) -> list[list[int]]:
    """Outputs whose first rows repeat (the same opening, first words, endings of
    reasoning), as a model's answers do; every piece is in some output once ``count``
    reaches 12."""
    return [
        tok.encode(
            _FIRST[(i + shift) % 3]
            + _WORDS[i % 5]
            + _BODY[i % 4]
            + _ENDS[(i // 4) % 3]
            + _ANSWERS[(i // 2 + shift) % 3]
        )
        for i in range(count)
    ]


def test_requests_share_decoder_states(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests whose outputs open alike (``<think>``, a newline, the same first word)
    reach the same decoder states: the rows the output path decodes are answered from
    the shared states (``runtime/text/decoder_states.py``) once a request taught them, and a
    request whose every such row is known builds no decoder at all. Every stream is its
    object twin's chunk for chunk, its decoder state the twin's after every step (a
    state replayed into a fresh decoder), and its text ``parse()``'s."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    monkeypatch.setattr(parser, "_fresh", {})  # (states of this test's requests alone)
    hits: list[bool] = []
    real = DecoderState.step

    def counting(self: DecoderState, row: Any) -> Any:
        got = real(self, row)
        hits.append(got is not None)
        return got

    monkeypatch.setattr(DecoderState, "step", counting)
    runtime = ReasoningRuntime()
    outputs = _shared_outputs(tok, 12, shift=0)
    for i, ids in enumerate(outputs):
        first = Pair(runtime, f"a{i}", parser)
        _step_twins(runtime, first, ids, 1)
        taught = first.sse._rec.state is not None  # its whole path is known now
        first.end_as_parsed(runtime, parser, ids)
        again = Pair(runtime, f"b{i}", parser)
        _step_twins(runtime, again, ids, 1)
        if taught:
            assert again.sse._rec.decoder is None, tok.decode(ids)
        again.end_as_parsed(runtime, parser, ids)
    assert any(hits) and not all(hits)
    root = parser.fresh_state()
    assert root._size > len(_FIRST)  # (each opening's first row, at least)


def test_shared_decoder_states_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past :data:`MAX_DEPTH` rows, or once a root holds :data:`MAX_STATES` states, rows
    with no known successor take the request's decoder, as before the states; streams
    stay their object twins'."""
    tok = tokenizer("qwen-3")
    parser = reasonspan.create_parser_sync("qwen3", tok)
    monkeypatch.setattr(parser, "_fresh", {})
    monkeypatch.setattr(decoder_states, "MAX_DEPTH", 2)
    monkeypatch.setattr(decoder_states, "MAX_STATES", 5)
    runtime = ReasoningRuntime()
    for i, ids in enumerate(_shared_outputs(tok, 12, shift=1)):
        pair = Pair(runtime, f"r{i}", parser)
        _step_twins(runtime, pair, ids, 1)
        pair.end_as_parsed(runtime, parser, ids)
    root = parser.fresh_state()
    assert root._size == 5
    seen = [root]
    for state in seen:
        assert len(state.path) <= 2
        seen += [nxt for nxt, _, _ in state._next.values()]
    assert len(seen) == 5
