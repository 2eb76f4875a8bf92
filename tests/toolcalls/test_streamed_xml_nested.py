"""Streamed arguments of MiniMax-M3's nested XML invokes (kind ``xml_nested``;
``runtime/toolcalls/partial_xml_nested.py``).

On MiniMax-M3's own tokenizer (its namespace token ``]<]minimax[>[`` one special token),
the calls written as its template's ``to_xml`` macro writes them
(``tests.support.xml_calls._m3_xml``: mappings as elements, lists as ``<item>`` elements,
booleans as JSON, anything else as its text): for every split of the output into engine
steps, the entries a client joins by index are exactly ``parse()``'s calls, which are the
calls the test wrote (built from the values, never read back from an output). The values
are ones the schema typing keeps: strings for ``path`` / ``content`` / ``city`` (declared
strings, kept as written, whitespace included), integers for ``mode``, and for ``days``
(declared with no type) numbers, booleans and non-empty lists and objects whose strings
do not read as JSON.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.tool_types import as_tools
from reasonspan.runtime.toolcalls.partial_xml_nested import XmlNestedCallsReader
from reasonspan.runtime.toolcalls.xml_nested import parse_xml_nested
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.streamed_calls import (
    CODE,
    TOOLS,
    Call,
    compact,
    fed_in_pieces,
    joined,
    pieces,
    run,
    want,
)
from tests.support.streamed_calls import streams_as_whole as joins_whole
from tests.support.xml_calls import NS, _m3_xml

TOK = tokenizer(FAMILY_TOKENIZERS["minimax_m3"])
PROMPT = TOK.encode("]~b]user\nq[e~[\n]~b]ai\n")
BEFORE = "<mm:think>plan</mm:think>"

TEXT = st.text('ab "\\\n 東🙂{}[]:,<|>/', max_size=12)
WORD = st.text("ab <>&東", max_size=4)
"""Strings that never read as JSON (no digit, bracket or keyword)."""
NESTED = st.recursive(
    st.one_of(st.integers(-99, 99), st.booleans(), WORD),
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3),
        st.dictionaries(st.text("ab", min_size=1, max_size=2), inner, min_size=1, max_size=2),
    ),
    max_leaves=5,
)
DAYS = st.one_of(
    st.integers(-99, 99), st.booleans(), NESTED.filter(lambda v: not isinstance(v, str))
)
WRITE = st.fixed_dictionaries({"path": TEXT}, optional={"content": TEXT, "mode": st.integers()})
WEATHER = st.fixed_dictionaries({}, optional={"city": TEXT, "days": DAYS})
CALLS = st.lists(
    st.one_of(st.tuples(st.just("write_file"), WRITE), st.tuples(st.just("get_weather"), WEATHER)),
    min_size=1,
    max_size=3,
)


def body(calls: list[Call]) -> str:
    """The block's calls as M3's template writes them (after ``<tool_call>``)."""
    return "\n" + "".join(
        f'{NS}<invoke name="{name}">{_m3_xml(args)}{NS}</invoke>\n' for name, args in calls
    )


def block(text: str) -> str:
    return f"{BEFORE}{NS}<tool_call>{text}{NS}</tool_call>"


def make() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("minimax_m3", TOK)


def ids_of(calls: list[Call]) -> list[int]:
    return TOK.encode(block(body(calls)))


def test_a_long_argument_streams_in_many_pieces() -> None:
    """A 5,000-token file after the first argument (holding ``<`` and a piece of the
    namespace token, which are text): many pieces, long before the invoke closes, joined
    to the whole read; an object argument and a call with no argument after it are sent
    too."""
    content = CODE + "<b> ]<]mini </content> ]<]minimax[ x"
    calls: list[Call] = [
        ("write_file", {"path": "steps.py", "content": content}),
        ("get_weather", {"city": "Bern", "days": {"a": [1, 2], "b": True}}),
        ("get_weather", {}),
    ]
    ids = ids_of(calls)
    entries = joins_whole(ids, PROMPT, make, want(calls), list(range(0, len(ids), 3)))
    assert pieces(entries, 0) >= 10
    assert len(entries[0][0].function.arguments or "") < 200  # sent as it came


def test_a_bad_first_value_is_never_sent() -> None:
    """``1e999`` as the first value (JSON cannot hold it): the whole read refuses the
    block, and the stream never starts the call, its long second value included, nor its
    sibling."""
    bad: dict[str, Any] = {"mode": "1e999", "content": "x = 1\n" * 600}
    ids = ids_of([("write_file", bad), ("get_weather", {"city": "Bern"})])
    whole = make().parse(ids, PROMPT, tools=TOOLS, finish_reason="stop")
    assert whole.tool_calls == []
    content, entries, writer, _ = run(ids, list(range(len(ids))), prompt=PROMPT, make=make,
                                      step=1)  # fmt: skip
    assert entries == [] and writer.broken == [] and content == (whole.content or "")


def test_a_call_broken_after_it_was_sent_is_listed_broken() -> None:
    """A value JSON cannot hold after a streamed one: the whole read refuses the block
    (it is the content); the stream reports the call broken and never closes its
    arguments."""
    bad: dict[str, Any] = {"path": "a.py", "content": "x = 1\n" * 600, "mode": "1e999"}
    ids = ids_of([("write_file", bad)])
    whole = make().parse(ids, PROMPT, tools=TOOLS, finish_reason="stop")
    assert whole.tool_calls == []
    content, entries, writer, _ = run(ids, list(range(0, len(ids), 3)), prompt=PROMPT,
                                      make=make, step=4)  # fmt: skip
    [(name, arguments)] = joined(entries)
    assert writer.broken == [0] and name == "write_file"
    assert arguments.startswith('{"path":"a.py","content":"x = 1\\n')
    assert not arguments.endswith("}")
    assert pieces(entries, 0) >= 10 and content == (whole.content or "")


def test_elements_after_streamed_text_break_the_call() -> None:
    """A string argument that turns out to hold text and then child elements: the whole
    read refuses the block; the stream, which sent the text, reports the call broken."""
    text = (
        f'\n{NS}<invoke name="write_file">{NS}<path>a.py{NS}</path>{NS}<content>'
        + "x = 1\n" * 300
        + f"{NS}<a>b{NS}</a>{NS}</content>{NS}</invoke>\n"
    )
    ids = TOK.encode(block(text))
    whole = make().parse(ids, PROMPT, tools=TOOLS, finish_reason="stop")
    assert whole.tool_calls == []
    _, entries, writer, _ = run(ids, list(range(0, len(ids), 2)), prompt=PROMPT, make=make,
                                step=2)  # fmt: skip
    [(name, arguments)] = joined(entries)
    assert writer.broken == [0] and name == "write_file"
    assert arguments.startswith('{"path":"a.py","content":"x = 1')


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, data=st.data())
def test_entries_join_to_the_whole_read_at_any_split(
    calls: list[Call], data: st.DataObject
) -> None:
    """One to three calls: at any split and read step the entries join to ``parse()``'s
    calls, which are the calls written."""
    ids = ids_of(calls)
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    step = data.draw(st.sampled_from([1, 3, 16]))
    joins_whole(ids, PROMPT, make, want(calls), cuts, step)


@settings(max_examples=100, deadline=None)
@given(calls=CALLS, data=st.data())
def test_reader_at_any_character_split(calls: list[Call], data: st.DataObject) -> None:
    """The reader fed 1-5 characters at a time (a tokenizer may cut the namespace token
    anywhere): each call it reports is whole, not broken, and is the whole read's call."""
    text = body(calls)
    tools = as_tools(TOOLS)
    expected = parse_xml_nested(text, tools) or []
    assert [(c.name, c.arguments) for c in expected] == want(calls)
    assert fed_in_pieces(XmlNestedCallsReader(tools), text, data) == want(calls)


