"""AI21 Jamba 1.5 / 1.6 / 1.7 (instruct): no reasoning, served for their tool calls.

No thinking block: every token is the answer (``turn`` is ``<|bom|>``, which begins every
message of the template, ``<|bom|><|assistant|>`` the assistant's, for the prompt scan).

Tool calls (facts: AI21's Jamba 1.5 model card, "Tool use with Jamba": the model writes
its calls "as a list of json-formatted dictionaries, wrapped in dedicated special
token[s]", ``<tool_calls>[{"name": …, "arguments": {…}}, …]</tool_calls>``, after any
content of its own; vLLM's ``jamba`` parser, which refuses a vocabulary without both
tokens, and its tests on ``ai21labs/Jamba-tiny-dev``; SGLang has no parser for it): one
region from ``<tool_calls>`` to ``</tool_calls>`` holds every call of the turn as one JSON
list (kind ``json``).

Text: the model begins its turn with a space after ``<|assistant|>`` (vLLM's test outputs
begin `` <tool_calls>``, and its parser returns no content for that lone space), so the
whitespace between the text and the block is layout and is trimmed (``trim_gaps``); the
text before the block stays content.
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

TOOL_CALLS_OPEN = "<tool_calls>"
TOOL_CALLS_CLOSE = "</tool_calls>"

JAMBA_TOOL_CALLS = ToolFormat(
    kinds=("json",),
    open=(TOOL_CALLS_OPEN,),
    close=(TOOL_CALLS_CLOSE,),
    json_strings=True,
    source="AI21's Jamba 1.5 model card (Tool use with Jamba): "
    '`<tool_calls>[{"name": …, "arguments": {…}}, …]</tool_calls>`, both special tokens; '
    "vLLM's `jamba` parser and its tests (ai21labs/Jamba-tiny-dev)",
)


@register
class JambaParser(ReasoningParser):
    """Jamba: no reasoning; a JSON list of calls in ``<tool_calls>`` (module doc)."""

    spec = ReasoningSpec(
        name="jamba",
        aliases=("jamba_1_5", "jamba_1_6", "jamba_1_7"),
        turn=("<|bom|>",),
        prompt_start=False,
        thinking_default=False,
        tool_calls=JAMBA_TOOL_CALLS,
        start_source="template: Jamba 1.5's chat template ends with "
        "`<|bom|><|assistant|>` and has no thinking block",
        notes="no reasoning (all content); tool calls as one JSON list between "
        "<tool_calls> and </tool_calls>",
    )
    hint = DetectionHint(model_types=("jamba",))
