"""Streamed arguments of the Python-call kinds (``runtime/toolcalls/partial_pythonic.py``):
Llama 4's list (``pythonic``, bare or between ``<|python_start|>`` and ``<|python_end|>``),
LFM2's list between ``<|tool_call_start|>`` and ``<|tool_call_end|>`` (``lfm2``), Olmo 3's
calls one per line in ``<function_calls>`` (``olmo3``).

On each family's tokenizer fixture (Qwen2.5's with the family's special tokens; Olmo 3's
markers are text there): for every split of the output into engine steps, the entries a
client joins by index are exactly ``parse()``'s calls, and ``parse()`` reads the calls the
test wrote (built from the values, never read back from an output). A long string
argument arrives in many pieces; a call whose first argument does not read is never sent;
one that goes wrong after it was sent is reported broken.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import reasonspan
from reasonspan.runtime.core.tool_types import as_tools
from reasonspan.runtime.toolcalls import lfm2_calls, olmo3_calls, pythonic_calls
from reasonspan.runtime.toolcalls.partial_pythonic import PythonicCallsReader
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

Quote = Callable[[str], str]


class Family:
    """A family's tokenizer, prompt, parser and call writer."""

    def __init__(self, name: str, prompt: str, frame: tuple[str, str]) -> None:
        self.name = name
        self.tok = tokenizer(FAMILY_TOKENIZERS[name])
        self.prompt = self.tok.encode(prompt)
        self.frame = frame

    def make(self) -> reasonspan.ReasoningParser:
        return reasonspan.create_parser_sync(self.name, self.tok)

    def body(self, calls: list[Call], quote: Quote = repr) -> str:
        written = [f"{name}({arguments(args, quote)})" for name, args in calls]
        if self.name == "olmo3":
            return "\n".join(written) + "\n"
        return "[" + ", ".join(written) + "]"

    def output(self, calls: list[Call], quote: Quote = repr, before: str = "") -> str:
        return before + self.frame[0] + self.body(calls, quote) + self.frame[1]


def arguments(args: dict[str, Any], quote: Quote) -> str:
    return ", ".join(f"{k}={value(v, quote)}" for k, v in args.items())


def value(v: Any, quote: Quote) -> str:
    """A value as Python source: strings by ``quote``, JSON's names for ``null`` / bools in
    lists (both kinds read them), the rest as Python writes it."""
    if isinstance(v, str):
        return quote(v)
    if isinstance(v, list):
        return "[" + ", ".join(json.dumps(x) if x is None or isinstance(x, bool) else
                               value(x, quote) for x in v) + "]"  # fmt: skip
    if isinstance(v, dict):
        return "{" + ", ".join(f"{quote(k)}: {value(x, quote)}" for k, x in v.items()) + "}"
    return repr(v)


def double_quoted(s: str) -> str:
    """JSON's string text, which Python reads as the same string (non-ASCII as is)."""
    return json.dumps(s, ensure_ascii=False)


def escaped(s: str) -> str:
    """Every character a Python escape: hex, 4- and 8-digit Unicode, octal, named."""
    out = []
    for c in s:
        n = ord(c)
        if c == "•":
            out.append("\\N{BULLET}")
        elif n < 0o100:
            out.append(f"\\{n:o}")
        elif n < 0x100:
            out.append(f"\\x{n:02x}")
        else:
            out.append(f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}")
    return "'" + "".join(out) + "'"


def glued(s: str) -> str:
    """Two literals glued (``'ab' "cd"``): Python reads one string."""
    half = len(s) // 2
    return repr(s[:half]) + " " + double_quoted(s[half:])


def triple(s: str) -> str:
    body = s.replace("\\", "\\\\").replace('"', '\\"')
    return '"""' + body + '"""'


LLAMA4 = Family(
    "llama4_pythonic", "<|header_start|>assistant<|header_end|>\n\n",
    ("<|python_start|>", "<|python_end|>"),
)  # fmt: skip
LFM2 = Family(
    "lfm2", "<|im_start|>user\nWrite it.<|im_end|>\n<|im_start|>assistant\n",
    ("<|tool_call_start|>", "<|tool_call_end|>"),
)  # fmt: skip
OLMO3 = Family(
    "olmo3", "<|im_start|>user\nWrite it.<|im_end|>\n<|im_start|>assistant\n<think>",
    ("</think>\n<function_calls>\n", "</function_calls>"),
)  # fmt: skip
FAMILIES = [LLAMA4, LFM2, OLMO3]
STYLES: list[Quote] = [repr, double_quoted, escaped, glued, triple]
"""How a test writes a string; LFM2's repairs read only single-line plain literals the
same whatever the rest of the list holds (``partial_pythonic``'s doc): it gets ``repr``
and ``double_quoted``."""