def test_whitespace_then_elements_is_an_object() -> None:
    """A string argument whose text is only whitespace before child elements reads as an
    object: the stream holds the whitespace back and sends the object the whole read
    sends."""
    text = (
        f'\n{NS}<invoke name="write_file">{NS}<path>a.py{NS}</path>{NS}<content>\n  '
        f"{NS}<a>b{NS}</a>{NS}</content>{NS}<mode>3{NS}</mode>{NS}</invoke>\n"
    )
    ids = TOK.encode(block(text))
    expected = [("write_file", compact({"path": "a.py", "content": {"a": "b"}, "mode": 3}))]
    joins_whole(ids, PROMPT, make, expected, list(range(len(ids))), 1)


def test_a_value_nested_past_the_recursion_limit_breaks_the_call() -> None:
    """Items nested deeper than Python's recursion limit: the whole read raises and
    reads nothing; the reader never raises, and reports the committed call broken."""
    deep = f"{NS}<item>" * 5_000 + f"{NS}</item>" * 5_000
    text = f'\n{NS}<invoke name="get_weather">{NS}<city>Bern{NS}</city>{NS}<days>{deep}{NS}</days>'
    reader = XmlNestedCallsReader(as_tools(TOOLS))
    reader.feed(text + f"{NS}</invoke>\n")
    [call] = reader.calls
    assert call.broken and "".join(call.arguments) == '{"city":"Bern"'
