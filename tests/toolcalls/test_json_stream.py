"""The JSON lexer of streamed arguments (``runtime/toolcalls/json_stream.py``) at any
character split, in every way a model may escape a string.

A value string's run of canonical text (the escapes msgspec writes: ``\\"``, ``\\\\``,
``\\n`` …) is taken as its own piece; anything else (``\\u`` escapes, ``\\/``, a cut escape)
is decoded and encoded again. Both must give the text
:func:`~reasonspan.runtime.core.tool_types.dump_arguments` writes for what Python's
``json`` reads, whatever the model's spelling, wherever the text is cut, and must refuse
what ``json`` refuses. The expected text is computed by ``json`` and ``dump_arguments``
from the value the test wrote, never read back from the lexer.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reasonspan.runtime.core.tool_types import dump_arguments
from reasonspan.runtime.toolcalls.json_stream import FAIL, JsonTokens
from reasonspan.runtime.toolcalls.partial_args import CLOSED, FAILED, ArgumentWriter
from reasonspan.runtime.toolcalls.partial_json import JsonCallsReader

# Text with what is escaped in JSON (quotes, backslashes, every control character),
# non-ASCII, and characters outside the BMP (a surrogate pair when written as \u escapes).
TEXT = st.text(st.sampled_from('ab "\\/\n\t\r\b\f\x00\x1f\x7fé€😀'), max_size=12) | st.text(
    st.characters(blacklist_categories=("Cs",)), max_size=8
)
VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
ARGS = st.dictionaries(TEXT, TEXT | VALUE, min_size=1, max_size=3)
"""Arguments: strings first (the lexer's fast path is a value string's run)."""


def _slash_escaped(text: str) -> str:
    """``json.dumps`` text with every ``/`` inside strings written ``\\/`` (as PHP and
    some models write it): a ``/`` in JSON text outside a string is not valid anyway."""
    return re.sub(r"(?<!\\)((?:\\\\)*)/", r"\1\\/", text)


def _spelled(args: dict[str, Any], style: int) -> str:
    """The arguments as a model may write them: ``json.dumps`` with non-ASCII kept (0) or
    escaped (1), with ``/`` escaped too (2), or with spaces (3)."""
    if style == 0:
        return json.dumps(args, ensure_ascii=False)
    if style == 1:
        return json.dumps(args)
    if style == 2:
        return _slash_escaped(json.dumps(args))
    return json.dumps(args, ensure_ascii=False, indent=1)


def _written(text: str, cuts: list[int]) -> tuple[str, bool]:
    """``text`` fed to a lexer and an arguments writer in pieces cut at ``cuts``: the
    text written, and whether the object closed."""
    tokens = JsonTokens(one_value=True)
    out: list[str] = []
    writer = ArgumentWriter(out)
    closed = False
    at = 0
    for end in [*sorted(cuts), len(text)]:
        events: list[tuple[str, str]] = []
        tokens.feed(text[at:end], events)
        at = max(at, end)
        for kind, value in events:
            got = writer.event(kind, value)
            assert got != FAILED, (kind, value)
            closed = closed or got == CLOSED
    return "".join(out), closed


@settings(max_examples=300, deadline=None)
@given(args=ARGS, style=st.integers(0, 3), data=st.data())
def test_arguments_at_any_character_split(args: dict[str, Any], style: int, data: Any) -> None:
    text = _spelled(args, style)
    assert json.loads(text) == args  # (the spelling is JSON for the same value)
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=8))
    got, closed = _written(text, cuts)
    assert closed
    assert got == dump_arguments(args)


@settings(max_examples=100, deadline=None)
@given(name=TEXT.filter(bool), style=st.integers(0, 2), data=st.data())
def test_a_call_name_with_escapes_reads_as_its_text(name: str, style: int, data: Any) -> None:
    """A name's pieces are canonical JSON text: the reader decodes them once, whole."""
    text = _spelled({"name": name, "arguments": {"a": 1}}, style)
    reader = JsonCallsReader(None)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True):
        reader.feed(text[a:b])
    [call] = reader.calls
    assert call.name == name
    assert "".join(call.arguments) == '{"a":1}'


@pytest.mark.parametrize(
    "body",
    [
        '{"a": "x\\q"}',  # an escape JSON does not have
        '{"a": "x\\u12g4"}',  # not four hex digits
        '{"a": "x\ny"}',  # a raw control character
        '{"a": "\\ud800"}',  # a lone surrogate
        '{"a": "ok\\\\\\x"}',  # an escaped backslash, then a bad escape
    ],
)
@pytest.mark.parametrize("cut", [1, 3, 1000])
def test_what_json_refuses_fails_at_any_split(body: str, cut: int) -> None:
    """What ``json`` refuses, or reads into text no UTF-8 (so no JSON reply) can carry."""
    with pytest.raises((ValueError, UnicodeEncodeError)):
        json.loads(body)["a"].encode("utf-8")
    tokens = JsonTokens(one_value=True)
    events: list[tuple[str, str]] = []
    for i in range(0, len(body), cut):
        tokens.feed(body[i : i + cut], events)
    assert events[-1][0] == FAIL and tokens.done
