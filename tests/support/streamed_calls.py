"""What the streamed-argument tests share (``tests/toolcalls/test_streamed_*.py``): the
test tools and a long file to write, the runtime driven at a given split with its
``tool_calls`` entries joined as a client joins them (:func:`run`, :func:`joined`,
:func:`streams_as_whole`), the calls a property writes, the ``(name, arguments)`` pairs
expected of them, and a partial reader fed a few characters at a time (a tokenizer may cut
any marker or escape anywhere).

No tokenizer is loaded here: each test module loads its family's own and passes its
prompt and parser maker, so importing these helpers costs nothing.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import anyio
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.stream.runtime import ReasoningRuntime
from reasonspan.runtime.toolcalls.partial import PartialReader
from reasonspan.runtime.wire.call_messages import ToolCallStream
from reasonspan.runtime.wire.openai import ChoiceDeltaToolCall
from reasonspan.runtime.wire.region_calls import READ_EVERY, RegionCalls

Writer = RegionCalls | ToolCallStream
"""A request's writer of its ``tool_calls`` entries (the extractor's, or harmony's)."""
Entries = list[list[ChoiceDeltaToolCall]]
"""Every chunk's ``tool_calls`` entries, in order."""
Maker = Callable[[], reasonspan.ReasoningParser]
"""A fresh parser of the family under test."""
STRING = {"type": "string"}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "parameters": {
                "type": "object",
                "properties": {"path": STRING, "content": STRING, "mode": {"type": "integer"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": STRING, "days": {}}},
        },
    },
]

CODE = "".join(
    f'def step_{i}(x):\n    """Step {i}: "quoted" \\ path."""\n    return x + {i}  # 東京\n\n'
    for i in range(150)
)
"""A file a coding agent writes: quotes, backslashes, non-ASCII, newlines (about 5,000
tokens)."""


def run(
    ids: list[int],
    cuts: list[int],
    finish: str = "stop",
    *,
    prompt: list[int],
    make: Maker,
    step: int = READ_EVERY,
) -> tuple[str, Entries, Writer, str | None]:
    """The runtime, streamed arguments (the open region read every ``step`` tokens),
    stepped at ``cuts``: content, every chunk's ``tool_calls`` entries, the request's writer
    and its finish reason."""

    async def go() -> tuple[str, Entries, Writer, str | None]:
        rt = ReasoningRuntime(argument_step=step)
        stream = rt.add("r", make(), prompt, tools=TOOLS, stream_arguments=True)
        bounds = [0, *sorted({c for c in cuts if 0 < c < len(ids)}), len(ids)]
        for a, b in itertools.pairwise(bounds):
            rt.step([stream.engine_id], ids[a:b], [0, b - a])
        rt.finish("r", finish)  # type: ignore[arg-type]
        content: list[str] = []
        entries: Entries = []
        reason = None
        async for chunk in stream:
            choice = chunk.choices[0]
            content.append(choice.delta.content or "")
            reason = choice.finish_reason or reason
            if choice.delta.tool_calls:
                entries.append(list(choice.delta.tool_calls))
        rec = stream._rec
        writer = rec.call_writer if rec.call_writer is not None else rec.tools
        assert writer is not None
        return "".join(content), entries, writer, reason

    return anyio.run(go)


def joined(entries: Entries) -> list[tuple[str, str]]:
    """The calls a client assembles, checking OpenAI's shape on the way: a call's first
    entry has its id, type and name; later ones only its index and argument text."""
    calls: dict[int, list[str]] = {}
    for chunk in entries:
        for e in chunk:
            assert e.function is not None
            if e.index not in calls:
                assert e.id and e.id.startswith("call_") and e.type == "function"
                assert e.function.name
                calls[e.index] = [e.function.name, ""]
            else:
                assert e.id is None and e.type is None and e.function.name is None
            calls[e.index][1] += e.function.arguments or ""
    assert sorted(calls) == list(range(len(calls)))
    return [(n, a) for _, (n, a) in sorted(calls.items())]


