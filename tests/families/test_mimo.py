"""mimo (Xiaomi MiMo): Qwen3's markers, thinking only when asked (``enable_thinking: true``).

Tokenizer: Qwen3's real one (``qwen-3``; MiMo's vocabulary has the same ``<think>`` tokens).
Facts: with thinking off the turn starts in content, and a block the model writes anyway is
split off (no marker leaks into the content); with it on, the template prefills
``<think>\\n`` and the output starts inside reasoning; the newlines next to the markers are
layout.

The fidelity cases are data run by :mod:`tests.support.family_cases`.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import reasonspan
from tests.support import family_cases as fc
from tests.support.cases import split_both_ways
from tests.support.family_cases import Split

# MiMo's vocabulary has Qwen's <think>/</think>/<tool_call> special tokens.
FIXTURE = "qwen-3"
# The chat_template_kwargs the property tests run it under, one run each (the defaults, then
# enable_thinking).
KWARGS = [{}, {"enable_thinking": True}]

# One call to f(a=V) in each form of the tool-call format architectures/qwen3.py
# documents (V: where the value goes), for the fuzz and the hostile-value tests
# (tests/support/hostile.py reads it); the same format as qwen3's.
CALL_TEMPLATES = ('<tool_call>\n{"name": "f", "arguments": {"a": V}}\n</tool_call>',)

QWEN_Q = "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n"
R = "Let me think it over."


def test_thinks_only_when_asked() -> None:
    off = fc.parser_for("mimo")
    on = fc.parser_for("mimo", {"enable_thinking": True})
    assert off.spec.name == "mimo" and reasonspan.get_parser_class("mimo") is not type(
        fc.parser_for("qwen3")
    )
    tok = off.tokenizer
    prompt = tok.encode(QWEN_Q)
    assert not off.default_reasoning and on.default_reasoning
    assert not off.is_prompt_in_reasoning(prompt) and on.is_prompt_in_reasoning(prompt)
    # Off: the answer is content...
    res = off.parse(tok.encode("Hello."), prompt)
    assert (res.reasoning, res.content) == (None, "Hello.")
    # ...and a block the model writes anyway is split off; no marker leaks into content.
    res = off.parse(tok.encode("<think>\nhm\n</think>\n\nHello."), prompt)
    assert (res.reasoning, res.content) == ("hm", "Hello.")
    # On: the template prefills <think>, so the output starts inside reasoning.
    res = on.parse(tok.encode("hm\n</think>\n\nHello."), tok.encode(QWEN_Q + "<think>\n"))
    assert (res.reasoning, res.content) == ("hm", "Hello.")


def test_thinks_only_with_enable_thinking() -> None:
    qwen = "qwen-3"
    assert not fc.parser_for("mimo", None, qwen).default_reasoning
    assert not fc.parser_for("mimo", {"enable_thinking": False}, qwen).default_reasoning
    assert fc.parser_for("mimo", {"enable_thinking": True}, qwen).default_reasoning
    turn = "<|im_start|>user\nHi?<|im_end|>\n<|im_start|>assistant\n"
    assert not fc.scan("mimo", qwen, turn)
    assert fc.scan("mimo", qwen, turn + "<think>\n", {"enable_thinking": True})
    res = split_both_ways("mimo", qwen, R)
    assert (res.reasoning or None, res.content or None) == (None, R)


@fc.SETTINGS
@given(data=st.data())
def test_newlines_next_to_markers_are_not_text(data: st.DataObject) -> None:
    case = Split(
        "markers",
        "<think>\nx\n</think>\n\ny",
        "x",
        "y",
        QWEN_Q + "<think>\n",
        {"enable_thinking": True},
    )
    fc.check_layout_newlines(data, "mimo", case)


@pytest.mark.parametrize(
    ("kwargs", "output"),
    [({}, "<think>a</think>b</think>c"), ({"enable_thinking": True}, "a</think>b</think>c")],
    ids=["off", "on"],
)
def test_no_marker_text_leaks_into_content(kwargs: dict[str, bool], output: str) -> None:
    fc.check_no_leak("mimo", kwargs, output, "</think>")
