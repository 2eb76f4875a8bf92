"""Streamed arguments of Apertus' calls (kind ``apertus``,
``<|tools_prefix|>[{"NAME": {ARGS}}, …]<|tools_suffix|>``;
``runtime/toolcalls/partial_apertus.py``).

On Apertus' tokenizer fixture (Qwen2.5's with Apertus' special tokens), the calls written
as its chat template writes them (``'{"' + name + '": ' + arguments + '}'`` joined by
``, `` in ``[…]``; one object alone is read too): for every split of the output into
engine steps, the entries a client joins by index are exactly ``parse()``'s calls, which
are the calls the test wrote (built from the values, never read back from an output).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.tool_types import as_tools
from reasonspan.runtime.toolcalls.apertus_calls import parse_apertus
from reasonspan.runtime.toolcalls.partial_apertus import ApertusCallsReader
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

TOK = tokenizer(FAMILY_TOKENIZERS["apertus"])
PROMPT = TOK.encode("<|user_start|>Write it.<|user_end|><|assistant_start|>")
START, END = "<|tools_prefix|>", "<|tools_suffix|>"


def parser() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("apertus", TOK)


def item(name: str, args: Any) -> str:
    """One call as the template writes it (arguments as JSON text)."""
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return '{"' + name + '": ' + text + "}"


def body(calls: list[Call], alone: bool = False) -> str:
    items = [item(name, args) for name, args in calls]
    return items[0] if alone else "[" + ", ".join(items) + "]"


def test_a_long_argument_streams_in_many_pieces() -> None:
    """A 5,000-token file after the first argument, in a list (after a reasoning block, as
    the model writes it) and as one object: many pieces, joined to the whole read."""
    calls: list[Call] = [
        ("write_file", {"path": "steps.py", "content": CODE}),
        ("get_weather", {"city": "Bern", "days": 2}),
    ]
    for out in (
        "<|inner_prefix|>Plan.<|inner_suffix|>" + START + body(calls) + END,
        START + body(calls[:1], alone=True) + END + "Done.",
    ):
        ids = TOK.encode(out)
        expected = want(calls if out.startswith("<|inner") else calls[:1])
        entries = joins_whole(ids, PROMPT, parser, expected, list(range(0, len(ids), 3)))
        assert pieces(entries, 0) >= 10
        assert len(entries[0][0].function.arguments or "") < 200  # sent as it came


def test_arguments_not_followed_are_sent_whole() -> None:
    """Arguments as a JSON string or ``null`` (the whole read takes both): that call is
    sent whole when the region closes, and so is every call after it."""
    calls = [
        item("get_weather", json.dumps(json.dumps({"city": "Bern"}))),
        item("write_file", "null"),
        item("write_file", {"path": "a.py", "content": CODE[:2000]}),
    ]
    ids = TOK.encode(START + "[" + ", ".join(calls) + "]" + END)
    expected = [
        ("get_weather", compact({"city": "Bern"})),
        ("write_file", "{}"),
        ("write_file", compact({"path": "a.py", "content": CODE[:2000]})),
    ]
    entries = joins_whole(ids, PROMPT, parser, expected, list(range(0, len(ids), 2)), 1)
    assert [pieces(entries, i) for i in range(3)] == [1, 1, 1]


def test_a_call_whose_first_argument_does_not_read_is_never_sent() -> None:
    """``1e999`` (JSON cannot hold it) in the first argument: the call never starts, its
    long second argument included; its sibling is sent."""
    bad = '{"write_file": {"mode": 1e999, "content": ' + json.dumps(CODE[:2000]) + "}}"
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    ids = TOK.encode(START + "[" + bad + ", " + item(*sibling) + "]" + END)
    entries = joins_whole(ids, PROMPT, parser, want([sibling]), list(range(len(ids))), 1)
    assert all(e.function.name != "write_file" for chunk in entries for e in chunk if e.function)


def test_a_call_broken_after_it_was_sent_is_listed_broken() -> None:
    """A value JSON cannot hold after a streamed argument: the whole read drops that call
    and keeps its sibling; the stream reports it broken and never closes its arguments."""
    sent = '{"write_file": {"path": "a.py", "content": ' + json.dumps(CODE[:2000])
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    ids = TOK.encode(START + "[" + sent + ', "mode": 1e999}}, ' + item(*sibling) + "]" + END)
    whole = parser().parse(ids, PROMPT, tools=TOOLS, finish_reason="stop")
    assert [(c.name, c.arguments) for c in whole.tool_calls] == want([sibling])
    content = broken_first(ids, PROMPT, parser, sibling)
    assert content == (whole.content or "")


CALLS = calls_strategy('ab "\\\n東🙂{}[]:,<|')


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, alone=st.booleans(), data=st.data())
def test_entries_join_to_the_whole_read_at_any_split(
    calls: list[Call], alone: bool, data: st.DataObject
) -> None:
    """One to three calls (one alone as an object, or a list): at any split and read step
    the entries join to ``parse()``'s calls, which are the calls written."""
    alone = alone and len(calls) == 1
    ids = TOK.encode(START + body(calls, alone) + END)
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    step = data.draw(st.sampled_from([1, 3, 16]))
    joins_whole(ids, PROMPT, parser, want(calls), cuts, step)


@settings(max_examples=100, deadline=None)
@given(calls=CALLS, data=st.data())
def test_reader_at_any_character_split(calls: list[Call], data: st.DataObject) -> None:
    """The reader fed 1-5 characters at a time: each call it reports is whole, not
    broken, and is the whole read's call."""
    text = body(calls)
    expected = parse_apertus(text, as_tools(TOOLS)) or []
    assert [(c.name, c.arguments) for c in expected] == want(calls)
    assert fed_in_pieces(ApertusCallsReader(as_tools(TOOLS)), text, data) == want(calls)
