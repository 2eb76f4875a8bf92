"""Kimi K2 (thinking) and K2.5.

The model opens ``<think>`` itself; a turn starts in reasoning so a missing start is
tolerated. ``<|tool_calls_section_begin|>`` ends reasoning and the content starts at it,
so the tool parser downstream still sees the section.
"""

from __future__ import annotations

from ..runtime.parser import ReasoningParser
from ..runtime.registry import register
from ..runtime.spec import ReasoningSpec


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
        notes="<|tool_calls_section_begin|> ends reasoning; content starts at it",
    )
