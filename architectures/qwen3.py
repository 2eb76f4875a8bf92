"""Qwen3 (2504, 2507-Thinking), Qwen3.5, MiMo.

Qwen3.5 and 2507-Thinking prefill ``<think>``; Qwen3 (2504) emits it itself: both work
because a turn starts in reasoning and a leading ``<think>`` is consumed. With
``enable_thinking: false`` the template writes ``<think>\\n\\n</think>\\n\\n`` and the whole
response is content. An unpaired ``<tool_call>`` ends reasoning; a repeated ``</think>`` in
content is dropped.
"""

from __future__ import annotations

from ..runtime.parser import ReasoningParser
from ..runtime.registry import register
from ..runtime.spec import ReasoningSpec


@register
class Qwen3Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="qwen3",
        aliases=("mimo", "qwen3_5", "qwen3_thinking"),
        start=("<think>",),
        end=("</think>",),
        tool=("<tool_call>",),
        turn=("<|im_start|>",),
        required=("<think>", "</think>"),
        prompt_start=True,
        thinking_default=True,
        thinking_switches=("enable_thinking",),
        end_in_content="drop",
        start_source=(
            "template: Qwen3.5's and Qwen3.6's chat_template.jinja end with `<think>\\n` "
            "(Qwen3-2504's ends with `assistant\\n` and the model writes `<think>`, consumed in "
            "reasoning)"
        ),
        notes="unpaired <tool_call> ends reasoning; repeated </think> in content dropped",
    )
