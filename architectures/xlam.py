"""Salesforce xLAM-2 (``-fc-r``): no reasoning, served for its tool calls.

The xLAM-2 checkpoints are Llama 3.1 / 3.2 (8B, 70B) and Qwen2.5 (1B, 3B, 32B) fine-tunes
on their base's chat format; neither thinks, so every token is the answer (``turn`` is
either base's assistant header, for the prompt scan).

Tool calls (facts: xLAM-2's chat templates as vLLM ships them,
``tool_chat_template_xlam_llama.jinja`` / ``_qwen.jinja``, whose system prompt asks for
"calls in a single JSON array" ``[{"name": …, "arguments": {…}}, …]`` and which write an
assistant's calls as exactly that list, alone in its turn; vLLM's ``xlam`` parser and its
tests; SGLang has no parser for it): the answer is a bare JSON list, so a region opens
where the answer's first non-space character is ``[`` and runs to the end of the output
(``close_optional``; a list the end cut does not read and is given back as content). A
bare answer cannot be told from a call until it ends (``[1] Smith et al.`` begins as a
list), so such a region is held to the end of the output, as Llama 4's is. vLLM's parser
also finds the list after text, in forms the model may drift into, and so does this
family: fenced (```` ```json ```` … ```` ``` ````), in ``<tool_call>`` … ``</tool_call>``,
or after ``[TOOL_CALLS]`` (to the end of the output or a close marker; prose after the
list stays content). Kind ``xlam``: each call needs ``name`` and ``arguments`` (vLLM's rule), so a
JSON answer that only looks like a list of calls stays content.

Not followed: a fence without the ``json`` tag (vLLM reads one whose body is JSON; here
every code block would be held until it closed), and a list right after ``</think>``
(vLLM's parser reads it; xLAM-2 has no thinking block, and ``<think>`` text stays
content).
"""

from __future__ import annotations

from reasonspan.runtime.core.spec import ReasoningSpec
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.toolcalls import ToolFormat

FENCE_OPEN = "```json"
FENCE_CLOSE = ("```", "```\n")
"""The fence's close: one token where the tokenizer writes it alone, split in two when a
newline follows it (Qwen2.5 writes two backticks, then a backtick and the newline), so
that form is declared too, to be matched on bytes."""

XLAM_TOOL_CALLS = ToolFormat(
    kinds=("xlam",),
    open=(FENCE_OPEN, "<tool_call>", "[TOOL_CALLS]"),
    close=(*FENCE_CLOSE, "</tool_call>"),
    close_optional=True,
    leading="[",
    json_strings=True,
    source="xLAM-2's chat templates (vLLM's tool_chat_template_xlam_llama.jinja and "
    '_qwen.jinja): one JSON list `[{"name": …, "arguments": {…}}, …]`, alone in the turn; '
    "vLLM's `xlam` parser and its tests (also ```json fences, <tool_call> tags and "
    "[TOOL_CALLS] after text; name and arguments required)",
)


@register
class XlamParser(ReasoningParser):
    """xLAM-2: no reasoning; a bare JSON list of calls (module doc). No detection hint:
    its models' config.json names their base's model type (``llama``, ``qwen2``)."""

    spec = ReasoningSpec(
        name="xlam",
        aliases=("xlam2", "xlam_2"),
        turn=("<|im_start|>", "<|start_header_id|>"),
        prompt_start=False,
        thinking_default=False,
        tool_calls=XLAM_TOOL_CALLS,
        start_source="template: xLAM-2's templates end with the base's assistant header "
        "(`<|im_start|>assistant\\n`, `<|start_header_id|>assistant<|end_header_id|>\\n\\n`) "
        "and have no thinking block",
        notes="no reasoning (all content); tool calls as a bare JSON list, or fenced, in "
        "<tool_call> or after [TOOL_CALLS]",
    )
