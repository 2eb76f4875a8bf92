"""Inkling (Thinking Machines): typed content blocks, every marker a special token.

A model message is ``<|message_model|>``, an optional header (a tool name), a block kind,
the block, and ``<|end_message|>`` (or ``<|content_model_end_sampling|>`` when sampling
stops). A ``<|content_thinking|>`` block is reasoning; its close consumes the closer. Blocks
repeat in any order, so a thinking block may follow a closed one: a start after content
re-enters reasoning. Nothing is prefilled, but a prompt that ends inside an open thinking
block (``…<|message_model|><|content_thinking|>``) seeds the turn in reasoning; the scan
stops at the last ``<|message_model|>``.

The framing tokens are structure, never content text: ``<|content_text|>`` (a visible
text block) ends reasoning if one is open and is consumed; ``<|end_message|>`` and
``<|content_model_end_sampling|>`` after content are consumed; a ``<|message_model|>`` the
model writes to open its next message is consumed (``turn_in_output``). Tool-call blocks
(``<|content_invoke_tool_json|>``, ``<|content_invoke_tool_text|>``) end reasoning and their
opener stays in content for the tool parser (labelled TOOL), as other families' tool
markers do.

Tool calls (:data:`INKLING_TOOL_CALLS`, kind ``inkling``): a ``<|content_invoke_tool_json|>``
block holds one JSON object ``{"name": NAME, "args": {…}}`` and ends at ``<|end_message|>``
or ``<|content_model_end_sampling|>`` (vLLM's Inkling parser engine and its tests, SGLang's
``InklingDetector``). Both closers are framing tokens this spec consumes
(``end_in_content="drop"``); the shared extractor closes an open region on a close marker
the reasoning machine consumed, unless it sits in a JSON string argument. Two engine
behaviours are not followed yet: the header between ``<|message_model|>`` and the block
(the tool's name) is metadata the engines drop, here it is content text;
``<|content_invoke_tool_text|>`` is visible text in vLLM and a ``{"text": …}`` call in
SGLang, here content.
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.toolcalls import ToolFormat

CONTENT_THINKING = "<|content_thinking|>"
END_MESSAGE = "<|end_message|>"
END_SAMPLING = "<|content_model_end_sampling|>"
CONTENT_TEXT = "<|content_text|>"
INVOKE_TOOL_JSON = "<|content_invoke_tool_json|>"

INKLING_TOOL_CALLS = ToolFormat(
    kinds=("inkling",),
    open=(INVOKE_TOOL_JSON,),
    close=(END_MESSAGE, END_SAMPLING),
    json_strings=True,
    source="vLLM's Inkling parser (parser engine config and tests) and SGLang's InklingDetector: "
    '`<|message_model|>NAME<|content_invoke_tool_json|>{"name": NAME, "args": {…}}'
    "<|end_message|>`, or `<|content_model_end_sampling|>` when sampling stops",
)


@register
class InklingParser(ReasoningParser):
    spec = ReasoningSpec(
        name="inkling",
        start=(CONTENT_THINKING,),
        # END_MESSAGE first: it is the marker budgets force.
        end=(END_MESSAGE, END_SAMPLING, CONTENT_TEXT),
        tool=(INVOKE_TOOL_JSON, "<|content_invoke_tool_text|>"),
        turn=("<|message_model|>",),
        required=(CONTENT_THINKING, END_MESSAGE),
        prompt_start=False,
        start_in_content="enter",
        end_in_content="drop",
        turn_in_output="drop",
        tool_calls=INKLING_TOOL_CALLS,
        start_source=(
            "documented: Inkling's model message opens its own `<|content_thinking|>` block"
        ),
        notes="a thinking block may follow a closed one; text and tool blocks end reasoning; "
        "message framing tokens are consumed, never content text",
    )
