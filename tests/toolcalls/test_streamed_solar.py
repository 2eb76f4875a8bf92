"""Streamed arguments of Solar Open 2's calls (kind ``solar``, ``<|tool_call:start|>NAME\\n
<|tool_arg:start|>K<|tool_arg:value|>V<|tool_arg:end|>\\n…<|tool_call:end|>``;
``runtime/toolcalls/partial_solar.py``).

On Solar Open 2's fixture tokenizer (its markers one token each), the calls written as
vLLM's tests write them (``tests/families/test_solar_open2.py``: the name and a newline,
one argument a line, values raw): for every split of the output into engine steps, the
entries a client joins by index are exactly ``parse()``'s calls. Values are raw text typed
from the schema, so the property tests compare with ``parse()`` and check that it read
every call written (the family's tests check its typing).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.tool_types import as_tools
from reasonspan.runtime.toolcalls.partial_solar import SolarCallsReader
from reasonspan.runtime.toolcalls.solar_calls import parse_solar
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

TOK = tokenizer(FAMILY_TOKENIZERS["solar_open2"])
TURN = "<|im:start|>user<|im:content|>Write it.<|im:end|><|im:start|>assistant<|im:content|>"
PROMPT = TOK.encode(TURN + "<|think:start|>")
PLAN = "I will write the file.<|think:end|>"
START, END = "<|tool_call:start|>", "<|tool_call:end|>"
CALLS = calls_strategy('ab "\\\n東🙂{}[]:,<|')


def make() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("solar_open2", TOK, {})


def body(name: str, args: dict[str, Any], between: str = "") -> str:
    """One call's text after its start marker, as vLLM's tests write it; ``between``:
    text after the first argument's line."""
    lines = [
        f"<|tool_arg:start|>{k}<|tool_arg:value|>"
        f"{v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}<|tool_arg:end|>\n"
        for k, v in args.items()
    ]
    return f"{name}\n" + "".join(lines[:1]) + between + "".join(lines[1:])


def output(*bodies: str) -> list[int]:
    return TOK.encode(PLAN + "".join(START + b + END for b in bodies))


def whole(ids: list[int]) -> list[tuple[str, str]]:
    got = make().parse(ids, PROMPT, tools=TOOLS, finish_reason="stop")
    return [(c.name, c.arguments) for c in got.tool_calls]


def test_a_long_argument_streams_in_many_pieces() -> None:
    """A 5,000-token file after the first argument (marker-like text in it): many pieces,
    long before the call ends, joined to the whole read; a call with no argument after
    it."""
    calls: list[Call] = [
        ("write_file", {"path": "steps.py", "content": CODE + "<|tool_arg:en <|tool_call"}),
        ("get_weather", {"city": "Bern", "days": [1, 2]}),
        ("get_weather", {}),
    ]
    ids = output(*(body(*c) for c in calls))
    entries = joins_whole(ids, PROMPT, make, want(calls), list(range(0, len(ids), 3)))
    assert pieces(entries, 0) >= 10
    assert len(entries[0][0].function.arguments or "") < 200  # sent as it came


def test_a_bad_first_argument_is_never_sent() -> None:
    """``1e999`` as the first value (an integer property; JSON cannot hold it): the whole
    read drops the call and keeps its sibling, a later part of the same region; the stream
    never starts it, its long second argument included."""
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    bad = body("write_file", {"mode": "1e999", "content": CODE[:2000]})
    ids = output(bad + START + body(*sibling))
    entries = joins_whole(ids, PROMPT, make, want([sibling]), list(range(len(ids))), 1)
    assert all(e.function.name != "write_file" for chunk in entries for e in chunk if e.function)


def test_a_call_broken_after_it_was_sent_is_listed_broken() -> None:
    """Stray text between a streamed argument and the next: the whole read drops the call
    and keeps its sibling (the next part of the region); the stream reports it broken,
    never closes its arguments, and streams the sibling."""
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    args = {"path": "a.py", "content": CODE[:2000], "mode": 1}
    bad = body("write_file", args).replace(
        "<|tool_arg:end|>\n<|tool_arg:start|>mode", "<|tool_arg:end|>\nx<|tool_arg:start|>mode"
    )
    ids = output(bad + START + body(*sibling))
    assert whole(ids) == want([sibling])
    broken_first(ids, PROMPT, make, sibling, '{"path":"a.py","content":"def step_0')


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, one_region=st.booleans(), data=st.data())
def test_entries_join_to_the_whole_read_at_any_split(
    calls: list[Call], one_region: bool, data: st.DataObject
) -> None:
    """One to three calls (in their own regions, or one region without the end markers
    the model left out) with strings, numbers, nested values: at any split and read step
    the entries join to ``parse()``'s calls, which are the calls written."""
    bodies = [body(*c) for c in calls]
    ids = output(START.join(bodies)) if one_region else output(*bodies)
    expected = whole(ids)
    assert [name for name, _ in expected] == [name for name, _ in calls]
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    step = data.draw(st.sampled_from([1, 3, 16]))
    joins_whole(ids, PROMPT, make, expected, cuts, step)


@settings(max_examples=100, deadline=None)
@given(calls=CALLS, data=st.data())
def test_reader_at_any_character_split(calls: list[Call], data: st.DataObject) -> None:
    """The reader fed 1-5 characters at a time (a tokenizer may cut a marker anywhere), a
    start marker after the last call ending it: each call it reports is whole, not broken,
    and is the whole read's call."""
    text = START.join(body(*c) for c in calls) + START
    tools = as_tools(TOOLS)
    expected = [(c.name, c.arguments) for c in parse_solar(text, tools) or []]
    assert [name for name, _ in expected] == [name for name, _ in calls]
    assert fed_in_pieces(SolarCallsReader(tools), text, data) == expected
