"""What the streamed-argument tests of the Python-call, Apertus, Cohere and DSML kinds
share (``tests/toolcalls/test_streamed_*.py``): the calls a property writes, the
``(name, arguments)`` pairs expected of them, and a partial reader fed a few characters at
a time (a tokenizer may cut any marker or escape anywhere)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from reasonspan.runtime.toolcalls.partial import PartialReader

Call = tuple[str, dict[str, Any]]


def calls_strategy(alphabet: str) -> st.SearchStrategy[list[Call]]:
    """One to three calls of the test tools (``write_file`` / ``get_weather``): a string
    ``path`` first, then up to two of ``content`` / ``mode`` / ``days`` holding strings of
    ``alphabet``, numbers, booleans, None, and lists and objects of them."""
    text = st.text(alphabet, max_size=12)
    value = st.recursive(
        st.one_of(text, st.integers(-99, 99), st.booleans(), st.none()),
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.text("ab", max_size=2), inner, max_size=2),
        ),
        max_leaves=5,
    )
    more = st.dictionaries(st.sampled_from(["content", "mode", "days"]), value, max_size=2)
    args = st.fixed_dictionaries({"path": text}).flatmap(
        lambda first: more.map(lambda rest: {**first, **rest})
    )
    name = st.sampled_from(["write_file", "get_weather"])
    return st.lists(st.tuples(name, args), min_size=1, max_size=3)


def compact(args: dict[str, Any]) -> str:
    """Arguments as the compact JSON ``dump_arguments`` writes (for the values the tests
    write: strings, integers, booleans, None, lists and objects)."""
    return json.dumps(args, ensure_ascii=False, separators=(",", ":"))


def want(calls: list[Call]) -> list[tuple[str, str]]:
    """The calls as a client joins them."""
    return [(name, compact(args)) for name, args in calls]


def fed_in_pieces(reader: PartialReader, text: str, data: st.DataObject) -> list[tuple[str, str]]:
    """``reader`` fed ``text`` 1-5 characters at a time: the calls it reports, each checked
    whole and not broken."""
    i = 0
    while i < len(text):
        k = data.draw(st.integers(1, 5))
        reader.feed(text[i : i + k])
        i += k
    assert all(c.complete and not c.broken for c in reader.calls)
    return [(c.name, "".join(c.arguments)) for c in reader.calls]
