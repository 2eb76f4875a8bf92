"""Kimi K2's tool-call sections: its :class:`~tests.support.section_calls.Family` runs
through :data:`tests.support.section_calls.CHECKS` (assembled outputs, cuts, malformed
blocks, markers inside arguments, any split and the runtime); its own quirks follow. The
DeepSeek families' and Kimi K3's section cases live in their modules
(``tests/families/test_<family>.py``).

Tokenizer: a named stand-in, ``qwen-3_base_with_kimi_k2_special_tokens`` (Qwen3's real
tokenizer with Kimi K2's special tokens added, tests/support/fixtures.py).
"""

from __future__ import annotations

import pytest

from tests.support import section_calls
from tests.support.section_calls import (
    K2_PROMPT,
    NOTE,
    TOOLS,
    WEATHER,
    Family,
    dumps,
    every_path,
    expected,
    kimi_k2,
)

FAMILIES = {
    "kimi_k2": Family(
        "kimi_k2",
        "qwen-3_base_with_kimi_k2_special_tokens",
        K2_PROMPT,
        kimi_k2,
        think=("<think>", "</think>"),
        leak=("<|tool",),
        json_arguments=True,
    ),
}
NAMES = sorted(FAMILIES)


@pytest.mark.parametrize("check", list(section_calls.CHECKS))
@pytest.mark.parametrize("name", NAMES)
def test_section_calls(name: str, check: str) -> None:
    section_calls.CHECKS[check](FAMILIES[name])


def test_kimi_k2_keeps_text_around_the_section_and_skips_noise() -> None:
    fam = FAMILIES["kimi_k2"]
    tok = fam.tokenizer()
    section = kimi_k2([WEATHER]).replace(
        "<|tool_calls_section_begin|>", "<|tool_calls_section_begin|> noise "
    )
    out = "<think>plan</think>Before. " + section + " After."
    res = fam.make().parse(tok.encode(out), fam.prompt_ids(), tools=TOOLS)
    assert res.content == "Before.  After."
    assert res.tool_calls == [expected(*WEATHER)]
    # an id without the `functions.` prefix names the function the same
    bare = "<think></think>" + kimi_k2([NOTE]).replace("functions.note:0", "note:7")
    res = fam.make().parse(tok.encode(bare), fam.prompt_ids(), tools=TOOLS)
    assert res.tool_calls == [expected(*NOTE)]
    # an empty section: no call, no markup in the content
    res = fam.make().parse(
        tok.encode("<think></think>Hi <|tool_calls_section_begin|><|tool_calls_section_end|>"),
        fam.prompt_ids(),
        tools=TOOLS,
    )
    assert res.tool_calls == [] and res.content == "Hi "


def test_kimi_k2_malformed_call_in_reasoning_no_longer_leaks() -> None:
    # `<think>must call<|tool_calls_section_begin|>…` left `<|tool_calls_section_begin|>f`
    # in the content. A malformed call (no argument marker) is now content verbatim, every
    # marker kept; a well-formed one is a call and leaves no markup behind.
    fam = FAMILIES["kimi_k2"]
    tok = fam.tokenizer()
    bad = "<|tool_calls_section_begin|><|tool_call_begin|>f<|tool_call_end|><|tool_calls_section_end|>"
    res = fam.make().parse(tok.encode("<think>must call" + bad), fam.prompt_ids(), tools=TOOLS)
    assert res.reasoning == "must call" and res.content == bad and res.tool_calls == []
    good = kimi_k2([("note", {})])
    res = fam.make().parse(tok.encode("<think>must call" + good), fam.prompt_ids(), tools=TOOLS)
    assert res.reasoning == "must call" and res.content is None
    assert res.tool_calls == [expected("note", {})]


def _k2_call(call_id: str, args: str) -> str:
    return f"<|tool_call_begin|>{call_id}<|tool_call_argument_begin|>{args}<|tool_call_end|>"


def _k2_section(*calls: str) -> str:
    return "<|tool_calls_section_begin|>" + "".join(calls) + "<|tool_calls_section_end|>"


@pytest.mark.parametrize(
    "bad_id", ["functions.invalid.0", "0", "functions.:0", "functions.note", "note :0", ":3"]
)
def test_kimi_k2_id_that_is_not_functions_name_idx_is_no_call(bad_id: str) -> None:
    # `functions.invalid.0` was sent as a call named `invalid.0`, a bare `0` as `0`
    fam = FAMILIES["kimi_k2"]
    alone = _k2_section(_k2_call(bad_id, "{}"))
    res = every_path(fam, "<think>plan</think>Hi " + alone)
    assert res.tool_calls == [] and res.content == "Hi " + alone
    good = _k2_call("functions.note:1", dumps(NOTE[1]))
    res = every_path(fam, "<think>plan</think>Hi " + _k2_section(_k2_call(bad_id, "{}"), good))
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
def test_kimi_k2_accepted_ids(call_id: str, name: str) -> None:
    fam = FAMILIES["kimi_k2"]
    res = every_path(fam, "<think></think>" + _k2_section(_k2_call(call_id, '{"a": 1}')))
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
def test_kimi_k2_one_bad_call_keeps_its_siblings(bad: str) -> None:
    # one invalid call made the whole section content; the engines keep the rest
    fam = FAMILIES["kimi_k2"]
    first = _k2_call("functions.get_weather:0", dumps(WEATHER[1]))
    last = _k2_call("functions.note:2", dumps(NOTE[1]))
    res = every_path(fam, "<think>plan</think>Sure." + _k2_section(first, bad, last))
    assert res.tool_calls == [expected(*WEATHER), expected(*NOTE)]
    assert res.content == "Sure."
    # a bad call that has no call-end of its own: the section is not well formed
    broken = bad.removesuffix("<|tool_call_end|>")
    res = every_path(fam, "<think>plan</think>Sure." + _k2_section(first, broken, last))
    assert res.tool_calls == [] and res.content == "Sure." + _k2_section(first, broken, last)
