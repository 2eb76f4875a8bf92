"""Inkling (Thinking Machines): typed content blocks, every marker a special token.

A model message is ``<|message_model|>``, an optional header (a tool name), a block kind,
the block, and ``<|end_message|>`` (or ``<|content_model_end_sampling|>`` when sampling
stops). A ``<|content_thinking|>`` block is reasoning; its close consumes the closer. Blocks
repeat in any order, so a thinking block may follow a closed one: a start after content
re-enters reasoning. Nothing is prefilled, but a prompt that ends inside an open thinking
block (``…<|message_model|><|content_thinking|>``) seeds the turn in reasoning; the scan
stops at the last ``<|message_model|>``.

Blocks that render as visible output or call a tool (``<|content_text|>``,
``<|content_invoke_tool_json|>``, ``<|content_invoke_tool_text|>``) end reasoning if one is
still open and stay in content, together with the framing tokens, for the tool parser.
An ``<|end_message|>`` that closes such a block is content for the same reason.
"""

from __future__ import annotations

from ..runtime.parser import ReasoningParser
from ..runtime.registry import register
from ..runtime.spec import ReasoningSpec

CONTENT_THINKING = "<|content_thinking|>"
END_MESSAGE = "<|end_message|>"
END_SAMPLING = "<|content_model_end_sampling|>"


@register
class InklingParser(ReasoningParser):
    spec = ReasoningSpec(
        name="inkling",
        start=(CONTENT_THINKING,),
        end=(END_MESSAGE, END_SAMPLING),
        tool=("<|content_invoke_tool_json|>", "<|content_invoke_tool_text|>", "<|content_text|>"),
        turn=("<|message_model|>",),
        required=(CONTENT_THINKING, END_MESSAGE),
        prompt_start=False,
        start_in_content="enter",
        start_source=(
            "documented: Inkling's model message opens its own `<|content_thinking|>` block"
        ),
        notes="a thinking block may follow a closed one; text and tool blocks end reasoning",
    )
