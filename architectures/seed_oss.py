"""ByteDance Seed-OSS.

``<seed:think>`` … ``</seed:think>``, single tokens in Seed-OSS's vocabulary. The template
may prefill the start or the model emits it: a turn starts in reasoning and a leading
start marker is consumed, so both work. ``enable_thinking`` switches it as for qwen3. A
``<seed:tool_call>`` ends reasoning. Every message opens with ``<seed:bos>``, so the last
one bounds the prompt scan to the current assistant turn.
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register


@register
class SeedOssParser(ReasoningParser):
    spec = ReasoningSpec(
        name="seed_oss",
        aliases=("seedoss",),
        start=("<seed:think>",),
        end=("</seed:think>",),
        tool=("<seed:tool_call>",),
        turn=("<seed:bos>",),
        required=("<seed:think>", "</seed:think>"),
        prompt_start=True,
        thinking_default=True,
        thinking_switches=("enable_thinking",),
        start_source=(
            "documented: Seed-OSS thinks by default and writes `<seed:think>` itself (consumed in "
            "reasoning)"
        ),
        notes="<seed:tool_call> ends reasoning",
    )
