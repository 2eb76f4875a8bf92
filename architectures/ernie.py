"""Baidu ERNIE 4.5 (Thinking).

The template prefills ``<think>``, so a turn starts in reasoning. The answer comes as
``</think>\\n\\n<response>\\n…\\n</response>\\n`` (or plainly ``</think>\\n…``): the
``<response>`` wrapper is consumed, and the content text loses the newlines after each
marker and the one newline just inside ``</response>`` (a Trim, so token labels stay
honest and streaming trims exactly as ``parse()``).
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec, Trim
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint


@register
class Ernie45Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="ernie45",
        aliases=("ernie4_5", "ernie_45"),
        start=("<think>",),
        end=("</think>",),
        strip=("<response>", "</response>"),
        turn=("<|im_start|>",),
        required=("<think>", "</think>"),
        prompt_start=True,
        content_trim=Trim(lead="\n", trail="\n", trail_max=1),
        start_source=(
            "documented: ERNIE-4.5-Thinking's template opens the reasoning block for the model"
        ),
        notes="<response> wrapper stripped; newlines after </think> trimmed",
    )
    hint = DetectionHint(model_types=("ernie4_5", "ernie4_5_moe"), needs_evidence=True)
