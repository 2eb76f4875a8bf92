"""Whatever a model writes in a tool call is that request's problem alone.

Arguments nested far past the recursion limit, integers past Python's int-to-string limit
and values JSON cannot hold made body kinds raise (RecursionError, ValueError) out of
``parse()``, ``TextSplitter.feed()`` and ``ReasoningRuntime.step()``: in the server the
engine loop failed every request. Now one guard, where the extractor calls a kind
(``ToolFormat.parse``), makes such a call invalid (its region goes back to the content),
and any exception on one request's exact path in the runtime fails that request alone.
"""

from __future__ import annotations

import json
import random
from typing import Any

import anyio
import openai
import pytest

from reasonspan import ReasoningParser, TextSplitter
from reasonspan.runtime.batch.errors import RequestFailedError
from reasonspan.runtime.core.nesting import MAX_NESTING
from reasonspan.runtime.stream.request import StreamRecord
from reasonspan.runtime.stream.runtime import ReasoningRuntime, RequestStream
from reasonspan.serving.app import Server
from reasonspan.serving.engine import SimulatedServingEngine
from tests.runtime.test_fuzz_paths import _kwargs, _parser, parsed, split
from tests.serving.test_server import HISTORY, Running, served_models
from tests.support.hostile import CALLS, TOOLS
from tests.support.paths import Answer, read_chunks, read_sse


def _prefix(parser: ReasoningParser) -> str:
    """Text that ends the reasoning, for a family whose output starts in it."""
    if not parser.spec.end or not parser.parse(parser.tokenizer.encode("x")).reasoning:
        return ""
    return "Hmm." + parser.tokenizer.decode(parser.end_marker_token_ids())


