"""AllenAI OLMo 3 (Think).

``<think>``/``</think>`` are plain text, several ordinary tokens that merge with their
neighbours (``</`` ``think`` ``>``, or `` </`` after a space), so both are text markers
matched on token bytes. Some OLMo 3 templates prefill ``<think>`` and some let the model
write it; a turn starts in reasoning and a leading ``<think>`` is consumed, which serves
both (and matches "truncated = reasoning"). A ``<think>`` after the answer is text.
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint

_THINK, _END = "<think>", "</think>"


@register
class Olmo3Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="olmo3",
        start=(_THINK,),
        end=(_END,),
        turn=("<|im_start|>",),
        text_markers=(_THINK, _END),
        prompt_start=True,
        start_source=(
            "documented: Olmo 3 Think's generation prompt is `<|im_start|>assistant\\n<think>`"
        ),
        notes="markers are plain text (several tokens)",
    )
    hint = DetectionHint(model_types=("olmo3",), plain_text_markers=True)
