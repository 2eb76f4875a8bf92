"""GLM-4.5 / 4.6 / 4.7 (and GLM-4.5V).

The model opens ``<think>`` itself (or the template prefills it); without it the response
is content. A ``<think>`` after content re-enters reasoning. ``<tool_call>`` ends reasoning.
"""

from __future__ import annotations

import msgspec

from ..runtime.parser import ReasoningParser
from ..runtime.registry import register
from ..runtime.spec import ReasoningSpec

_GLM = ReasoningSpec(
    name="glm45",
    aliases=("glm4_moe", "glm45v", "glm46"),
    start=("<think>",),
    end=("</think>",),
    tool=("<tool_call>",),
    turn=("<|assistant|>",),
    required=("<think>", "</think>"),
    prompt_start=False,
    thinking_default=True,
    thinking_switches=("thinking", "enable_thinking"),
    start_in_content="enter",
    notes="a <think> after content re-enters reasoning",
)


@register
class Glm45Parser(ReasoningParser):
    spec = _GLM


@register
class Glm47Parser(ReasoningParser):
    spec = msgspec.structs.replace(_GLM, name="glm47", aliases=("glm5",))