def styles(fam: Family) -> list[Quote]:
    return STYLES[:2] if fam is LFM2 else STYLES


def lfm2_template(s: str) -> str:
    """LFM2.5's chat template: a string in single quotes, not escaped."""
    return "'" + s + "'"


def check(
    fam: Family, calls: list[Call], cuts: list[int], quote: Quote = repr, step: int = 3
) -> list[Any]:
    """``parse()`` reads ``calls`` from the family's output; streamed at ``cuts`` they join
    to it, none broken, the same content (module doc)."""
    ids = fam.tok.encode(fam.output(calls, quote))
    return joins_whole(ids, fam.prompt, fam.make, want(calls), cuts, step)


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_a_long_string_argument_streams_in_many_pieces(fam: Family) -> None:
    """A coding agent's file (about 5,000 tokens) after the first argument, in each way
    the family's model may write it: it arrives in many pieces, long before the call's
    close, and they join to the whole read."""
    quotes = [lfm2_template, repr] if fam is LFM2 else [repr, double_quoted, triple]
    for quote in quotes:
        args = {"path": "steps.py", "content": CODE}
        ids = fam.tok.encode(fam.output([("write_file", args)], quote))
        assert len(ids) > 2000
        entries = check(fam, [("write_file", args)], list(range(0, len(ids), 3)), quote)
        assert pieces(entries, 0) >= 10, quote.__name__
        assert len(entries[0][0].function.arguments or "") < 200  # sent as it came


def test_llama4_a_bare_list_streams_too() -> None:
    """Llama 4 without ``<|python_start|>``: the region opens at the answer's ``[``."""
    args = {"path": "steps.py", "content": CODE}
    ids = LLAMA4.tok.encode(LLAMA4.body([("write_file", args)]))
    cuts = list(range(0, len(ids), 5))
    entries = joins_whole(ids, LLAMA4.prompt, LLAMA4.make, [("write_file", compact(args))], cuts)
    assert pieces(entries, 0) >= 10


def test_llama4_text_after_python_end_is_content() -> None:
    """``<|python_end|>`` ends the list: the streamed calls join to the whole read, and the
    text after it is the content."""
    calls: list[Call] = [
        ("write_file", {"path": "a.py", "content": CODE[:3000]}),
        ("get_weather", {"city": "LA", "days": 3}),
    ]
    out = LLAMA4.output(calls) + " I wrote it and checked the weather."
    ids = LLAMA4.tok.encode(out)
    whole = LLAMA4.make().parse(ids, LLAMA4.prompt, tools=TOOLS, finish_reason="stop")
    assert (whole.content or "").strip() == "I wrote it and checked the weather."
    for step in (1, 7):
        joins_whole(ids, LLAMA4.prompt, LLAMA4.make, want(calls), list(range(0, len(ids), 2)), step)


def test_lfm2_json_list_goes_to_the_json_reader() -> None:
    """LFM2's format also takes a JSON list: ``[{`` is not a Python call, and the json
    kind's reader streams it."""
    args = {"path": "steps.py", "content": CODE}
    listed = json.dumps([{"name": "write_file", "arguments": args}], ensure_ascii=False)
    ids = LFM2.tok.encode(LFM2.frame[0] + listed + LFM2.frame[1])
    cuts = list(range(0, len(ids), 3))
    entries = joins_whole(ids, LFM2.prompt, LFM2.make, [("write_file", compact(args))], cuts)
    assert pieces(entries, 0) >= 10


