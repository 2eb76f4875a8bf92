"""InternLM2 / InternLM2.5 chat: no reasoning, served for their plugin (tool) calls.

No thinking block: every token is the answer (``turn`` is the ChatML header that starts
an assistant turn, for the prompt scan).

Tool calls (facts: InternLM's ``chat/chat_format.md``, github.com/InternLM/InternLM, which
lists the special tokens and shows a whole function-call turn; vLLM's
``tool_chat_template_internlm2_tool.jinja`` and ``internlm2`` parser; SGLang's
``InternlmDetector``, its ``interns1`` parser): after any text of its own, the model writes
``<|action_start|><|plugin|>`` (two special tokens: an action, addressed to a plugin, i.e.
a regular tool), a newline, one JSON object ``{"name": …, "parameters": {…}}`` (vLLM's
template writes ``arguments``; both engines read either), and ``<|action_end|>``. One call
per action; several actions in a turn are several calls (SGLang reads each). The region
opens at the two-token marker (matched on bytes) and closes at ``<|action_end|>``; the
body is kind ``json``. ``<|action_start|><|interpreter|>`` (a code-interpreter action,
Python in a Markdown fence) is not a function call: both engines leave it in the text,
and so does this family.

The template writes the assistant's text and the action back to back, so whitespace
before ``<|action_start|>`` is the model's own and stays in the content (vLLM returns the
text before the action as written).
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

ACTION_START = "<|action_start|>"
PLUGIN = "<|plugin|>"
ACTION_END = "<|action_end|>"

INTERNLM2_TOOL_CALLS = ToolFormat(
    kinds=("json",),
    open=(ACTION_START + PLUGIN,),
    close=(ACTION_END,),
    json_strings=True,
    trim_gaps=False,
    source="InternLM's chat_format.md (InternLM2-Chat): "
    '`<|action_start|><|plugin|>\\n{"name": …, "parameters": {…}}<|action_end|>`; '
    "vLLM's tool_chat_template_internlm2_tool.jinja and `internlm2` parser, SGLang's "
    "`InternlmDetector` (`parameters` or `arguments`, one call per action)",
)


@register
class Internlm2Parser(ReasoningParser):
    """InternLM2: no reasoning; plugin calls in ``<|action_start|><|plugin|>`` (module doc)."""

    spec = ReasoningSpec(
        name="internlm2",
        aliases=("internlm2_5",),
        turn=("<|im_start|>",),
        prompt_start=False,
        thinking_default=False,
        tool_calls=INTERNLM2_TOOL_CALLS,
        start_source="template: InternLM2's chat template ends with "
        "`<|im_start|>assistant\\n` and has no thinking block",
        notes="no reasoning (all content); tool calls as one JSON object between "
        "<|action_start|><|plugin|> and <|action_end|>",
    )
    hint = DetectionHint(model_types=("internlm2",), tokens=(ACTION_START, PLUGIN))
