"""Streamed arguments of Kimi K3's XTML tools channel (kind ``kimi_k3``;
``runtime/toolcalls/partial_kimi_k3.py``).

On the family's fixture tokenizer (Qwen3's with K3's ``<|open|>`` / ``<|close|>`` /
``<|sep|>`` added), the calls written as K3's encoder writes them (:func:`render`: strings
raw with ``type="string"``, other values JSON with their type): for every split of the
output into engine steps, the entries a client joins by index are exactly ``parse()``'s
calls, which are the calls the test wrote (built from the values, never read back from an
output).
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.tool_types import as_tools
from reasonspan.runtime.toolcalls.partial_kimi_k3 import KimiK3CallsReader
from reasonspan.runtime.toolcalls.xtml_calls import parse_kimi_k3
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.section_calls import K3_PROMPT
from tests.support.streamed_calls import (
    CODE,
    TOOLS,
    Call,
    calls_strategy,
    compact,
    fed_in_pieces,
    joined,
    pieces,
    run,
    want,
)
from tests.support.streamed_calls import streams_as_whole as joins_whole

CALLS = calls_strategy('ab "\\\n東🙂{}[]:,<|>&')
TOK = tokenizer(FAMILY_TOKENIZERS["kimi_k3"])
PROMPT = TOK.encode(K3_PROMPT)
BEFORE = "Plan.<|close|>think<|sep|>"
_TYPES = {bool: "boolean", int: "number", float: "number", list: "array", dict: "object"}


def argument(key: str, kind: str, text: str) -> str:
    return f'<|open|>argument key="{key}" type="{kind}"<|sep|>{text}<|close|>argument<|sep|>'


def body(calls: list[Call]) -> str:
    """The channel's calls as K3's encoder writes them: a string raw, another value as JSON
    with its type (``null`` for None)."""
    out = []
    for i, (name, args) in enumerate(calls):
        out.append(f'<|open|>call tool="{name}" index="{i + 1}"<|sep|>')
        for k, v in args.items():
            if isinstance(v, str):
                out.append(argument(k, "string", v))
            else:
                kind = "null" if v is None else _TYPES[type(v)]
                out.append(argument(k, kind, json.dumps(v, ensure_ascii=False)))
        out.append("<|close|>call<|sep|>")
    return "".join(out)


def render(calls: list[Call]) -> str:
    return f"<|open|>tools<|sep|>{body(calls)}<|close|>tools<|sep|>"


def make() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("kimi_k3", TOK)


def ids_of(text: str) -> list[int]:
    return TOK.encode(BEFORE + text)


def test_a_long_argument_streams_in_many_pieces() -> None:
    """A 5,000-token file after the first argument (holding a closer not followed by an
    element, which is text): many pieces, long before the call closes, joined to the whole
    read; a call with no argument after it is sent too."""
    content = CODE + "<|close|>argument<|sep|>x <|open|>argumen <|close|>argument"
    calls: list[Call] = [
        ("write_file", {"path": "steps.py", "content": content}),
        ("get_weather", {"city": "Bern", "days": [1, 2]}),
        ("get_weather", {}),
    ]
    ids = ids_of(render(calls))
    entries = joins_whole(ids, PROMPT, make, want(calls), list(range(0, len(ids), 3)))
    assert pieces(entries, 0) >= 10
    assert len(entries[0][0].function.arguments or "") < 200  # sent as it came


def test_a_bad_first_value_is_never_sent() -> None:
    """``1e999`` as the first value (JSON cannot hold it): the stream never starts its
    call, its long second value included, and sends what the whole read sends."""
    bad = (
        '<|open|>call tool="write_file" index="1"<|sep|>'
        + argument("mode", "number", "1e999")
        + argument("content", "string", "x = 1\n" * 600)
        + "<|close|>call<|sep|>"
    )
    ids = ids_of(f"<|open|>tools<|sep|>{bad}<|close|>tools<|sep|>")
    whole = make().parse(ids, PROMPT, tools=TOOLS, finish_reason="stop")
    assert whole.tool_calls == []
    content, entries, writer, _ = run(ids, list(range(len(ids))), prompt=PROMPT, make=make,
                                      step=1)  # fmt: skip
    assert entries == [] and writer.broken == [] and content == (whole.content or "")


def test_a_call_broken_after_it_was_sent_is_listed_broken() -> None:
    """An argument repeated after a streamed one: the whole read refuses the channel (it
    is the content); the stream reports the call broken and never closes its arguments."""
    block = (
        '<|open|>call tool="write_file" index="1"<|sep|>'
        + argument("path", "string", "a.py")
        + argument("content", "string", "x = 1\n" * 600)
        + argument("path", "string", "b.py")
        + "<|close|>call<|sep|>"
    )
    ids = ids_of(f"<|open|>tools<|sep|>{block}<|close|>tools<|sep|>")
    whole = make().parse(ids, PROMPT, tools=TOOLS, finish_reason="stop")
    assert whole.tool_calls == []
    content, entries, writer, _ = run(ids, list(range(0, len(ids), 3)), prompt=PROMPT,
                                      make=make, step=4)  # fmt: skip
    [(name, arguments)] = joined(entries)
    assert writer.broken == [0] and name == "write_file"
    assert arguments.startswith('{"path":"a.py","content":"x = 1\\n')
    assert not arguments.endswith("}")
    assert pieces(entries, 0) >= 10 and content == (whole.content or "")


def test_an_untyped_value_is_typed_from_the_schema() -> None:
    """A value with no ``type`` (``mode``: an integer in the schema) is sent as the whole
    read types it."""
    block = (
        '<|open|>call tool="write_file" index="1"<|sep|>'
        + argument("path", "string", "a.py")
        + '<|open|>argument key="mode"<|sep|>7<|close|>argument<|sep|>'
        + argument("content", "string", "x = 1\n" * 100)
        + "<|close|>call<|sep|>"
    )
    ids = ids_of(f"<|open|>tools<|sep|>{block}<|close|>tools<|sep|>")
    expected = [("write_file", compact({"path": "a.py", "mode": 7, "content": "x = 1\n" * 100}))]
    joins_whole(ids, PROMPT, make, expected, list(range(0, len(ids), 2)), 1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, data=st.data())
def test_entries_join_to_the_whole_read_at_any_split(
    calls: list[Call], data: st.DataObject
) -> None:
    """One to three calls (strings raw, other values JSON): at any split and read step the
    entries join to ``parse()``'s calls, which are the calls written."""
    ids = ids_of(render(calls))
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    step = data.draw(st.sampled_from([1, 3, 16]))
    joins_whole(ids, PROMPT, make, want(calls), cuts, step)


