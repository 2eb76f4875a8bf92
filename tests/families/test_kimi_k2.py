"""kimi_k2 (Kimi K2 Thinking and K2.5, alias ``kimi_k25``): the newline after ``<think>``.

Tokenizer: ``qwen-3_base_with_kimi_k2_special_tokens`` (Qwen3's real tokenizer, whose
``<think>``/``</think>`` Kimi shares, plus Kimi's turn and tool-call section tokens: no
Kimi tokenizer ships offline). The family's tool-call sections and its matrix rows are
tested in ``toolcalls/test_toolcalls_deepseek_kimi.py`` and the matrix files.

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
from tests.support.fixtures import FAMILY_TOKENIZERS, tokenizer
from tests.support.paths import every_path

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
        at = TOK.encode(output).index(TOK.single_token_id("<think>")) + 1
        assert TOK.decode(res.token_ids[at : at + 1]).startswith("\n")
        assert res.labels[at] == Label.REASONING


def test_thinking_off_is_all_content() -> None:
    res = run("<think>\nX</think>Y", {"thinking": False})
    assert (res.reasoning, res.content) == (None, "<think>\nX</think>Y")
