"""Streamed arguments of Tencent Hy3 / Hy4's key/value calls (kind ``hunyuan``,
``<tool_calls{S}>`` … ``</tool_calls{S}>``; ``runtime/toolcalls/partial_hunyuan.py``).

On Hy3's and Hy4's fixture tokenizers (their suffixed tags one token each), the calls
written as the family tests write them (``tests/families/test_hy_v3.py`` /
``test_hy_v4.py``: Hy3 with ``<tool_sep{S}>`` and a newline between the parts, Hy4 with
neither; values raw): for every split of the output into engine steps, the entries a
client joins by index are exactly ``parse()``'s calls. Values are raw text typed from the
schema, so the property tests compare with ``parse()`` and check that it read every call
written (the families' tests check its typing).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.tool_types import as_tools
from reasonspan.runtime.toolcalls.hunyuan_calls import parse_hunyuan
from reasonspan.runtime.toolcalls.partial_hunyuan import HunyuanCallsReader
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.streamed_calls import (
    CODE,
    TOOLS,
    Call,
    broken_first,
    calls_strategy,
    fed_in_pieces,
    joined,
    pieces,
    run,
    want,
)
from tests.support.streamed_calls import streams_as_whole as joins_whole

CALLS = calls_strategy('ab "\\\n東🙂{}[]:,<|/')


class Family:
    """A Hy family: its tokenizer, prompt, suffix and layout."""

    def __init__(self, name: str, suffix: str, sep: bool, layout: str, kwargs: dict[str, Any]):
        self.name, self.s, self.layout, self.kwargs = name, suffix, layout, kwargs
        self.sep = f"<tool_sep{suffix}>" if sep else ""
        self.tok = tokenizer(FAMILY_TOKENIZERS[name])
        self.prompt = self.tok.encode(f"<think{suffix}>")
        self.plan = f"I will write the file.</think{suffix}>"

    def make(self) -> reasonspan.ReasoningParser:
        return reasonspan.create_parser_sync(self.name, self.tok, self.kwargs)

    def entry(self, name: str, args: dict[str, Any], between: str = "") -> str:
        """One call as the family's tests write it; ``between``: text after its first
        pair."""
        s, lay = self.s, self.layout
        pairs = [
            f"<arg_key{s}>{k}</arg_key{s}>{lay}<arg_value{s}>"
            f"{v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
            f"</arg_value{s}>{lay}"
            for k, v in args.items()
        ]
        return (
            f"<tool_call{s}>{name}{self.sep}{lay}"
            + "".join(pairs[:1])
            + between
            + "".join(pairs[1:])
            + f"</tool_call{s}>"
        )

    def body(self, *entries: str) -> str:
        return self.layout + self.layout.join(entries) + self.layout

    def ids(self, *entries: str) -> list[int]:
        s = self.s
        return self.tok.encode(f"{self.plan}<tool_calls{s}>{self.body(*entries)}</tool_calls{s}>")

    def whole(self, ids: list[int]) -> list[tuple[str, str]]:
        got = self.make().parse(ids, self.prompt, tools=TOOLS, finish_reason="stop")
        return [(c.name, c.arguments) for c in got.tool_calls]


V3 = Family("hy_v3", ":opensource", True, "\n", {"reasoning_effort": "high"})
V4 = Family("hy_v4", ":6124c78e", False, "", {})
FAMILIES = [V3, V4]


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_a_long_argument_streams_in_many_pieces(fam: Family) -> None:
    """A 5,000-token file after the first argument (its own end tag written inside it, not
    followed by a key): many pieces, long before the call closes, joined to the whole
    read; a call with no argument after it."""
    content = CODE + f"</arg_value{fam.s}> and <arg_val"
    calls: list[Call] = [
        ("write_file", {"path": "steps.py", "content": content}),
        ("get_weather", {"city": "Bern", "days": [1, 2]}),
        ("get_weather", {}),
    ]
    ids = fam.ids(*(fam.entry(*c) for c in calls))
    entries = joins_whole(ids, fam.prompt, fam.make, want(calls), list(range(0, len(ids), 3)))
    assert pieces(entries, 0) >= 10
    assert len(entries[0][0].function.arguments or "") < 200  # sent as it came


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_a_bad_first_argument_is_never_sent(fam: Family) -> None:
    """``1e999`` as the first value (an integer property; JSON cannot hold it): the whole
    read drops the call and keeps its sibling; the stream never starts it, its long second
    argument included."""
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    bad = fam.entry("write_file", {"mode": "1e999", "content": CODE[:2000]})
    ids = fam.ids(bad, fam.entry(*sibling))
    entries = joins_whole(ids, fam.prompt, fam.make, want([sibling]), list(range(len(ids))), 1)
    assert all(e.function.name != "write_file" for chunk in entries for e in chunk if e.function)


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_a_call_broken_after_it_was_sent_is_listed_broken(fam: Family) -> None:
    """``1e999`` (an integer property) after a streamed argument: the whole read drops the
    call (JSON cannot hold it) and keeps its sibling; the stream reports it broken, never
    closes its arguments, and streams the sibling."""
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    bad = fam.entry("write_file", {"path": "a.py", "content": CODE[:2000], "mode": "1e999"})
    ids = fam.ids(bad, fam.entry(*sibling))
    assert fam.whole(ids) == want([sibling])
    broken_first(ids, fam.prompt, fam.make, sibling, '{"path":"a.py","content":"def step_0')


def test_a_repeated_key_is_left_to_the_whole_read() -> None:
    """A key written again after a streamed one: the whole read keeps the last value in
    the first one's place, which the stream cannot take back: the streamed call is broken,
    never closed, and the whole read's calls (that one with its last value, its sibling)
    are sent whole after it."""
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    s = V3.s
    first = V3.entry("write_file", {"path": "a.py", "content": CODE[:2000]})
    pair = f"<arg_key{s}>path</arg_key{s}>\n<arg_value{s}>b.py</arg_value{s}>\n"
    again = first.replace(f"</tool_call{s}>", pair + f"</tool_call{s}>")
    ids = V3.ids(again, V3.entry(*sibling))
    got = V3.whole(ids)
    assert got[0][1].startswith('{"path":"b.py"') and got[1:] == want([sibling])
    _, entries, writer, _ = run(ids, list(range(0, len(ids), 3)), prompt=V3.prompt,
                                make=V3.make, step=4)  # fmt: skip
    calls = joined(entries)
    assert writer.broken == [0] and calls[1:] == got
    assert calls[0][1].startswith('{"path":"a.py"') and not calls[0][1].endswith("}")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, data=st.data())
def test_entries_join_to_the_whole_read_at_any_split(
    calls: list[Call], data: st.DataObject
) -> None:
    """One to three calls with strings, numbers, nested values: at any split and read step
    the entries join to ``parse()``'s calls, which read every call written."""
    fam = data.draw(st.sampled_from(FAMILIES))
    ids = fam.ids(*(fam.entry(*c) for c in calls))
    expected = fam.whole(ids)
    assert [name for name, _ in expected] == [name for name, _ in calls]
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    step = data.draw(st.sampled_from([1, 3, 16]))
    joins_whole(ids, fam.prompt, fam.make, expected, cuts, step)


@settings(max_examples=100, deadline=None)
@given(calls=CALLS, fam=st.sampled_from(FAMILIES), data=st.data())
def test_reader_at_any_character_split(calls: list[Call], fam: Family, data: st.DataObject) -> None:
    """The reader fed 1-5 characters at a time (a tokenizer may cut a tag anywhere): each
    call it reports is whole, not broken, and is the whole read's call."""
    text = fam.body(*(fam.entry(*c) for c in calls))
    tools = as_tools(TOOLS)
    expected = [(c.name, c.arguments) for c in parse_hunyuan(text, tools) or []]
    assert [name for name, _ in expected] == [name for name, _ in calls]
    assert fed_in_pieces(HunyuanCallsReader(tools), text, data) == expected
