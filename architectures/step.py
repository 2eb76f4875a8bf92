"""StepFun Step-3 and Step-3.5.

Both prefill ``<think>``. The prompt scan looks only at the current assistant turn (a
``</think>`` anywhere in the history is a known bug elsewhere). Step-3.5 trims one newline
on each side of ``</think>``.
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec, Trim
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint

_THINK = ("<think>",)
_END = ("</think>",)
_TURNS = ("<|BOT|>", "<|im_start|>")


@register
class Step3Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="step3",
        start=_THINK,
        end=_END,
        turn=_TURNS,
        required=_THINK + _END,
        prompt_start=True,
        start_source="documented: Step 3's template opens the reasoning block",
        notes="prompt scan scoped to the current assistant turn",
    )
    hint = DetectionHint(tokens=("<|BOT|>",), needs_evidence=True)


@register
class Step3p5Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="step3p5",
        aliases=("step3_5", "step35"),
        start=_THINK,
        end=_END,
        turn=_TURNS,
        required=_THINK + _END,
        prompt_start=True,
        reasoning_trim=Trim(trail="\n", trail_max=1),
        content_trim=Trim(lead="\n", lead_max=1),
        start_source="documented: Step 3.5's template opens the reasoning block (as deepseek_r1)",
        notes="one newline trimmed on each side of </think>",
    )
    hint = DetectionHint(tokens=("<|BOT|>",), needs_evidence=True)
