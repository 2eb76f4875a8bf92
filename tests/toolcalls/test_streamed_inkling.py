"""Streamed arguments of Inkling's JSON tool invocations (kind ``inkling``,
``<|content_invoke_tool_json|>{"name": NAME, "args": {…}}<|end_message|>``;
``runtime/toolcalls/partial_inkling.py``).

On Inkling's fixture tokenizer, each call in its own model message as vLLM's tests write
them (``tests/families/test_inkling.py``): for every split of the output into engine steps,
the entries a client joins by index are exactly ``parse()``'s calls, which are the calls
the test wrote (built from the values, never read back from an output).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.tool_types import as_tools
from reasonspan.runtime.toolcalls.inkling_calls import parse_inkling
from reasonspan.runtime.toolcalls.partial_inkling import InklingCallsReader
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.streamed_calls import (
    CODE,
    TOOLS,
    Call,
    calls_strategy,
    fed_in_pieces,
    joined,
    pieces,
    run,
    want,
)
from tests.support.streamed_calls import streams_as_whole as joins_whole

TOK = tokenizer(FAMILY_TOKENIZERS["inkling"])
PROMPT = TOK.encode("<|message_user|>Write it.<|end_message|><|message_model|>")
INVOKE, END = "<|content_invoke_tool_json|>", "<|end_message|>"
CALLS = calls_strategy('ab "\\\n東🙂{}[]:,<|')


def make() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("inkling", TOK, {})


def payload(name: str, args: Any, key: str = "args") -> str:
    text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return f'{{"name": "{name}", "{key}": {text}}}'


def output(*payloads: str) -> list[int]:
    """Each call in its own model message."""
    return TOK.encode(f"{END}<|message_model|>".join(INVOKE + p for p in payloads) + END)


def whole(ids: list[int]) -> list[tuple[str, str]]:
    got = make().parse(ids, PROMPT, tools=TOOLS, finish_reason="stop")
    return [(c.name, c.arguments) for c in got.tool_calls]


def test_a_long_argument_streams_in_many_pieces() -> None:
    """A 5,000-token file after the first argument: many pieces, long before the message
    ends, joined to the whole read; a call with ``arguments`` in the next message."""
    calls: list[Call] = [
        ("write_file", {"path": "steps.py", "content": CODE}),
        ("get_weather", {"city": "Bern", "days": [1, 2]}),
    ]
    ids = output(payload(*calls[0]), payload(*calls[1], key="arguments"))
    entries = joins_whole(ids, PROMPT, make, want(calls), list(range(0, len(ids), 3)))
    assert pieces(entries, 0) >= 10
    assert len(entries[0][0].function.arguments or "") < 200  # sent as it came


def test_a_bad_first_argument_is_never_sent() -> None:
    """``1e999`` first (JSON cannot hold it): the whole read has no call in that message,
    and the stream never starts it; the next message's call is sent."""
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    bad = '{"mode": 1e999, "content": ' + json.dumps(CODE[:2000]) + "}"
    ids = output(payload("write_file", bad), payload(*sibling))
    whole = make().parse(ids, PROMPT, tools=TOOLS, finish_reason="stop")
    assert [(c.name, c.arguments) for c in whole.tool_calls] == want([sibling])
    content, entries, writer, _ = run(ids, list(range(len(ids))), prompt=PROMPT, make=make,
                                      step=1)  # fmt: skip
    assert joined(entries) == want([sibling]) and writer.broken == []
    assert content == (whole.content or "")


def test_keys_the_whole_read_does_not_take_are_not_followed() -> None:
    """``arguments`` after ``args`` means nothing (the whole read takes ``args`` first): the
    streamed call joins to the whole read's (read every token, so the key is seen before
    the message ends)."""
    args = {"path": "a.py", "content": CODE[:2000]}
    text = payload("write_file", args)[:-1] + ', "arguments": {"path": "b.py"}}'
    ids = output(text)
    entries = joins_whole(ids, PROMPT, make, want([("write_file", args)]), list(range(len(ids))), 1)
    assert pieces(entries, 0) >= 10


def test_a_call_broken_after_it_was_sent_is_listed_broken() -> None:
    """``args`` written after streamed ``arguments`` (the whole read takes ``args``) and
    ``1e999`` after a streamed argument: each call is reported broken, its arguments never
    closed."""
    args = {"path": "a.py", "content": CODE[:2000]}
    again = payload("write_file", args, key="arguments")[:-1] + ', "args": {"path": "b.py"}}'
    bad = payload("write_file", json.dumps(args)[:-1] + ', "mode": 1e999}')
    for text in (again, bad):
        ids = output(text)
        _, entries, writer, _ = run(ids, list(range(0, len(ids), 3)), prompt=PROMPT,
                                    make=make, step=4)  # fmt: skip
        (name, arguments), *rest = joined(entries)
        assert writer.broken == [0] and name == "write_file"
        assert rest == [c for c in whole(ids) if c[1].startswith('{"path":"b.py"')]
        assert arguments.startswith('{"path":"a.py","content":"def step_0')
        assert not arguments.endswith("}") and pieces(entries, 0) >= 10


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, data=st.data())
def test_entries_join_to_the_whole_read_at_any_split(
    calls: list[Call], data: st.DataObject
) -> None:
    """One to three calls, each in its own message, with strings, numbers, nested values:
    at any split and read step the entries join to ``parse()``'s calls, which are the calls
    written."""
    ids = output(*(payload(*c) for c in calls))
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    step = data.draw(st.sampled_from([1, 3, 16]))
    joins_whole(ids, PROMPT, make, want(calls), cuts, step)


@settings(max_examples=100, deadline=None)
@given(calls=CALLS, key=st.sampled_from(["args", "arguments", "parameters"]), data=st.data())
def test_reader_at_any_character_split(calls: list[Call], key: str, data: st.DataObject) -> None:
    """The reader fed 1-5 characters at a time (a body is one call): the call it reports
    is whole, not broken, and is the whole read's call."""
    text = payload(*calls[0], key=key)
    expected = parse_inkling(text, as_tools(TOOLS)) or []
    assert [(c.name, c.arguments) for c in expected] == want(calls[:1])
    assert fed_in_pieces(InklingCallsReader(as_tools(TOOLS)), text, data) == want(calls[:1])
