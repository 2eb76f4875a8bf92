"""Streamed arguments of IFM K2-Horizon's tool-call groups (kind ``ifm``,
``<ifm|tool_calls>`` … ``</ifm|tool_calls>``; ``runtime/toolcalls/partial_ifm.py``).

On K2-Horizon's fixture tokenizer (its tags one token each), the calls written as its chat
template writes them in the ``xml`` and ``xml_typed`` layouts (``tests/families/
test_k2_horizon.py``: the name and a newline, one element a line, values raw): for every
split of the output into engine steps, the entries a client joins by index are exactly
``parse()``'s calls. Values are raw text typed from the schema, so the property tests
compare with ``parse()`` and check that it read every call written (the family's tests
check its typing). A ``json``-layout call is sent whole.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.tool_types import as_tools
from reasonspan.runtime.toolcalls.ifm_calls import parse_ifm
from reasonspan.runtime.toolcalls.partial_ifm import IfmCallsReader
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

TOK = tokenizer(FAMILY_TOKENIZERS["k2_horizon"])
PROMPT = TOK.encode("<|ifm|im_end|>\nassistant\n<ifm|think>\n")
PLAN = "I will write the file.</ifm|think>\n"
CALLS = calls_strategy('ab "\\\n東🙂{}[]:,<|/')


def make() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("k2_horizon", TOK, {})


def xml_call(name: str, args: dict[str, Any], typed: bool = False, between: str = "") -> str:
    """One call as the template writes it (``typed``: the ``xml_typed`` layout, each value's
    JSON type named); ``between``: text after the first element."""
    lines = [
        f"<ifm|arg_key>{k}</ifm|arg_key>\n"
        + (f"<ifm|arg_type>{_type(v)}</ifm|arg_type>\n" if typed else "")
        + f"<ifm|arg_value>{v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
        + "</ifm|arg_value>\n"
        for k, v in args.items()
    ]
    return (
        f"<ifm|tool_call>{name}\n"
        + "".join(lines[:1])
        + between
        + "".join(lines[1:])
        + ("</ifm|tool_call>")
    )


def _type(value: Any) -> str:
    kinds = {str: "string", bool: "boolean", int: "integer", list: "array", dict: "object"}
    return kinds.get(type(value), "any")


def output(*calls: str) -> list[int]:
    return TOK.encode(PLAN + "<ifm|tool_calls>\n" + "\n".join(calls) + "\n</ifm|tool_calls>")


def whole(ids: list[int]) -> list[tuple[str, str]]:
    got = make().parse(ids, PROMPT, tools=TOOLS, finish_reason="stop")
    return [(c.name, c.arguments) for c in got.tool_calls]


def test_a_long_argument_streams_in_many_pieces() -> None:
    """A 5,000-token file after the first argument (its closer's start written inside it):
    many pieces, long before the call ends, joined to the whole read; a typed call and a
    call with no argument after it, then a json-layout call, sent whole."""
    calls: list[Call] = [
        ("write_file", {"path": "steps.py", "content": CODE + "</ifm|arg_val <b>"}),
        ("get_weather", {"city": "Bern", "days": [1, 2]}),
        ("get_weather", {}),
        ("get_weather", {"city": "Rome"}),
    ]
    texts = [xml_call(*calls[0]), xml_call(*calls[1], typed=True), xml_call(*calls[2])]
    js = json.dumps({"name": "get_weather", "arguments": calls[3][1]})
    ids = output(*texts, f"<ifm|tool_call>{js}</ifm|tool_call>")
    entries = joins_whole(ids, PROMPT, make, want(calls), list(range(0, len(ids), 3)))
    assert pieces(entries, 0) >= 10 and pieces(entries, 3) == 1
    assert len(entries[0][0].function.arguments or "") < 200  # sent as it came


def test_a_bad_first_argument_is_never_sent() -> None:
    """An empty first key: the whole read drops the call and keeps its sibling; the stream
    never starts it, its long second argument included."""
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    bad = xml_call("write_file", {" ": "x", "content": CODE[:2000]})
    ids = output(bad, xml_call(*sibling))
    entries = joins_whole(ids, PROMPT, make, want([sibling]), list(range(len(ids))), 1)
    assert all(e.function.name != "write_file" for chunk in entries for e in chunk if e.function)


def test_a_call_broken_after_it_was_sent_is_listed_broken() -> None:
    """Stray text after a streamed argument: the whole read drops the call and keeps its
    sibling; the stream reports it broken, never closes its arguments, and streams the
    sibling."""
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    args = {"path": "a.py", "content": CODE[:2000], "mode": 1}
    bad = xml_call("write_file", args).replace("<ifm|arg_key>mode", "stray\n<ifm|arg_key>mode")
    ids = output(bad, xml_call(*sibling))
    assert whole(ids) == want([sibling])
    broken_first(ids, PROMPT, make, sibling, '{"path":"a.py","content":"def step_0')


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, typed=st.booleans(), data=st.data())
def test_entries_join_to_the_whole_read_at_any_split(
    calls: list[Call], typed: bool, data: st.DataObject
) -> None:
    """One to three calls with strings, numbers, nested values, in either xml layout: at
    any split and read step the entries join to ``parse()``'s calls, which read every call
    written."""
    ids = output(*(xml_call(*c, typed=typed) for c in calls))
    expected = whole(ids)
    assert [name for name, _ in expected] == [name for name, _ in calls]
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    step = data.draw(st.sampled_from([1, 3, 16]))
    joins_whole(ids, PROMPT, make, expected, cuts, step)


@settings(max_examples=100, deadline=None)
@given(calls=CALLS, typed=st.booleans(), data=st.data())
def test_reader_at_any_character_split(calls: list[Call], typed: bool, data: st.DataObject) -> None:
    """The reader fed 1-5 characters at a time (a tokenizer may cut a tag anywhere): each
    call it reports is whole, not broken, and is the whole read's call."""
    text = "\n".join(xml_call(*c, typed=typed) for c in calls)
    tools = as_tools(TOOLS)
    expected = [(c.name, c.arguments) for c in parse_ifm(text, tools) or []]
    assert [name for name, _ in expected] == [name for name, _ in calls]
    assert fed_in_pieces(IfmCallsReader(tools), text, data) == expected
