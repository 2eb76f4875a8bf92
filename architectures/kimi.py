"""Kimi K2 (thinking) and K2.5.

The model opens ``<think>`` itself; a turn starts in reasoning so a missing start is
tolerated. ``<|tool_calls_section_begin|>`` ends reasoning and the content starts at it,
so the tool parser downstream still sees the section. One family serves K2 Thinking and
K2.5 (the aliases ``kimik2_5``, ``kimi_k2_5``, ``kimi_k25``: vLLM registers ``kimi_k25``
for Kimi K2.5).

One newline right after ``<think>`` belongs to the marker, not to the reasoning
(``<think>\nX</think>`` has reasoning ``X``; a second newline is reasoning text): the
reasoning text drops it (``Trim(lead="\n", lead_max=1)``), the token keeps its label.
vLLM's ``kimi_k25`` parser (DeepSeek R1's underneath) keeps it and llama.cpp strips all
whitespace around the reasoning (``string_strip`` in ``try_parse_reasoning``); one newline
is what a template that writes ``<think>\n`` would put there, and the newline before
``</think>`` is left alone (no such template writes it).

Tool calls (read when a request offers tools; kind ``kimi_k2``): the section
``<|tool_calls_section_begin|>`` … ``<|tool_calls_section_end|>`` holds calls
``<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>``, as
Kimi K2's chat template writes them; the whole section is taken out of the content (an empty
one too) and text inside it between calls is skipped, as vLLM's ``kimi_k2`` tool parser
does. Whitespace around the section is content (that parser keeps it, and the CanIToolCall
corpus expects ``"I'll check. "``). A call cut by ``max_tokens`` is dropped; the calls
completed before it are kept.
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec, Trim
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

KIMI_K2_TOOL_CALLS = ToolFormat(
    kinds=("kimi_k2",),
    open=("<|tool_calls_section_begin|>",),
    close=("<|tool_calls_section_end|>",),
    call_close=("<|tool_call_end|>",),
    json_after=("<|tool_call_argument_begin|>",),
    trim_gaps=False,
    source="Kimi K2's chat template writes `<|tool_calls_section_begin|><|tool_call_begin|>"
    "functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>…"
    "<|tool_calls_section_end|>`; vLLM's kimi_k2 tool parser keeps the text around it",
)


@register
class KimiK2Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="kimi_k2",
        aliases=("kimik2_5", "kimi_k2_5", "kimi_k25", "kimi"),
        start=("<think>",),
        end=("</think>",),
        tool=("<|tool_calls_section_begin|>",),
        turn=("<|im_assistant|>",),
        required=("<think>", "</think>"),
        prompt_start=True,
        thinking_switches=("thinking", "enable_thinking"),
        start_source=(
            "documented: Kimi K2 Thinking / K2.5 think by default; a `<think>` the model writes is "
            "consumed"
        ),
        reasoning_trim=Trim(lead="\n", lead_max=1),
        tool_calls=KIMI_K2_TOOL_CALLS,
        notes="<|tool_calls_section_begin|> ends reasoning; content starts at it; the newline "
        "right after <think> is the marker's",
    )
    hint = DetectionHint(model_types=("kimi_k2",))
