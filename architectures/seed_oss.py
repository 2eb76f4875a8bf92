"""ByteDance Seed-OSS.

``<seed:think>`` … ``</seed:think>``, single tokens in Seed-OSS's vocabulary. The template
may prefill the start or the model emits it: a turn starts in reasoning and a leading
start marker is consumed, so both work. ``enable_thinking`` switches it as for qwen3. A
``<seed:tool_call>`` ends reasoning. Every message opens with ``<seed:bos>``, so the last
one bounds the prompt scan to the current assistant turn.

Tool calls (:data:`SEED_OSS_TOOL_CALLS`): Seed-OSS's chat template (llama.cpp's
``models/templates/ByteDance-Seed-OSS.jinja``) writes each call as
``<seed:tool_call>\\n<function=NAME>\\n<parameter=KEY>VALUE</parameter>\\n…</function>\\n``
``</seed:tool_call>``, a value as its string (non-strings through jinja's ``string``
filter), and shows the model that shape in the system prompt. That is Qwen3-Coder's XML
body inside Seed's own markers (kind ``xml``); vLLM's ``seed_oss`` tool parser reads it the
same way (one newline next to a value's tags dropped, values typed from the tool's schema,
Python literals as a fallback). Both markers are special tokens of Seed-OSS's vocabulary.
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.toolcalls import ToolFormat

SEED_OSS_TOOL_CALLS = ToolFormat(
    kinds=("xml",),
    open=("<seed:tool_call>",),
    close=("</seed:tool_call>",),
    source="Seed-OSS's chat template (llama.cpp models/templates/ByteDance-Seed-OSS.jinja) writes "
    "`<seed:tool_call>\\n<function=NAME>\\n<parameter=KEY>VALUE</parameter>\\n</function>\\n"
    "</seed:tool_call>`; vLLM's seed_oss tool parser reads `<function=…>` / `<parameter=…>` "
    "inside those markers",
)
"""XML functions (kind ``xml``) inside ``<seed:tool_call>`` … ``</seed:tool_call>``."""


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
        tool_calls=SEED_OSS_TOOL_CALLS,
        start_source=(
            "documented: Seed-OSS thinks by default and writes `<seed:think>` itself (consumed in "
            "reasoning)"
        ),
        notes="<seed:tool_call> ends reasoning",
    )
