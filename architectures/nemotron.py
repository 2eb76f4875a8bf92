"""NVIDIA Nemotron 3 (Nano, Super).

As qwen3: ``<think>``/``</think>`` prefilled by the template, ``<tool_call>`` ends reasoning,
a repeated ``</think>`` in content is dropped. The quirk is the fallback: with
``enable_thinking: false`` or ``force_nonempty_content: true``, a response whose content
ends up empty returns its reasoning as content (``reasoning_as_content_if``; a stream
learns it from ``finish()``).

Thinking off therefore only moves where the turn starts (content, behind the template's
``<think></think>``); markers are still matched, and a ``<think>`` after content opens a
block, so a block the model writes anyway is split off, then swapped if it was all.
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register


@register
class NemotronV3Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="nemotron_v3",
        aliases=("nemotron_3", "nano_v3"),
        start=("<think>",),
        end=("</think>",),
        tool=("<tool_call>",),
        turn=("<|im_start|>",),
        required=("<think>", "</think>"),
        prompt_start=True,
        thinking_default=True,
        thinking_switches=("enable_thinking",),
        thinking_off_keeps_markers=True,
        start_in_content="enter",
        end_in_content="drop",
        reasoning_as_content_if=(("enable_thinking", False), ("force_nonempty_content", True)),
        start_source=(
            "documented: Nemotron 3's template ends with `<think>\\n` when thinking is on (as "
            "llama.cpp's nemotron_v3 handler reads it)"
        ),
        notes="enable_thinking false or force_nonempty_content true: empty content → the "
        "reasoning is the content",
    )
