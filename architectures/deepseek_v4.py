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

import msgspec

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

_DSML_TOOL_CALLS = "<｜DSML｜tool_calls>"
_DSML_SPACED_CALLS = "<｜DSML｜ calls>"

DEEPSEEK_V4_TOOL_CALLS = ToolFormat(
    kinds=("dsml",),
    open=(_DSML_TOOL_CALLS,),
    close=("</｜DSML｜tool_calls>",),
    call_close=("</｜DSML｜invoke>",),
    source="DeepSeek-V4's encoder (encoding_dsv4.py: tool_calls_template, "
    "encode_arguments_to_dsml, parse_tool_calls) writes a `<｜DSML｜tool_calls>` block of "
    "`<｜DSML｜invoke>` elements",
)

DEEPSEEK_V41_TOOL_CALLS = ToolFormat(
    kinds=("dsml",),
    open=(_DSML_SPACED_CALLS,),
    close=("</｜DSML｜ calls>",),
    call_close=("</｜DSML｜ invoke>",),
    source="DeepSeek-V4.1's encoder (as the CanIToolCall corpus renders it) writes a spaced "
    "`<｜DSML｜ calls>` block of `<｜DSML｜ invoke>` elements",
)


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
        tool_calls=DEEPSEEK_V4_TOOL_CALLS,
        notes='also off with reasoning_effort "none"; <｜DSML｜tool_calls> (multi-token) ends '
        "reasoning",
    )
    hint = DetectionHint(
        model_types=("deepseek_v4",), tokens=("<｜latest_reminder｜>",), needs_evidence=True
    )


@register
class DeepSeekV41Parser(ReasoningParser):
    """DeepSeek V4.1: V4's reasoning, its calls in the spaced DSML block (module doc)."""

    spec = msgspec.structs.replace(
        DeepSeekV4Parser.spec,
        name="deepseek_v41",
        aliases=("deepseek_v4_1",),
        tool=(_DSML_SPACED_CALLS,),
        text_markers=(_DSML_SPACED_CALLS,),
        tool_calls=DEEPSEEK_V41_TOOL_CALLS,
        start_source=(
            "documented: DeepSeek-V4.1 thinks by default (the turn opens "
            "`<｜Assistant｜><think>` when thinking, `</think>` in chat mode)"
        ),
        notes='also off with reasoning_effort "none"; the spaced <｜DSML｜ calls> block '
        "(multi-token) ends reasoning",
    )
    # V4.1 has V4's vocabulary; only its DSML spelling differs, which a vocabulary cannot show.
    hint = DetectionHint(needs_evidence=True)