def _nested(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "1" + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


HOSTILE = {
    "list 1,200 deep": _nested(1200, "list"),
    "object 1,200 deep": _nested(1200, "object"),
    f"list {MAX_NESTING + 1} deep": _nested(MAX_NESTING + 1, "list"),
    "decimal of 5,000 digits": "[" + "9" * 5000 + "]",
    "hex of 5,000 digits": "[0x" + "f" * 5000 + "]",
    "1e999": "[1e999]",
    "-1e999": "[-1e999]",
}


@pytest.mark.sampled(every=4, by="value")
@pytest.mark.parametrize("value", list(HOSTILE), ids=list(HOSTILE))
@pytest.mark.parametrize("family", sorted(CALLS))
def test_a_hostile_value_is_never_an_exception_nor_a_sent_value(family: str, value: str) -> None:
    """Every format, every hostile value: parse() and the splitter (1 to 4 tokens a feed)
    agree, raise nothing, and a call they send holds strict JSON within the bound
    (``parsed`` checks it): a kind that types the value as text may still send the call
    with the value as a string, which is what the model wrote."""
    parser = _parser(family, _kwargs(family)[-1])
    for template in CALLS[family]:
        text = _prefix(parser) + template.replace("V", HOSTILE[value])
        ids = parser.tokenizer.encode(text)
        want = parsed(parser, ids)
        for name, args in want[2]:
            assert name == "f"
            if parser.spec.tool_calls is not None:  # (harmony sends the model's text)
                assert isinstance(json.loads(args)["a"], list | str)
        assert split(parser, ids, random.Random(len(ids))) == want


def test_a_call_nested_past_the_bound_goes_back_to_the_content() -> None:
    """The documented bound: MAX_NESTING containers read as a call, one more is refused
    and the region is content, verbatim."""
    parser = _parser("qwen3", json.dumps({"enable_thinking": False}))
    call = CALLS["qwen3"][0]
    # the arguments object holds the value: one container more than the value's own
    inside = call.replace("V", _nested(MAX_NESTING - 1, "list"))
    past = call.replace("V", _nested(MAX_NESTING, "list"))
    _, content, calls = parsed(parser, parser.tokenizer.encode(inside))
    assert len(calls) == 1 and content == ""
    _, content, calls = parsed(parser, parser.tokenizer.encode(past))
    assert calls == [] and content == past


def test_a_non_finite_number_makes_the_call_invalid() -> None:
    """``1e999`` reads as infinity, which JSON cannot hold: the call is not sent with
    ``null`` in its place, it stays content."""
    parser = _parser("qwen3", json.dumps({"enable_thinking": False}))
    text = CALLS["qwen3"][0].replace("V", "[1e999]")
    _, content, calls = parsed(parser, parser.tokenizer.encode(text))
    assert calls == [] and content == text


DEEP = 100_000


async def _beside(parser: ReasoningParser, hostile: list[int], normal: list[int], sse: bool) -> Any:
    rt = ReasoningRuntime()
    a = rt.add("hostile", parser, None, tools=TOOLS, sse=sse)
    b = rt.add("normal", parser, None, tools=TOOLS, sse=sse)
    at = [0, 0]
    rng = random.Random(7)
    while at[0] < len(hostile) or at[1] < len(normal):
        eids, toks, offs = [], [], [0]
        for i, (s, ids) in enumerate(((a, hostile), (b, normal))):
            k = rng.randint(1, 64) if i == 0 else rng.randint(0, 2)
            piece = ids[at[i] : at[i] + k]
            if piece:
                at[i] += len(piece)
                eids.append(s.engine_id)
                toks += piece
                offs.append(len(toks))
        if eids:
            rt.step(eids, toks, offs)
    rt.finish(a.engine_id, "stop")
    rt.finish(b.engine_id, "stop")
    read = read_sse if sse else read_chunks
    return await read(a), await read(b)


@pytest.mark.parametrize("sse", [False, True], ids=["chunks", "sse"])
@pytest.mark.parametrize("family", ["qwen3", "kimi_k3", "deepseek_v3", "llama4_pythonic"])
def test_a_call_nested_100000_deep_beside_a_normal_request(family: str, sse: bool) -> None:
    """The runtime, one step after another: the hostile request finishes normally with its
    call refused (the same answer as parse()), its neighbour is untouched."""
    parser = _parser(family, _kwargs(family)[-1])
    prefix = _prefix(parser)
    kind = "list"
    hostile = parser.tokenizer.encode(prefix + CALLS[family][0].replace("V", _nested(DEEP, kind)))
    normal = parser.tokenizer.encode(prefix + CALLS[family][0].replace("V", "[1, 2]"))
    want_hostile = parsed(parser, hostile)
    want_normal = parsed(parser, normal)
    assert want_hostile[2] == [] and len(want_normal[2]) >= 1
    got = anyio.run(_beside, parser, hostile, normal, sse)
    assert got == (want_hostile, want_normal)


async def _failed_and_good(
    bad: RequestStream, good: RequestStream
) -> tuple[BaseException | None, Answer]:
    """The error ``bad`` ended with (None if it ended well), and ``good`` as read."""
    err: BaseException | None = None
    try:
        await read_chunks(bad)
    except RequestFailedError as exc:
        err = exc
    return err, await read_chunks(good)


def test_an_exception_on_one_request_s_path_fails_it_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Any exception on a request's exact path (here its decoder, made to raise) fails that
    request with RequestFailedError naming it; the step returns and the other request of
    the same step goes on to its normal end."""
    parser = _parser("qwen3", "{}")
    ids = parser.tokenizer.encode("Let me think.</think>\n\nThe answer is 4.")
    real = StreamRecord.text_decoder

    class Broken:
        def feed(self, *args: object) -> Any:
            raise RuntimeError("a decoder bug")

    def text_decoder(rec: StreamRecord) -> Any:
        return Broken() if rec.key == "bad" else real(rec)

    monkeypatch.setattr(StreamRecord, "text_decoder", text_decoder)

    async def run() -> tuple[BaseException | None, tuple[str, str, Any]]:
        rt = ReasoningRuntime()
        bad = rt.add("bad", parser, None, tools=TOOLS)
        good = rt.add("good", parser, None, tools=TOOLS)
        for i in range(0, len(ids), 3):
            piece = ids[i : i + 3]
            rt.step([bad.engine_id, good.engine_id], piece * 2, [0, len(piece), 2 * len(piece)])
        rt.finish(bad.engine_id, "stop")  # the runtime ended it: ignored
        rt.finish(good.engine_id, "stop")
        return await _failed_and_good(bad, good)

    err, good = anyio.run(run)
    assert isinstance(err, RequestFailedError)
    assert "a decoder bug" in str(err) and "qwen3" in str(err)
    assert good == parsed(parser, ids)


def test_an_exception_at_finish_fails_that_request_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    parser = _parser("qwen3", "{}")
    ids = parser.tokenizer.encode("Let me think.</think>\n\nThe answer is 4.")
    real = StreamRecord.finish_text

    def finish_text(rec: StreamRecord, *args: Any) -> Any:
        if rec.key == "bad":
            raise ValueError("a finish bug")
        return real(rec, *args)

    monkeypatch.setattr(StreamRecord, "finish_text", finish_text)

    async def run() -> tuple[BaseException | None, tuple[str, str, Any]]:
        rt = ReasoningRuntime()
        bad = rt.add("bad", parser, None)
        good = rt.add("good", parser, None)
        rt.step([bad.engine_id, good.engine_id], ids * 2, [0, len(ids), 2 * len(ids)])
        rt.finish(bad.engine_id, "stop")
        rt.finish(good.engine_id, "stop")
        return await _failed_and_good(bad, good)

    err, good = anyio.run(run)
    assert isinstance(err, RequestFailedError) and "a finish bug" in str(err)
    assert good == parsed(parser, ids)


async def test_a_server_serves_on_after_an_output_nested_100000_deep() -> None:
    """Over real HTTP (uvicorn on loopback, the official openai client): one request whose
    model output is a call nested 100,000 deep gets a normal response (its call refused,
    the markup in the content, finish_reason "stop"), then 100 normal requests all succeed
    with their calls. (Before: RecursionError in the engine loop, the runtime failed, an
    error for every stream in flight and a 503 for every later request.)"""
    engine = SimulatedServingEngine(max_batch=128, tokens_per_step=32)
    served = [m for m in served_models() if m.name == "qwen3"]
    call = CALLS["qwen3"][0]
    deep = "</think>\n\n" + call.replace("V", _nested(DEEP, "list"))
    normal = "</think>\n\n" + call.replace("V", "[1, 2]")
    tools: Any = TOOLS
    with Running(Server(served, engine)) as running:
        client = openai.AsyncOpenAI(
            base_url=running.base_url, api_key="unused", max_retries=0, timeout=120
        )
        first = await client.chat.completions.create(
            model="qwen3",
            messages=HISTORY,
            tools=tools,
            extra_body={"simulated_output": deep},
        )
        msg = first.choices[0].message
        assert first.choices[0].finish_reason == "stop"
        assert not msg.tool_calls
        assert msg.content is not None and msg.content.startswith("<tool_call>")
        answers: dict[int, Any] = {}

        async def one(i: int) -> None:
            resp = await client.chat.completions.create(
                model="qwen3",
                messages=HISTORY,
                tools=tools,
                extra_body={"simulated_output": normal},
            )
            answers[i] = resp.choices[0]

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for i in range(100):
                    tg.start_soon(one, i)
        await client.close()
        assert len(answers) == 100
        for choice in answers.values():
            assert choice.finish_reason == "tool_calls"
            assert [
                (c.function.name, json.loads(c.function.arguments))
                for c in choice.message.tool_calls
            ] == [("f", {"a": [1, 2]})]
        await anyio.to_thread.run_sync(running.wait_idle)


def test_the_splitter_reads_a_call_nested_100000_deep() -> None:
    """TextSplitter, one token at a time through a 100,000-deep call: no exception, the
    answer parse() gives (and each token costs a bounded amount: the extractor no longer
    joins and searches the whole region again per token)."""
    parser = _parser("kimi_k3", "{}")
    text = _prefix(parser) + CALLS["kimi_k3"][0].replace("V", _nested(DEEP, "list"))
    ids = parser.tokenizer.encode(text)
    want = parsed(parser, ids)
    sp = TextSplitter(parser, tools=TOOLS)
    r = c = ""
    for t in ids:
        a, b = sp.feed([t])
        r, c = r + a, c + b
    a, b = sp.finish()
    assert (r + a, c + b, [(x.name, x.arguments) for x in sp.take_tool_calls()]) == want
    assert want[2] == []