@settings(max_examples=100, deadline=None)
@given(calls=CALLS, data=st.data())
def test_reader_at_any_character_split(calls: list[Call], data: st.DataObject) -> None:
    """The reader fed 1-5 characters at a time (a tokenizer may cut a closer anywhere):
    each call it reports is whole, not broken, and is the whole read's call."""
    text = body(calls)
    tools = as_tools(TOOLS)
    expected = parse_kimi_k3(text, tools) or []
    assert [(c.name, c.arguments) for c in expected] == want(calls)
    assert fed_in_pieces(KimiK3CallsReader(tools), text, data) == want(calls)


def test_a_value_nested_past_the_recursion_limit_breaks_the_call() -> None:
    """JSON nested deeper than Python's recursion limit (the fuzz found it): the whole
    read raises and reads nothing; the reader never raises, and reports the committed
    call broken."""
    deep = "[" * 100_000 + "]" * 100_000
    text = (
        '<|open|>call tool="write_file" index="1"<|sep|>'
        + argument("path", "string", "a.py")
        + argument("content", "array", deep)
        + "<|close|>call<|sep|>"
    )
    tools = as_tools(TOOLS)
    reader = KimiK3CallsReader(tools)
    reader.feed(text)
    [call] = reader.calls
    assert call.broken and "".join(call.arguments) == '{"path":"a.py"'
