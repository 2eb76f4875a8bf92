"""MiniMax M2, "append think" flavour: for clients that split the reasoning themselves.

Nothing is split: every token is content, and the content text is prefixed once with the
``<think>`` that the template put into the prompt, so the client sees the model's whole
output as written (``<think>`` reasoning ``</think>`` answer). The prefix is a text-only
Trim, so token labels and usage stay honest (no reasoning tokens).

Tool calls are M2's (:data:`.minimax.MINIMAX_M2_TOOL_CALLS`): MiniMax's deployment guide
serves M2 with this reasoning parser and the ``minimax_m2`` tool parser, which reads the
calls out of the content.

The prefix is unconditional, as in the reference: vLLM's ``minimax_m2_append_think``
parser returns ``"<think>" + model_output`` from ``extract_reasoning`` (so an empty output
reads as content ``<think>``) and prepends it to the first streamed delta. A client of
this flavour rebuilds the model's text as the template wrote it (the prompt ended with
``<think>\n``), so an empty answer still shows the opened block it got, and streaming and
``parse()`` agree on it (``Trim.prefix_always``: the prefix comes with the first text, or
alone at the end of an output that had none).
"""

from __future__ import annotations

from reasonspan.architectures.minimax import MINIMAX_M2_TOOL_CALLS
from reasonspan.runtime.core.spec import ReasoningSpec, Trim
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register


@register
class MiniMaxM2AppendThinkParser(ReasoningParser):
    spec = ReasoningSpec(
        name="minimax_m2_append_think",
        thinking_default=False,
        content_trim=Trim(prefix="<think>", prefix_always=True),
        tool_calls=MINIMAX_M2_TOOL_CALLS,
        start_source="template: as minimax_m2; thinking is reported as content by design",
        notes="everything is content, prefixed with <think>",
    )
