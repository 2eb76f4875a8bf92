"""Streamed arguments of Cohere Command's actions (kind ``cohere``,
``<|START_ACTION|>[{"tool_call_id": "0", "tool_name": NAME, "parameters": {…}}, …]
<|END_ACTION|>``; ``runtime/toolcalls/partial_cohere.py``).

On the Cohere fixture (DeepSeek V3's tokenizer with Cohere's special tokens), the actions
written as Command R7B's template writes them (one a line, ids counting from 0) after the
``<|START_THINKING|>`` plan, for Command 3 and Command 4 (one format): for every split of
the output into engine steps, the entries a client joins by index are exactly
``parse()``'s calls, which are the calls the test wrote (built from the values, never read
back from an output).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.tool_types import as_tools
from reasonspan.runtime.toolcalls.cohere_calls import parse_cohere
from reasonspan.runtime.toolcalls.partial_cohere import CohereCallsReader
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.streamed_calls import (
    CODE,
    TOOLS,
    Call,
    broken_first,
    calls_strategy,
    compact,
    fed_in_pieces,
    pieces,
    want,
)
from tests.support.streamed_calls import streams_as_whole as joins_whole

TOK = tokenizer(FAMILY_TOKENIZERS["cohere_command3"])
TURN = "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Write it.<|END_OF_TURN_TOKEN|>"
PROMPT = TOK.encode(TURN + "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|>")
OPEN, CLOSE = "<|START_ACTION|>", "<|END_ACTION|>"
PLAN = "I will write the file.<|END_THINKING|>"
CALLS = calls_strategy('ab "\\\n東🙂{}[]:,<|')


def maker(family: str) -> Any:
    return lambda: reasonspan.create_parser_sync(family, TOK, {})


def item(i: int, name: str, args: Any) -> str:
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return f'{{"tool_call_id": "{i}", "tool_name": "{name}", "parameters": {text}}}'


def action(items: list[str]) -> str:
    """Command R7B's template: a JSON list, one action a line."""
    return OPEN + "[\n    " + ",\n    ".join(items) + "\n]" + CLOSE


@pytest.mark.parametrize("family", ["cohere_command3", "cohere_command4"])
def test_a_long_argument_streams_in_many_pieces(family: str) -> None:
    """A 5,000-token file after the first argument: many pieces, long before the action
    closes, joined to the whole read."""
    calls: list[Call] = [
        ("write_file", {"path": "steps.py", "content": CODE}),
        ("get_weather", {"city": "Bern", "days": 2}),
    ]
    ids = TOK.encode(PLAN + action([item(i, *c) for i, c in enumerate(calls)]))
    cuts = list(range(0, len(ids), 3))
    entries = joins_whole(ids, PROMPT, maker(family), want(calls), cuts)
    assert pieces(entries, 0) >= 10
    assert len(entries[0][0].function.arguments or "") < 200  # sent as it came


def test_keys_the_whole_read_ignores_are_not_followed() -> None:
    """``name`` and ``arguments`` mean nothing in an action (the whole read takes
    ``tool_name`` and ``parameters``): they never name a call or stream as its arguments;
    ``parameters`` as a JSON string is sent whole, and so is every action after it."""
    items = [
        '{"name": "note", "tool_name": "write_file", "arguments": {"path": "x"}, '
        f'"parameters": {json.dumps({"path": "a.py", "content": CODE[:2000]})}}}',
        item(1, "get_weather", json.dumps(json.dumps({"city": "Bern"}))),
        item(2, "write_file", {"path": "b.py", "content": CODE[:2000]}),
    ]
    ids = TOK.encode(PLAN + action(items))
    expected = [
        ("write_file", compact({"path": "a.py", "content": CODE[:2000]})),
        ("get_weather", compact({"city": "Bern"})),
        ("write_file", compact({"path": "b.py", "content": CODE[:2000]})),
    ]
    cuts = list(range(0, len(ids), 2))
    entries = joins_whole(ids, PROMPT, maker("cohere_command3"), expected, cuts, 1)
    assert pieces(entries, 0) >= 10 and [pieces(entries, i) for i in (1, 2)] == [1, 1]


def test_a_bad_first_argument_is_never_sent_and_a_later_one_breaks() -> None:
    """``1e999`` first: the action never starts, its sibling is sent; ``1e999`` after a
    streamed argument: the action is reported broken, its arguments never closed."""
    content = json.dumps(CODE[:2000])
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    bad_first = '{"tool_call_id": "0", "tool_name": "write_file", "parameters": '
    bad_first += '{"mode": 1e999, "content": ' + content + "}}"
    ids = TOK.encode(PLAN + action([bad_first, item(1, *sibling)]))
    make = maker("cohere_command3")
    entries = joins_whole(ids, PROMPT, make, want([sibling]), list(range(len(ids))), 1)
    assert all(e.function.name != "write_file" for chunk in entries for e in chunk if e.function)
    bad_later = '{"tool_call_id": "0", "tool_name": "write_file", "parameters": '
    bad_later += '{"path": "a.py", "content": ' + content + ', "mode": 1e999}}'
    ids = TOK.encode(PLAN + action([bad_later, item(1, *sibling)]))
    whole = make().parse(ids, PROMPT, tools=TOOLS, finish_reason="stop")
    assert [(c.name, c.arguments) for c in whole.tool_calls] == want([sibling])
    content_text = broken_first(ids, PROMPT, make, sibling)
    assert content_text == (whole.content or "")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, data=st.data())
def test_entries_join_to_the_whole_read_at_any_split(
    calls: list[Call], data: st.DataObject
) -> None:
    """One to three actions with strings, numbers, nested values: at any split and read
    step the entries join to ``parse()``'s calls, which are the calls written."""
    ids = TOK.encode(PLAN + action([item(i, *c) for i, c in enumerate(calls)]))
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    step = data.draw(st.sampled_from([1, 3, 16]))
    joins_whole(ids, PROMPT, maker("cohere_command3"), want(calls), cuts, step)


@settings(max_examples=100, deadline=None)
@given(calls=CALLS, data=st.data())
def test_reader_at_any_character_split(calls: list[Call], data: st.DataObject) -> None:
    """The reader fed 1-5 characters at a time: each call it reports is whole, not
    broken, and is the whole read's call."""
    text = action([item(i, *c) for i, c in enumerate(calls)])[len(OPEN) : -len(CLOSE)]
    expected = parse_cohere(text, as_tools(TOOLS)) or []
    assert [(c.name, c.arguments) for c in expected] == want(calls)
    assert fed_in_pieces(CohereCallsReader(as_tools(TOOLS)), text, data) == want(calls)
