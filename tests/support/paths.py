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


async def served(
    parser: ReasoningParser,
    prompt_ids: Sequence[int] | None,
    ids: list[int],
    k: int,
    sse: bool,
    tools: Any,
    finish_reason: FinishReason = "length",
    stream_arguments: bool = True,
) -> Answer:
    """One request alone in a runtime, ``k`` tokens a step, read as chunks or as SSE,
    without the calls its writer reports broken (``runtime/wire/region_calls.py``: a call
    sent as it was written that its region then did not read as; the whole read has none)."""
    rt = ReasoningRuntime(argument_step=1)  # (streamed: the open region read every token)
    stream = rt.add(
        "r", parser, prompt_ids, tools=tools, sse=sse, stream_arguments=stream_arguments
    )
    for i in range(0, len(ids), k):
        delta = ids[i : i + k]
        rt.step([stream.engine_id], delta, [0, len(delta)])
    rt.finish("r", finish_reason)
    got = await (read_sse(stream) if sse else read_chunks(stream))
    return without_broken(stream, got)


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
    for k in (1, 3):
        for sse in (False, True):
            # Arguments as written one token a step, whole calls three.
            got = anyio.run(served, make(), prompt_ids, ids, k, sse, tools, finish_reason, k == 1)
            assert got == (want[0], want[1], sent), (k, sse)
    return whole