def pieces(entries: Entries, index: int) -> int:
    """How many entries call ``index`` was sent in."""
    return sum(1 for chunk in entries for e in chunk if e.index == index)


def streams_as_whole(
    ids: list[int],
    prompt: list[int],
    make: Maker,
    want: list[tuple[str, str]] | None,
    cuts: list[int],
    step: int = READ_EVERY,
) -> Entries:
    """``parse()`` reads ``want`` (None: whatever it reads, one call at least), and the
    runtime streaming the output at ``cuts`` sends entries that join to exactly that, none
    broken, with the same content and finish reason "tool_calls"; returns the entries."""
    whole = make().parse(ids, prompt, tools=TOOLS, finish_reason="stop")
    got = [(c.name, c.arguments) for c in whole.tool_calls]
    assert got == want if want is not None else len(got) >= 1
    content, entries, writer, reason = run(ids, cuts, prompt=prompt, make=make, step=step)
    assert joined(entries) == got and writer.broken == [] and reason == "tool_calls"
    assert content == (whole.content or "")
    return entries


Call = tuple[str, dict[str, Any]]


def calls_strategy(alphabet: str) -> st.SearchStrategy[list[Call]]:
    """One to three calls of the test tools (``write_file`` / ``get_weather``): a string
    ``path`` first, then up to two of ``content`` / ``mode`` / ``days`` holding strings of
    ``alphabet``, numbers, booleans, None, and lists and objects of them."""
    text = st.text(alphabet, max_size=12)
    value = st.recursive(
        st.one_of(text, st.integers(-99, 99), st.booleans(), st.none()),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.text("ab", max_size=2), inner, max_size=2),
        ),
        max_leaves=5,
    )
    more = st.dictionaries(st.sampled_from(["content", "mode", "days"]), value, max_size=2)
    args = st.fixed_dictionaries({"path": text}).flatmap(
        lambda first: more.map(lambda rest: {**first, **rest})
    )
    name = st.sampled_from(["write_file", "get_weather"])
    return st.lists(st.tuples(name, args), min_size=1, max_size=3)


def compact(args: dict[str, Any]) -> str:
    """Arguments as the compact JSON ``dump_arguments`` writes (for the values the tests
    write: strings, integers, booleans, None, lists and objects)."""
    return json.dumps(args, ensure_ascii=False, separators=(",", ":"))


def want(calls: list[Call]) -> list[tuple[str, str]]:
    """The calls as a client joins them."""
    return [(name, compact(args)) for name, args in calls]


def fed_in_pieces(reader: PartialReader, text: str, data: st.DataObject) -> list[tuple[str, str]]:
    """``reader`` fed ``text`` 1-5 characters at a time: the calls it reports, each checked
    whole and not broken."""
    i = 0
    while i < len(text):
        k = data.draw(st.integers(1, 5))
        reader.feed(text[i : i + k])
        i += k
    assert all(c.complete and not c.broken for c in reader.calls)
    return [(c.name, "".join(c.arguments)) for c in reader.calls]


def broken_first(
    ids: list[int], prompt: list[int], make: Maker, sibling: Call, prefix: str = ""
) -> str:
    """The runtime streams ``ids`` (a ``write_file`` call whose long ``content`` breaks after
    it was sent, then ``sibling``; 3 tokens a step, read every 4): the first call is listed
    broken, sent in at least 10 pieces and never closed (its arguments start with
    ``prefix``), the sibling follows whole, and the turn finishes "tool_calls". Returns the
    content, for a kind's own checks."""
    content, entries, writer, reason = run(
        ids, list(range(0, len(ids), 3)), prompt=prompt, make=make, step=4
    )
    calls = joined(entries)
    assert writer.broken == [0] and reason == "tool_calls"
    assert calls[0][0] == "write_file" and not calls[0][1].endswith("}")
    assert calls[0][1].startswith(prefix)
    assert pieces(entries, 0) >= 10 and calls[1:] == want([sibling])
    return content