BAD_FIRST = ["b'z'", "1e999", "'a' + 'b'", "'a'.upper()", "x", "{1: 2}", "1j", "f'{x}'"]
"""First arguments the whole read does not take: the call is dropped."""


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
@pytest.mark.parametrize("bad", BAD_FIRST)
def test_a_call_whose_first_argument_does_not_read_is_never_sent(fam: Family, bad: str) -> None:
    """The call is never started in the stream (its long second argument included); its
    well-formed sibling is sent, as the whole read keeps it."""
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    bad_call = f"write_file(path={bad}, content={CODE[:2000]!r})"
    good = f"get_weather({arguments(sibling[1], repr)})"
    body = f"{bad_call}\n{good}\n" if fam is OLMO3 else f"[{bad_call}, {good}]"
    ids = fam.tok.encode(fam.frame[0] + body + fam.frame[1])
    entries = joins_whole(
        ids, fam.prompt, fam.make, [(sibling[0], compact(sibling[1]))], list(range(len(ids))), 1
    )
    assert all(e.function.name != "write_file" for chunk in entries for e in chunk if e.function)


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_a_call_broken_after_it_was_sent_is_listed_broken(fam: Family) -> None:
    """A call sent as written whose last argument then does not read (``b'z'``): the whole
    read drops it and keeps its sibling; the stream reports it broken, never closes its
    arguments, and sends the sibling."""
    sibling: Call = ("get_weather", {"city": "LA", "days": 3})
    broken = f"write_file(path='a.py', content={CODE[:2000]!r}, mode=b'z')"
    good = f"get_weather({arguments(sibling[1], repr)})"
    body = f"{broken}\n{good}\n" if fam is OLMO3 else f"[{broken}, {good}]"
    ids = fam.tok.encode(fam.frame[0] + body + fam.frame[1])
    whole = fam.make().parse(ids, fam.prompt, tools=TOOLS, finish_reason="stop")
    assert [(c.name, c.arguments) for c in whole.tool_calls] == [(sibling[0], compact(sibling[1]))]
    content = broken_first(ids, fam.prompt, fam.make, sibling, '{"path":"a.py","content":"')
    assert content == (whole.content or "")


CALLS = calls_strategy("ab \"'\\\n\t東🙂•{}[](),=#")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=CALLS, data=st.data())
def test_entries_join_to_the_whole_read_at_any_split(
    calls: list[Call], data: st.DataObject
) -> None:
    """One to three calls with strings full of quotes, backslashes, newlines and the
    notation's punctuation, numbers, booleans, None, nested lists and dicts, in each
    family and string style: at any split and read step the entries join to ``parse()``'s
    calls, which are the calls written."""
    fam = data.draw(st.sampled_from(FAMILIES))
    quote = data.draw(st.sampled_from(styles(fam)))
    ids = fam.tok.encode(fam.output(calls, quote))
    cuts = data.draw(st.lists(st.integers(0, len(ids)), max_size=12))
    check(fam, calls, cuts, quote, data.draw(st.sampled_from([1, 3, 16])))


WHOLE = {"pythonic": pythonic_calls.parse_pythonic, "lfm2": lfm2_calls.parse_lfm2,
         "olmo3": olmo3_calls.parse_olmo3}  # fmt: skip
KIND = {LLAMA4: "pythonic", LFM2: "lfm2", OLMO3: "olmo3"}


@settings(max_examples=150, deadline=None)
@given(calls=CALLS, data=st.data())
def test_reader_at_any_character_split(calls: list[Call], data: st.DataObject) -> None:
    """The reader itself fed 1-5 characters at a time (a tokenizer may cut an escape or a
    closing ``'''`` anywhere): each call it reports is whole, not broken, and is the whole
    read's call."""
    fam = data.draw(st.sampled_from(FAMILIES))
    quote = data.draw(st.sampled_from(styles(fam)))
    body = fam.body(calls, quote)
    kind = KIND[fam]
    expected = WHOLE[kind](body, as_tools(TOOLS)) or []
    assert [(c.name, c.arguments) for c in expected] == want(calls)
    assert fed_in_pieces(PythonicCallsReader(kind), body, data) == want(calls)


def test_lfm2_template_strings_with_raw_newlines_and_inner_quotes() -> None:
    """LFM2.5's template does not escape: a raw newline in a string is a newline, and a
    quote that does not end the string is text (``'sed -n '1,9p' f.py'``; ``'a', 'b'``
    and ``'f(x') + g(y'``, whose inner quote is followed by what could end an argument but
    not by the next ``name=`` or the list's end); the stream joins to the whole read,
    never closing a string at such a quote."""
    inner = ["sed -n '1,9p' f.py\n" * 40, "a', 'b", "f(x') + g(y", "x')"]
    for text in inner:
        calls: list[Call] = [
            ("write_file", {"path": "a.py", "content": CODE[:1500]}),
            ("write_file", {"path": "b.sh", "content": text, "mode": 1}),
            ("write_file", {"path": "c.sh", "content": text}),
        ]
        ids = LFM2.tok.encode(LFM2.output(calls, lfm2_template))
        entries = check(LFM2, calls, list(range(0, len(ids), 2)), lfm2_template, 1)
        assert pieces(entries, 0) >= 10
