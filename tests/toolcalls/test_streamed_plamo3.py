"""Streamed arguments of PLaMo 3's tool requests (kind ``plamo3``,
``<|plamo:begin_tool_requests:plamo|>`` … ``<|plamo:end_tool_requests:plamo|>``;
``runtime/toolcalls/partial_plamo3.py``).

On PLaMo 3's fixture tokenizer (its tags several tokens each), the requests written as
vLLM's tests write them (``tests/families/test_plamo3.py``: name tags, arguments tag,
``<|plamo:constrain|>json<|plamo:msg|>``, the JSON object) after the reasoning: for every
split of the output into engine steps, the entries a client joins by index are exactly
``parse()``'s calls, which are the calls the test wrote (built from the values, never read
back from an output).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.tool_types import as_tools
from reasonspan.runtime.toolcalls.partial_plamo3 import Plamo3CallsReader
from reasonspan.runtime.toolcalls.plamo3_calls import parse_plamo3
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

TOK = tokenizer(FAMILY_TOKENIZERS["plamo3"])
PROMPT = TOK.encode("<|plamo:begin_think:plamo|>")
PLAN = "I will write the file.<|plamo:end_think:plamo|>"
OPEN, CLOSE = "<|plamo:begin_tool_requests:plamo|>", "<|plamo:end_tool_requests:plamo|>"
CALLS = calls_strategy('ab "\\\n東🙂{}[]:,<|')


def make() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("plamo3", TOK, {})


def request(name: str, args: Any, after: str = "") -> str:
    """One request as vLLM's tests write it; ``after``: text between the object and the
    arguments' end tag."""
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return (
        f"<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>{name}"
        "<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|>"
        f"<|plamo:constrain|>json<|plamo:msg|>{text}{after}<|plamo:end_tool_arguments:plamo|>"
        "<|plamo:end_tool_request:plamo|>"
    )


def output(*requests: str) -> list[int]:
    return TOK.encode(PLAN + OPEN + "".join(requests) + CLOSE + "<|plamo:tag|>")


def test_a_long_argument_streams_in_many_pieces() -> None:
    """A 5,000-token file after the first argument: many pieces, long before the request
    closes, joined to the whole read; a request without the constrain header after it."""
    calls: list[Call] = [
        (
            "write_file",
            {"path": "steps.py", "content": CODE + "<|plamo:end_tool_arguments:plamo|>"},
        ),
        ("get_weather", {"city": "Bern", "days": [1, 2]}),
    ]
    bare = request(*calls[1]).replace("<|plamo:constrain|>json<|plamo:msg|>", "")
    ids = output(request(*calls[0]), bare)
    entries = joins_whole(ids, PROMPT, make, want(calls), list(range(0, len(ids), 3)))
    assert pieces(entries, 0) >= 10
    assert len(entries[0][0].function.arguments or "") < 200  # sent as it came


def test_a_bad_first_argument_is_never_sent() -> None:
    """``1e999`` first (JSON cannot hold it): the whole read drops the request and keeps
    its sibling; the stream never starts it, its long second argument included."""
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    bad = '{"mode": 1e999, "content": ' + json.dumps(CODE[:2000]) + "}"
    ids = output(request("write_file", bad), request(*sibling))
    entries = joins_whole(ids, PROMPT, make, want([sibling]), list(range(len(ids))), 1)
    assert all(e.function.name != "write_file" for chunk in entries for e in chunk if e.function)


def test_a_call_broken_after_it_was_sent_is_listed_broken() -> None:
    """A space between the streamed object and its end tag: the whole read drops the
    request (the tag must follow the ``}``) and keeps its sibling; the stream reports it
    broken and never closes its arguments."""
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    args = {"path": "a.py", "content": CODE[:2000]}
    ids = output(request("write_file", args, after=" "), request(*sibling))
    whole = make().parse(ids, PROMPT, tools=TOOLS, finish_reason="stop")
    assert [(c.name, c.arguments) for c in whole.tool_calls] == want([sibling])
    content = broken_first(ids, PROMPT, make, sibling, '{"path":"a.py","content":"def step_0')
    assert content == (whole.content or "")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, data=st.data())
def test_entries_join_to_the_whole_read_at_any_split(
    calls: list[Call], data: st.DataObject
) -> None:
    """One to three requests with strings, numbers, nested values: at any split and read
    step the entries join to ``parse()``'s calls, which are the calls written."""
    ids = output(*(request(*c) for c in calls))
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    step = data.draw(st.sampled_from([1, 3, 16]))
    joins_whole(ids, PROMPT, make, want(calls), cuts, step)


@settings(max_examples=100, deadline=None)
@given(calls=CALLS, data=st.data())
def test_reader_at_any_character_split(calls: list[Call], data: st.DataObject) -> None:
    """The reader fed 1-5 characters at a time (a tokenizer may cut a tag anywhere): each
    call it reports is whole, not broken, and is the whole read's call."""
    text = "".join(request(*c) for c in calls)
    expected = parse_plamo3(text, as_tools(TOOLS)) or []
    assert [(c.name, c.arguments) for c in expected] == want(calls)
    assert fed_in_pieces(Plamo3CallsReader(), text, data) == want(calls)
