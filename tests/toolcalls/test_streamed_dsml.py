"""Streamed arguments of DeepSeek's DSML invokes (kind ``dsml``: V3.2's
``<｜DSML｜function_calls>``, V4's ``<｜DSML｜tool_calls>``, V4.1's spaced ``<｜DSML｜ calls>``;
``runtime/toolcalls/partial_dsml.py``).

On DeepSeek V4's and V3.1's real tokenizers (the DSML markers are several tokens), the
calls written as DeepSeek's encoder writes them (``tests.support.section_calls.dsml``:
strings raw with ``string="true"``, other values JSON with ``string="false"``): for every
split of the output into engine steps, the entries a client joins by index are exactly
``parse()``'s calls, which are the calls the test wrote (built from the values, never read
back from an output).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.tool_types import as_tools
from reasonspan.runtime.toolcalls.dsml_calls import parse_dsml
from reasonspan.runtime.toolcalls.partial_dsml import DsmlCallsReader
from tests.support.fixtures import tokenizer
from tests.support.section_calls import DS_PROMPT, dsml
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

CALLS = calls_strategy('ab "\\\n東🙂{}[]:,<|')


class Family:
    """A DSML family: its parser, prompt, block and spelling."""

    def __init__(self, name: str, tok: str, prompt: str, before: str, block: str, space: str):
        self.name = name
        self.tok = tokenizer(tok)
        self.prompt = self.tok.encode(prompt)
        self.before = before
        self.render: Callable[[list[Call]], str] = dsml(block, space)
        self.space = space

    def make(self) -> reasonspan.ReasoningParser:
        return reasonspan.create_parser_sync(self.name, self.tok)

    def ids(self, calls: list[Call]) -> list[int]:
        return self.tok.encode(self.before + self.render(calls))

    def raw(self, block: str) -> list[int]:
        """A block written by hand, ``{t}`` standing for the DSML token."""
        tag = "tool_calls" if self.name == "deepseek_v4" else "function_calls"
        if self.space:
            tag = "calls"
        t = "｜DSML｜" + self.space
        return self.tok.encode(f"{self.before}\n\n<{t}{tag}>\n{block.format(t=t)}\n</{t}{tag}>")


V4 = Family("deepseek_v4", "deepseek-v4", DS_PROMPT + "<think>", "Plan.</think>", "tool_calls", "")
V41 = Family("deepseek_v41", "deepseek-v4", DS_PROMPT + "<think>", "Plan.</think>", "calls", " ")
V32 = Family("deepseek_v3", "deepseek-v3.1", DS_PROMPT + "</think>", "", "function_calls", "")
FAMILIES = [V4, V41, V32]


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_a_long_argument_streams_in_many_pieces(fam: Family) -> None:
    """A 5,000-token file (its ``<`` and quotes raw) after the first parameter: many
    pieces, long before the invoke closes, joined to the whole read; a call with no
    parameter after it is sent too."""
    calls: list[Call] = [
        ("write_file", {"path": "steps.py", "content": CODE + "<｜DSML｜ <b> </｜DSML｜param"}),
        ("get_weather", {"city": "Bern", "days": [1, 2]}),
        ("get_weather", {}),
    ]
    ids = fam.ids(calls)
    entries = joins_whole(ids, fam.prompt, fam.make, want(calls), list(range(0, len(ids), 3)))
    assert pieces(entries, 0) >= 10
    assert len(entries[0][0].function.arguments or "") < 200  # sent as it came


def test_a_self_closed_invoke_is_a_call() -> None:
    """``<｜DSML｜invoke name="x"/>`` (no parameters) between streamed calls."""
    args = {"path": "a.py", "content": CODE[:3000]}
    block = (
        '<{t}invoke name="write_file">\n<{t}parameter name="path" string="true">a.py'
        "</{t}parameter>\n"
        '<{t}parameter name="content" string="true">' + CODE[:3000].replace("{", "{{").replace(
            "}", "}}"
        ) + "</{t}parameter>\n</{t}invoke>\n"
        '<{t}invoke name="get_weather"/>'
    )  # fmt: skip
    ids = V4.raw(block)
    expected = [("write_file", compact(args)), ("get_weather", "{}")]
    entries = joins_whole(ids, V4.prompt, V4.make, expected, list(range(0, len(ids), 2)), 1)
    assert pieces(entries, 0) >= 10


@pytest.mark.parametrize("fam", [V4, V41], ids=lambda f: f.name)
def test_a_bad_first_value_is_never_sent(fam: Family) -> None:
    """``1e999`` as the first value: the whole read refuses the block (JSON cannot hold
    it), and the stream never starts the call, its long second value included."""
    block = (
        '<{t}invoke name="write_file">\n<{t}parameter name="mode" string="false">1e999'
        '</{t}parameter>\n<{t}parameter name="content" string="true">'
        + "x = 1\n" * 600
        + "</{t}parameter>\n</{t}invoke>"
    )
    ids = fam.raw(block)
    whole = fam.make().parse(ids, fam.prompt, tools=TOOLS, finish_reason="stop")
    assert whole.tool_calls == []
    content, entries, writer, _ = run(ids, list(range(len(ids))), prompt=fam.prompt,
                                      make=fam.make, step=1)  # fmt: skip
    assert entries == [] and writer.broken == [] and content == (whole.content or "")


@pytest.mark.parametrize("fam", [V4, V41], ids=lambda f: f.name)
def test_a_call_broken_after_it_was_sent_is_listed_broken(fam: Family) -> None:
    """A parameter repeated after a streamed one: the whole read refuses the block (it
    is the content); the stream reports the call broken and never closes its arguments."""
    block = (
        '<{t}invoke name="write_file">\n<{t}parameter name="path" string="true">a.py'
        '</{t}parameter>\n<{t}parameter name="content" string="true">'
        + "x = 1\n"
        * 600
        + '</{t}parameter>\n<{t}parameter name="path" string="true">b.py</{t}parameter>\n'
        "</{t}invoke>"
    )
    ids = fam.raw(block)
    whole = fam.make().parse(ids, fam.prompt, tools=TOOLS, finish_reason="stop")
    assert whole.tool_calls == []
    content, entries, writer, _ = run(ids, list(range(0, len(ids), 3)), prompt=fam.prompt,
                                      make=fam.make, step=4)  # fmt: skip
    [(name, arguments)] = joined(entries)
    assert writer.broken == [0] and name == "write_file"
    assert arguments.startswith('{"path":"a.py","content":"x = 1\\n') and not arguments.endswith(
        "}"
    )
    assert pieces(entries, 0) >= 10 and content == (whole.content or "")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, data=st.data())
def test_entries_join_to_the_whole_read_at_any_split(
    calls: list[Call], data: st.DataObject
) -> None:
    """One to three calls (strings raw, other values JSON): at any split and read step the
    entries join to ``parse()``'s calls, which are the calls written."""
    fam = data.draw(st.sampled_from(FAMILIES))
    ids = fam.ids(calls)
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    step = data.draw(st.sampled_from([1, 3, 16]))
    joins_whole(ids, fam.prompt, fam.make, want(calls), cuts, step)


