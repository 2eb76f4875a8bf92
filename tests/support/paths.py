"""How a client reads a request's answer off the runtime, and one check of every path:
shared by the tests that compare ``parse()`` with ``TextSplitter`` and the runtime."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Sequence
from typing import Any

import anyio

from reasonspan import ParseResult, ReasoningParser, TextSplitter
from reasonspan.runtime.stream.runtime import ReasoningRuntime, RequestStream
from reasonspan.runtime.wire.openai import FinishReason
from reasonspan.serving.messages_events import MessageEvents
from reasonspan.serving.responses import ResponsesRequest
from reasonspan.serving.responses_events import ResponseEvents, ResponseShape

Answer = tuple[str, str, list[tuple[str, str]]]
"""Reasoning, content and ``(name, arguments)`` calls, as a client assembles them."""


async def read_chunks(stream: RequestStream) -> Answer:
    """A stream read as chunk objects (``delta.tool_calls`` joined by ``index``)."""
    reasoning, content = [], []
    calls: dict[int, list[str]] = {}
    async for chunk in stream:
        gather(chunk.choices[0].delta, reasoning, content, calls)
    return "".join(reasoning), "".join(content), [(n, a) for _, (n, a) in sorted(calls.items())]


async def read_sse(stream: RequestStream) -> Answer:
    """A stream read as the SSE bytes a server writes, each event decoded as JSON."""
    reasoning: list[str] = []
    content: list[str] = []
    calls: dict[int, list[str]] = {}
    blob = b"".join([e async for e in stream.sse_events()])
    for event in blob.split(b"\n\n"):
        if not event or event == b"data: [DONE]":
            continue
        assert event.startswith(b"data: "), event[:80]
        body = json.loads(event[6:])
        assert "error" not in body, body
        for choice in body["choices"]:
            gather(choice["delta"], reasoning, content, calls)
    return "".join(reasoning), "".join(content), [(n, a) for _, (n, a) in sorted(calls.items())]


def gather(
    delta: Any, reasoning: list[str], content: list[str], calls: dict[int, list[str]]
) -> None:
    get = delta.get if isinstance(delta, dict) else lambda k: getattr(delta, k)
    reasoning.append(get("reasoning") or "")
    content.append(get("content") or "")
    for tc in get("tool_calls") or []:
        tc_get = tc.get if isinstance(tc, dict) else lambda k, tc=tc: getattr(tc, k)
        slot = calls.setdefault(tc_get("index"), ["", ""])
        fn = tc_get("function")
        if fn is not None:
            fn_get = fn.get if isinstance(fn, dict) else lambda k, fn=fn: getattr(fn, k)
            slot[0] += fn_get("name") or ""
            slot[1] += fn_get("arguments") or ""


def split_at(
    parser: ReasoningParser,
    prompt_ids: Sequence[int] | None,
    ids: list[int],
    cuts: list[int],
    tools: Any,
    finish_reason: FinishReason = "length",
) -> tuple[str, str, list[Any]]:
    """``TextSplitter`` fed ``ids`` cut at ``cuts``: its reasoning, content and calls.
    (The finish reasons of these helpers default to "length", the rule ``parse()`` keeps
    without one: a call region left open is dropped.)"""
    split = TextSplitter(parser, prompt_ids, tools=tools)
    r, c, calls = [], [], []
    for a, b in itertools.pairwise([0, *sorted(set(cuts)), len(ids)]):
        x, y = split.feed(ids[a:b])
        r.append(x)
        c.append(y)
        calls += split.take_tool_calls()
    x, y = split.finish(finish_reason)
    return "".join(r) + x, "".join(c) + y, calls + split.take_tool_calls()


def read_protocol(events: bytes) -> Answer:
    """A Messages or Responses stream's events (``reasonspan/serving``), as a client of
    that protocol assembles them: thinking or reasoning-text deltas, text or output-text
    deltas, and each ``tool_use`` block or ``function_call`` item's name and argument
    deltas, in order. Checked on the way: parts come one after another (a delta belongs to
    the part open now, which stops before the next starts), and a Responses item's
    ``output_item.done`` repeats the text its deltas sent."""
    reasoning: list[str] = []
    content: list[str] = []
    calls: list[list[str]] = []
    open_part: int | None = None
    sent: list[str] = []  # the open part's deltas
    for event in events.split(b"\n\n"):
        if not event:
            continue
        kind, data = event.split(b"\n", 1)
        name = kind.removeprefix(b"event: ").decode()
        body = json.loads(data.removeprefix(b"data: "))
        assert body.get("type") != "error", body
        part = body.get("index", body.get("output_index"))
        if name in ("content_block_start", "response.output_item.added"):
            assert open_part is None, (name, part, open_part)
            open_part, sent = part, []
            block = body.get("content_block") or body.get("item")
            if block["type"] in ("tool_use", "function_call"):
                calls.append([block["name"], ""])
            continue
        if name in ("content_block_stop", "response.output_item.done"):
            assert part == open_part, (name, part, open_part)
            item = body.get("item")
            if item is not None and item["type"] == "function_call":
                assert item["arguments"] == "".join(sent), item
            elif item is not None:
                texts = [c["text"] for c in item["content"]]
                assert texts == (["".join(sent)] if sent else texts), item
            open_part = None
            continue
        if name == "content_block_delta":
            delta = body["delta"]
            got = delta.get("thinking", delta.get("text", delta.get("partial_json")))
        elif name.startswith("response.") and name.endswith(".delta"):
            got = body["delta"]
        else:
            continue
        if got is None:  # (a thinking block's signature)
            continue
        assert part == open_part, (name, part, open_part)
        sent.append(got)
        if name in ("response.reasoning_text.delta",) or "thinking" in body.get("delta", {}):
            reasoning.append(got)
        elif name == "response.output_text.delta" or (
            name == "content_block_delta" and (body["delta"]["type"] == "text_delta")
        ):
            content.append(got)
        else:
            calls[-1][1] += got
    assert open_part is None, open_part
    return "".join(reasoning), "".join(content), [(n, a) for n, a in calls]


PROTOCOLS = ("messages", "responses")
"""The protocols :func:`served` may read a request as besides Chat Completions."""


async def served(
    parser: ReasoningParser,
    prompt_ids: Sequence[int] | None,
    ids: list[int],
    k: int,
    sse: bool | str,
    tools: Any,
    finish_reason: FinishReason = "length",
    stream_arguments: bool = True,
) -> Answer:
    """One request alone in a runtime, ``k`` tokens a step, read as chunks, as SSE
    (``sse`` True), or as one of :data:`PROTOCOLS` (``sse`` its name: the protocol's
    encoder is the request's writer, as the server streams it), without the calls its
    writer reports broken (``runtime/wire/region_calls.py``: a call sent as it was written
    that its region then did not read as; the whole read has none)."""
    rt = ReasoningRuntime(argument_step=1)  # (streamed: the open region read every token)
    writer = None if isinstance(sse, bool) else _writer(sse)
    stream = rt.add(
        "r",
        parser,
        prompt_ids,
        tools=tools,
        sse=bool(sse),
        stream_arguments=stream_arguments,
        writer=writer,
    )
    for i in range(0, len(ids), k):
        delta = ids[i : i + k]
        rt.step([stream.engine_id], delta, [0, len(delta)])
    rt.finish("r", finish_reason)
    if writer is not None:
        events = writer.start() + b"".join([e async for e in stream.written()])
        if isinstance(writer, MessageEvents):
            events += writer.end(finish_reason, None, 0)
        else:
            events += writer.end(finish_reason, None)
        got = read_protocol(events)
    else:
        got = await (read_sse(stream) if sse else read_chunks(stream))
    return without_broken(stream, got)


def _writer(protocol: str) -> MessageEvents | ResponseEvents:
    if protocol == "messages":
        return MessageEvents("msg_r", "m", 1)
    return ResponseEvents(ResponseShape("resp_r", ResponsesRequest(model="m", input="hi"), 0))


def without_broken(stream: RequestStream, answer: Answer) -> Answer:
    """``answer`` less the calls the request's writer reports broken (sent as written, then
    not read as a call: the whole read has none; ``runtime/wire/region_calls.py``)."""
    rec = stream._rec
    broken = set(rec.call_writer.broken if rec.call_writer is not None else ())
    broken |= set(rec.tools.broken if rec.tools is not None else ())
    if not broken:
        return answer
    reasoning, content, calls = answer
    return reasoning, content, [c for i, c in enumerate(calls) if i not in broken]


def every_path(
    make: Callable[[], ReasoningParser],
    prompt_ids: Sequence[int] | None,
    ids: list[int],
    tools: Any,
    finish_reason: FinishReason = "length",
) -> ParseResult:
    """``parse()`` of ``ids``, after checking that ``TextSplitter`` split at every offset
    and at random sets of offsets, and the runtime read as chunks and as SSE (1 and 3
    tokens a step), give its reasoning, content and calls (a fresh parser from ``make``
    for each), every path told the same ``finish_reason``."""
    whole = make().parse(ids, prompt_ids, tools=tools, finish_reason=finish_reason)
    want = (whole.reasoning or "", whole.content or "", whole.tool_calls)
    rng = random.Random(len(ids))
    splits = [[at] for at in range(len(ids) + 1)]
    splits += [rng.sample(range(len(ids) + 1), min(4, len(ids))) for _ in range(20)]
    for cuts in splits:
        assert split_at(make(), prompt_ids, ids, cuts, tools, finish_reason) == want, cuts
    sent = [(c.name, c.arguments) for c in whole.tool_calls]
    # Arguments as written one token a step, whole calls three; Messages one token a step,
    # Responses three.
    ways: list[tuple[int, bool | str]] = [(1, False), (1, True), (3, False), (3, True)]
    for k, sse in [*ways, (1, "messages"), (3, "responses")]:
        got = anyio.run(served, make(), prompt_ids, ids, k, sse, tools, finish_reason, k == 1)
        assert got == (want[0], want[1], sent), (k, sse)
    return whole
