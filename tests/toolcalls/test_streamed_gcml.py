"""Streamed arguments of GigaChat 3.5's GCML invokes (kind ``gcml``,
``<｜GCML｜tool_calls>`` … ``</｜GCML｜tool_calls>``; ``runtime/toolcalls/partial_gcml.py``).

On GigaChat 3.5's fixture tokenizer (the GCML tags several tokens each), the calls written
as its chat template writes them (``tests/families/test_gigachat35.py``: strings raw with
``string="true"``, other values JSON with ``string="false"``, one invoke and one parameter
a line): for every split of the output into engine steps, the entries a client joins by
index are exactly ``parse()``'s calls, which are the calls the test wrote (built from the
values, never read back from an output).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.tool_types import as_tools
from reasonspan.runtime.toolcalls.gcml_calls import parse_gcml
from reasonspan.runtime.toolcalls.partial_gcml import GcmlCallsReader
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.streamed_calls import (
    CODE,
    TOOLS,
    Call,
    broken_first,
    calls_strategy,
    fed_in_pieces,
    pieces,
    want,
)
from tests.support.streamed_calls import streams_as_whole as joins_whole

TOK = tokenizer(FAMILY_TOKENIZERS["gigachat35"])
TURN = "user<|role_sep|>\nWrite it.<|message_sep|>\n\nassistant<|role_sep|>\n"
PROMPT = TOK.encode(TURN + "<think>")
PLAN = "I will write the file.</think>"
OPEN, CLOSE = "<｜GCML｜tool_calls>\n", "\n</｜GCML｜tool_calls>"
CALLS = calls_strategy('ab "\\\n東🙂{}[]:,<|/')


def make() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("gigachat35", TOK, {})


def param(name: str, value: Any) -> str:
    if isinstance(value, str):
        return f'<｜GCML｜parameter name="{name}" string="true">{value}</｜GCML｜parameter>'
    body = json.dumps(value, ensure_ascii=False)
    return f'<｜GCML｜parameter name="{name}" string="false">{body}</｜GCML｜parameter>'


def invoke(name: str, args: dict[str, Any], between: str = "") -> str:
    """One invoke as the template writes it; ``between``: text after its first parameter."""
    lines = [param(k, v) + "\n" for k, v in args.items()]
    return (
        f'<｜GCML｜invoke name="{name}">\n'
        + "".join(lines[:1])
        + between
        + "".join(lines[1:])
        + "</｜GCML｜invoke>"
    )


def output(*invokes: str) -> list[int]:
    return TOK.encode(PLAN + OPEN + "\n".join(invokes) + CLOSE)


def test_a_long_argument_streams_in_many_pieces() -> None:
    """A 5,000-token file after the first parameter (its closer's start written inside it):
    many pieces, long before the invoke closes, joined to the whole read; an invoke with
    no parameter after it."""
    calls: list[Call] = [
        ("write_file", {"path": "steps.py", "content": CODE + "</｜GCML｜param <b>"}),
        ("get_weather", {"city": "Bern", "days": [1, 2]}),
        ("get_weather", {}),
    ]
    ids = output(*(invoke(*c) for c in calls))
    entries = joins_whole(ids, PROMPT, make, want(calls), list(range(0, len(ids), 3)))
    assert pieces(entries, 0) >= 10
    assert len(entries[0][0].function.arguments or "") < 200  # sent as it came


def test_a_bad_first_argument_is_never_sent() -> None:
    """``1e999`` as the first value (JSON reads it as infinity, which no call can carry):
    the whole read drops the invoke and keeps its sibling; the stream never starts it, its
    long second parameter included."""
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    bad = invoke("write_file", {"mode": 1, "content": CODE[:2000]}).replace(
        '"mode" string="false">1<', '"mode" string="false">1e999<'
    )
    ids = output(bad, invoke(*sibling))
    entries = joins_whole(ids, PROMPT, make, want([sibling]), list(range(len(ids))), 1)
    assert all(e.function.name != "write_file" for chunk in entries for e in chunk if e.function)


def test_a_call_broken_after_it_was_sent_is_listed_broken() -> None:
    """Stray text after a streamed parameter: the whole read drops the invoke and keeps its
    sibling; the stream reports it broken, never closes its arguments, and streams the
    sibling."""
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    args = {"path": "a.py", "content": CODE[:2000], "mode": 1}
    bad = invoke("write_file", args).replace(
        '<｜GCML｜parameter name="mode"', 'stray\n<｜GCML｜parameter name="mode"'
    )
    ids = output(bad, invoke(*sibling))
    whole = make().parse(ids, PROMPT, tools=TOOLS, finish_reason="stop")
    assert [(c.name, c.arguments) for c in whole.tool_calls] == want([sibling])
    broken_first(ids, PROMPT, make, sibling, '{"path":"a.py","content":"def step_0')


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, data=st.data())
def test_entries_join_to_the_whole_read_at_any_split(
    calls: list[Call], data: st.DataObject
) -> None:
    """One to three invokes (strings raw, other values JSON): at any split and read step
    the entries join to ``parse()``'s calls, which are the calls written."""
    ids = output(*(invoke(*c) for c in calls))
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    step = data.draw(st.sampled_from([1, 3, 16]))
    joins_whole(ids, PROMPT, make, want(calls), cuts, step)


@settings(max_examples=100, deadline=None)
@given(calls=CALLS, data=st.data())
def test_reader_at_any_character_split(calls: list[Call], data: st.DataObject) -> None:
    """The reader fed 1-5 characters at a time (a tokenizer may cut a tag anywhere): each
    call it reports is whole, not broken, and is the whole read's call."""
    text = "\n".join(invoke(*c) for c in calls)
    tools = as_tools(TOOLS)
    expected = parse_gcml(text, tools) or []
    assert [(c.name, c.arguments) for c in expected] == want(calls)
    assert fed_in_pieces(GcmlCallsReader(tools), text, data) == want(calls)


def test_a_value_nested_past_the_recursion_limit_breaks_the_call() -> None:
    """A ``string="false"`` value nested deeper than Python's recursion limit: the whole
    read raises and reads nothing; the reader never raises, and reports the committed
    call broken (as kimi_k3's, steptml's and xml_nested's readers do)."""
    deep = "[" * 100_000 + "]" * 100_000
    text = (
        '<｜GCML｜invoke name="get_weather">\n'
        + param("city", "Bern")
        + '\n<｜GCML｜parameter name="days" string="false">'
        + deep
        + "</｜GCML｜parameter>\n</｜GCML｜invoke>"
    )
    reader = GcmlCallsReader(as_tools(TOOLS))
    reader.feed(text)
    [call] = reader.calls
    assert call.broken and "".join(call.arguments) == '{"city":"Bern"'