@settings(max_examples=100, deadline=None)
@given(calls=CALLS, space=st.sampled_from(["", " "]), data=st.data())
def test_reader_at_any_character_split(calls: list[Call], space: str, data: st.DataObject) -> None:
    """The reader fed 1-5 characters at a time (a tokenizer may cut a closer anywhere):
    each call it reports is whole, not broken, and is the whole read's call."""
    block = dsml("tool_calls", space)(calls)
    t = "｜DSML｜" + space
    text = block.removeprefix(f"\n\n<{t}tool_calls>").removesuffix(f"</{t}tool_calls>")
    tools = as_tools(TOOLS)
    expected = parse_dsml(text, tools) or []
    assert [(c.name, c.arguments) for c in expected] == want(calls)
    assert fed_in_pieces(DsmlCallsReader(tools), text, data) == want(calls)


def test_a_value_nested_past_the_recursion_limit_breaks_the_call() -> None:
    """A ``string="false"`` value nested deeper than Python's recursion limit: the whole
    read raises and reads nothing; the reader never raises: it stops reading there and
    leaves the call unclosed, for the whole read to judge at the region's close (where
    the runtime reports it broken: ``region_calls.py``), as for a value JSON cannot
    hold."""
    deep = "[" * 100_000 + "]" * 100_000
    t = "｜DSML｜"
    text = (
        f'<{t}invoke name="get_weather">\n'
        f'<{t}parameter name="city" string="true">Bern</{t}parameter>\n'
        f'<{t}parameter name="days" string="false">{deep}</{t}parameter>\n'
        f"</{t}invoke>"
    )
    reader = DsmlCallsReader(as_tools(TOOLS))
    reader.feed(text)
    [call] = reader.calls
    assert reader.done and not call.complete
    assert "".join(call.arguments) == '{"city":"Bern"'
