"""DeepSeek: R1 (and QwQ, R1 distills), V3.1/V3.2 (thinking off by default), Holo2.

R1's template prefills ``<think>`` and the model sometimes omits it, so an assistant turn
starts inside reasoning; output without ``</think>`` is all reasoning (truncated).
"""

from __future__ import annotations

from ..runtime.parser import ReasoningParser
from ..runtime.registry import register
from ..runtime.spec import ReasoningSpec

THINK = ("<think>",)
END_THINK = ("</think>",)
# DeepSeek and R1-distill templates open the assistant turn with <｜Assistant｜>; QwQ with
# <|im_start|>. Whichever the tokenizer has bounds the prompt scan.
TURNS = ("<｜Assistant｜>", "<|im_start|>")


@register
class DeepSeekR1Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="deepseek_r1",
        aliases=("qwq", "deepseek_r1_distill", "r1"),
        start=THINK,
        end=END_THINK,
        turn=TURNS,
        required=THINK + END_THINK,
        prompt_start=True,
        start_source=(
            "template: DeepSeek-R1's tokenizer_config.json (and the R1 distills', QwQ-32B's) ends "
            "the generation prompt with `<think>\\n`"
        ),
        notes="a missing start marker is tolerated (the turn starts in reasoning)",
    )


@register
class DeepSeekV3Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="deepseek_v3",
        aliases=("deepseek_v31", "deepseek_v3_1", "deepseek_v32", "deepseek_v3_2"),
        start=THINK,
        end=END_THINK,
        turn=TURNS,
        required=THINK + END_THINK,
        prompt_start=True,
        thinking_default=False,
        thinking_switches=("thinking", "enable_thinking"),
        start_source=(
            "template: DeepSeek-V3.1's tokenizer_config.json ends it with `</think>`, or `<think>` "
            "with `thinking: true`"
        ),
        notes="thinking off by default: the whole response is content",
    )


@register
class Holo2Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="holo2",
        start=THINK,
        end=END_THINK,
        turn=TURNS,
        required=THINK + END_THINK,
        prompt_start=True,
        thinking_default=True,
        thinking_switches=("thinking", "enable_thinking"),
        start_source=(
            "documented: Holo2 thinks by default (a DeepSeek-V3.1-style template with `thinking` "
            "defaulting on)"
        ),
        notes="as deepseek_v3, but thinking on by default",
    )
