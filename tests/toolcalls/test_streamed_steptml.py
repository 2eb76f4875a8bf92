"""Streamed arguments of Step-3's StepTML section (kind ``steptml``;
``runtime/toolcalls/partial_steptml.py``).

On the family's fixture tokenizer (DeepSeek V3.1's with Step-3's markers added), the calls
written as the engines' test payloads lay them out (:func:`entry`: strings raw, other
values JSON, each value padded with whitespace the reader strips): for every split of the
output into engine steps, the entries a client joins by index are exactly ``parse()``'s
calls, which are the calls the test wrote (built from the values, never read back from an
output). The values are ones the schema typing keeps: strings for ``path`` / ``content``
/ ``city`` (declared strings, written without edge whitespace), integers for ``mode``,
JSON values other than strings for ``days`` (declared with no type).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.tool_types import as_tools
from reasonspan.runtime.toolcalls.partial_steptml import StepTmlCallsReader
from reasonspan.runtime.toolcalls.steptml_calls import parse_steptml
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.streamed_calls import CODE, TOOLS, Call, fed_in_pieces, joined, pieces, run, want
from tests.support.streamed_calls import streams_as_whole as joins_whole

TOK = tokenizer(FAMILY_TOKENIZERS["step3"])
PROMPT = TOK.encode("<|BOT|>user\nWrite it.<|EOT|><|BOT|>assistant\n<think>\n")
BEFORE = "Plan.</think>"
OPEN, CLOSE = "<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"
BEGIN, END_CALL, SEP = "<｜tool_call_begin｜>", "<｜tool_call_end｜>", "<｜tool_sep｜>"

TEXT = st.text('ab "\\\n東🙂{}[]:,<|>/', max_size=12).map(str.strip)
JSON = st.recursive(
    st.one_of(st.integers(-99, 99), st.booleans(), st.none()),
    lambda inner: st.one_of(
        st.lists(st.one_of(inner, TEXT), max_size=3),
        st.dictionaries(st.text("ab", max_size=2), st.one_of(inner, TEXT), max_size=2),
    ),
    max_leaves=5,
)
WRITE = st.fixed_dictionaries({"path": TEXT}, optional={"content": TEXT, "mode": st.integers()})
WEATHER = st.dictionaries(st.sampled_from(["city", "days"]), st.one_of(TEXT, JSON)).filter(
    lambda a: isinstance(a.get("city", ""), str) and not isinstance(a.get("days"), str)
)
CALLS = st.lists(
    st.one_of(st.tuples(st.just("write_file"), WRITE), st.tuples(st.just("get_weather"), WEATHER)),
    min_size=1,
    max_size=3,
)
PAD = st.sampled_from(["", " ", "\n", " \n  "])


def raw(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def entry(name: str, args: dict[str, Any], pad: str = "") -> str:
    """One call of the section, each value written between ``pad`` and ``pad``."""
    params = "".join(
        f'<steptml:parameter name="{k}">{pad}{raw(v)}{pad}</steptml:parameter>\n'
        for k, v in args.items()
    )
    return (
        f'{BEGIN}function{SEP}<steptml:invoke name="{name}">\n{params}</steptml:invoke>{END_CALL}'
    )


def body(calls: list[Call], pad: str = "") -> str:
    return "\n" + "\n".join(entry(n, a, pad) for n, a in calls) + "\n"


def make() -> reasonspan.ReasoningParser:
    return reasonspan.create_parser_sync("step3", TOK)


def ids_of(section_body: str) -> list[int]:
    return TOK.encode(f"{BEFORE}{OPEN}{section_body}{CLOSE}")


def test_a_long_argument_streams_in_many_pieces() -> None:
    """A 5,000-token file after the first parameter (padded, holding a closer not
    followed by a parameter, which is text): many pieces, long before the call closes,
    joined to the whole read; a call with no parameter after it is sent too."""
    content = CODE + '</steptml:parameter>x <steptml:parameter name="a" </steptml:invoke'
    calls: list[Call] = [
        ("write_file", {"path": "steps.py", "content": content.strip()}),
        ("get_weather", {"city": "Bern", "days": [1, 2]}),
        ("get_weather", {}),
    ]
    ids = ids_of(body(calls, " \n"))
    entries = joins_whole(ids, PROMPT, make, want(calls), list(range(0, len(ids), 3)))
    assert pieces(entries, 0) >= 10
    assert len(entries[0][0].function.arguments or "") < 200  # sent as it came


def test_a_bad_first_value_is_never_sent() -> None:
    """``1e999`` as the first value (JSON cannot hold it): the whole read drops the call
    and keeps its sibling; the stream never starts the call, its long second value
    included, and sends the sibling."""
    bad = {"mode": "1e999", "content": "x = 1\n" * 600}
    sibling: Call = ("get_weather", {"city": "Bern"})
    ids = ids_of(body([("write_file", bad), sibling]))
    _, entries, writer, _ = run(ids, list(range(len(ids))), prompt=PROMPT, make=make,
                                      step=1)  # fmt: skip
    assert joined(entries) == want([sibling]) and writer.broken == []
    joins_whole(ids, PROMPT, make, want([sibling]), list(range(0, len(ids), 5)), 1)


def test_a_call_broken_after_it_was_sent_is_listed_broken() -> None:
    """A value JSON cannot hold after a streamed one: the whole read drops the call (its
    sibling stays); the stream reports it broken, never closes its arguments, and sends
    the sibling."""
    bad = {"path": "a.py", "content": "x = 1\n" * 600, "mode": "1e999"}
    sibling: Call = ("get_weather", {"city": "Bern"})
    ids = ids_of(body([("write_file", bad), sibling]))
    whole = make().parse(ids, PROMPT, tools=TOOLS, finish_reason="stop")
    assert [(c.name, c.arguments) for c in whole.tool_calls] == want([sibling])
    content, entries, writer, _ = run(ids, list(range(0, len(ids), 3)), prompt=PROMPT,
                                      make=make, step=4)  # fmt: skip
    [(name, arguments), got_sibling] = joined(entries)
    assert writer.broken == [0] and name == "write_file" and got_sibling == want([sibling])[0]
    assert arguments.startswith('{"path":"a.py","content":"x = 1\\n')
    assert not arguments.endswith("}")
    assert pieces(entries, 0) >= 10 and content == (whole.content or "")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, pad=PAD, data=st.data())
def test_entries_join_to_the_whole_read_at_any_split(
    calls: list[Call], pad: str, data: st.DataObject
) -> None:
    """One to three calls (strings raw, other values JSON): at any split and read step the
    entries join to ``parse()``'s calls, which are the calls written."""
    ids = ids_of(body(calls, pad))
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    step = data.draw(st.sampled_from([1, 3, 16]))
    joins_whole(ids, PROMPT, make, want(calls), cuts, step)


@settings(max_examples=100, deadline=None)
@given(calls=CALLS, pad=PAD, data=st.data())
def test_reader_at_any_character_split(calls: list[Call], pad: str, data: st.DataObject) -> None:
    """The reader fed 1-5 characters at a time (a tokenizer may cut a closer anywhere):
    each call it reports is whole, not broken, and is the whole read's call."""
    text = body(calls, pad)
    tools = as_tools(TOOLS)
    expected = parse_steptml(text, tools) or []
    assert [(c.name, c.arguments) for c in expected] == want(calls)
    assert fed_in_pieces(StepTmlCallsReader(tools), text, data) == want(calls)


def test_a_value_nested_past_the_recursion_limit_breaks_the_call() -> None:
    """JSON nested deeper than Python's recursion limit (``days``: no type, read as
    JSON): the reader never raises, and reports the committed call broken."""
    deep = "[" * 100_000 + "]" * 100_000
    text = body([("get_weather", {"city": "Bern", "days": deep})])
    reader = StepTmlCallsReader(as_tools(TOOLS))
    reader.feed(text)
    [call] = reader.calls
    assert call.broken and "".join(call.arguments) == '{"city":"Bern"'
