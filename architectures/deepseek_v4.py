"""DeepSeek V4.

The prompt ends ``<｜Assistant｜><think>`` in thinking mode and ``<｜Assistant｜></think>`` in
chat mode, so the prompt scan decides either way; earlier turns keep ``…</think>answer``
in the history, behind the current ``<｜Assistant｜>``. Thinking is on by default.

A DSML tool-call block may start right inside the reasoning: ``<｜DSML｜tool_calls>`` ends it
and stays in the content for the tool parser. It is several tokens (``<`` ``｜DSML｜``
``tool`` ``_c`` ``alls`` ``>``) whose first ``<`` merges with the text before it (``.<``,
`` <``), so it is a text marker, matched on token bytes.
"""

from __future__ import annotations

from ..runtime.parser import ReasoningParser
from ..runtime.registry import register
from ..runtime.spec import ReasoningSpec

_DSML_TOOL_CALLS = "<｜DSML｜tool_calls>"


@register
class DeepSeekV4Parser(ReasoningParser):
    spec = ReasoningSpec(
        name="deepseek_v4",
        start=("<think>",),
        end=("</think>",),
        tool=(_DSML_TOOL_CALLS,),
        turn=("<｜Assistant｜>",),
        required=("<think>", "</think>"),
        text_markers=(_DSML_TOOL_CALLS,),
        prompt_start=True,
        thinking_default=True,
        thinking_switches=("thinking", "enable_thinking"),
        thinking_off_when=(("reasoning_effort", "none"),),
        start_source=(
            "documented: DeepSeek-V4 thinks by default; its prompt holds `</think>` when thinking "
            "is off"
        ),
        notes='also off with reasoning_effort "none"; <｜DSML｜tool_calls> (multi-token) ends '
        "reasoning",
    )
