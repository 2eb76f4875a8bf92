"""MiniMax M2, "append think" flavour: for clients that split the reasoning themselves.

Nothing is split: every token is content, and the content text is prefixed once with the
``<think>`` that the template put into the prompt, so the client sees the model's whole
output as written (``<think>`` reasoning ``</think>`` answer). The prefix is a text-only
Trim, so token labels and usage stay honest (no reasoning tokens).

Tool calls are M2's (:data:`.minimax.MINIMAX_M2_TOOL_CALLS`): MiniMax's deployment guide
serves M2 with this reasoning parser and the ``minimax_m2`` tool parser, which reads the
calls out of the content.
"""

from __future__ import annotations

from ..runtime.parser import ReasoningParser
from ..runtime.registry import register
from ..runtime.spec import ReasoningSpec, Trim
from .minimax import MINIMAX_M2_TOOL_CALLS


@register
class MiniMaxM2AppendThinkParser(ReasoningParser):
    spec = ReasoningSpec(
        name="minimax_m2_append_think",
        thinking_default=False,
        content_trim=Trim(prefix="<think>"),
        tool_calls=MINIMAX_M2_TOOL_CALLS,
        start_source="template: as minimax_m2; thinking is reported as content by design",
        notes="everything is content, prefixed with <think>",
    )
